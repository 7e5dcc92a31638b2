"""Durable sessions and ledgers benchmark: what saving a session costs the app, on SQLite.

Targets (issue 21): saving a changed design after a run under 20 ms; storing a ledger entry with a
public form under 20 ms; a data-dependent entry on 1,000,000 records under 1 s; a 200 MB upload
stored (hashed and written once) under 3 s; reading back a 50-entry ledger under 1 s; the
retention rule over 1,000 stored tables under 1 s.
Run: .venv/bin/python benchmarks/bench_durable.py [--repeat N] [--upload-mb MB]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, row, timed  # noqa: E402

from prdp_core.board.ledgers import data_fingerprint, pack_entry  # noqa: E402
from prdp_core.board.sessions import Retention, SessionStore, new_key  # noqa: E402
from prdp_core.board.store import BoardStore  # noqa: E402
from prdp_core.core.accounting import LedgerEntry, RecordLoss  # noqa: E402
from prdp_core.review.report import load_config, run_study  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--upload-mb", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(BoardStore(f"sqlite:///{tmp}/board.sqlite"), Path(tmp) / "uploads",
                             Retention(max_bytes=10**12))
        key = new_key()
        run = run_study(load_config(ROOT / "examples" / "cbp_unit_splitting.yaml"))
        config = run.study.to_dict()
        source = {"kind": "sample", "name": "cbp_like", "n": None, "seed": 0}
        seed = [0]

        def save():
            seed[0] += 1
            store.save(key, source=source, config={**config, "seed": seed[0]})  # a changed design

        t_save, b_save, _ = timed(save, repeat=args.repeat * 4)
        t_touch, b_touch, _ = timed(lambda: store.touch(key), repeat=args.repeat * 4)
        lid = store.ledger_id(key)
        fp = data_fingerprint({"sample": "cbp_like"})
        public = run.ledger.entries[0]
        t_pub, b_pub, _ = timed(lambda: store.ledgers.append(lid, [(uuid.uuid4().hex, public)], fingerprint=fp),
                                repeat=args.repeat * 4)
        rng = np.random.default_rng(0)
        rec = LedgerEntry("PrDP framework", "prdp.framework",
                          RecordLoss(rng.choice([0.01, 0.02, 0.04, 0.08], 1_000_000), "eps", bound=0.08))
        packed_mb = len(pack_entry(rec)) / 1e6
        t_rec, b_rec, _ = timed(lambda: store.ledgers.append(lid, [(uuid.uuid4().hex, rec)], fingerprint=fp),
                                repeat=args.repeat)
        rec_lid = store.ledgers.create()
        for _ in range(2):
            store.ledgers.append(rec_lid, [(uuid.uuid4().hex, rec)], fingerprint=fp)
        lid50 = store.ledgers.create()
        store.ledgers.append(lid50, [(uuid.uuid4().hex, public) for _ in range(50)], fingerprint=fp)
        t_read50, b_read50, entries = timed(lambda: store.ledgers.entries(lid50), repeat=args.repeat)
        n_read = len(entries)
        t_read_rec, b_read_rec, _ = timed(lambda: store.ledgers.entries(rec_lid), repeat=args.repeat)

        blob = Path(tmp) / "upload.csv"
        with open(blob, "wb") as fh:
            for _ in range(args.upload_mb):
                fh.write(rng.integers(48, 58, 1 << 20, dtype=np.uint8).tobytes())

        def upload():
            with open(blob, "rb") as fh:
                return store.put_upload(fh, "upload.csv")

        t_up_first, _, _ = timed(upload, repeat=1, warmup=0)
        t_up_again, b_up_again, _ = timed(upload, repeat=args.repeat, warmup=0)
        import time

        with store.store.engine.begin() as conn:  # 1,000 tables used in the last days: scanned, none due
            from prdp_core.board.sessions import uploads

            now = time.time()
            conn.execute(uploads.insert(), [{"sha256": f"{i:064x}", "filename": "t.csv", "size": 1000,
                                             "created_at": now, "used_at": now - 60.0 * i} for i in range(1000)])
        t_ret, b_ret, _ = timed(store.apply_retention, repeat=args.repeat)
    print(f"Machine: {machine()}")
    print(f"Input: SQLite store in a temporary folder; the cbp_unit_splitting example's config and ledger entry; "
          f"a 1,000,000-record data-dependent entry ({packed_mb:.1f} MB stored); a {args.upload_mb} MB upload")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    print(row("save a changed design (source + config)", t_save, b_save, "after a run; target < 20 ms"))
    print(row("mark the session alive (touch)", t_touch, b_touch, "every 10 min at most"))
    print(row("append a public-form entry (unit splitting)", t_pub, b_pub, "per release; target < 20 ms"))
    print(row("append a data-dependent entry, 1,000,000 records", t_rec, b_rec,
              f"{packed_mb:.1f} MB packed; target < 1 s"))
    print(row(f"read back a ledger of {n_read} public-form entries", t_read50, b_read50, "restore; target < 1 s"))
    print(row("read back 2 data-dependent entries of 1,000,000 records", t_read_rec, b_read_rec, "restore"))
    print(row(f"store a {args.upload_mb} MB upload (new)", t_up_first, t_up_first, "hash + write once; target < 3 s"))
    print(row(f"store the same {args.upload_mb} MB upload again", t_up_again, b_up_again, "hash only"))
    print(row("retention rule over 1,000 stored tables", t_ret, b_ret, "target < 1 s"))


if __name__ == "__main__":
    main()
