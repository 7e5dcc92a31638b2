"""What the board and ledger commands print: ``prdp board list``'s table, ``prdp ledger show``'s ledger and the
line ``prdp run --ledger`` adds (each made through :func:`prdp_core.review.review_boundary.produce`)."""

from __future__ import annotations

import json
import math
from typing import Any

from ..io.terminal import json_text


def list_text(entries: list[Any], *, review: bool, delta: float, fmt: str = "table", where: str = "") -> str:
    """What ``prdp board list`` prints (``fmt``: ``table`` or ``json``); review mode: public columns only."""
    from .summary import board_frame

    frame = board_frame(entries, review=review, delta=delta)
    if fmt == "json":
        return json_text(json.loads(frame.to_json(orient="records"))) + "\n"
    if frame.empty:
        return f"The board on {where} has no entries.\n"
    cols = ["#", "name", "kind", "base loss", "ε at δ, base"]
    cols += [] if review else ["p99 record loss", "ε at δ, p99 record", "median rel. error"]
    cols += ["submitted"]
    return (frame[cols].to_string(index=False, max_colwidth=40, float_format=lambda v: f"{v:.4g}") + "\n"
            + f"({len(frame)} polic{'y' if len(frame) == 1 else 'ies'}, {'review' if review else 'teaching'} mode, "
            f"δ = {delta:g}; prdp board list --format csv for every column)\n")


def run_ledger_line(led: Any, *, teaching: bool) -> str:
    """The line ``prdp run --ledger`` adds: what the run added to the named ledger ``led`` (a
    :class:`~.ledgers.NamedLedger`) and, in teaching mode, the largest per-record total so far."""
    last = led.entries[-1] if led.entries else None
    entries = f"{led.added} entr{'y' if led.added == 1 else 'ies'}"
    text = f"ledger '{led.name}' on {led.where}: {entries} added, {len(led.entries)} in all"
    if teaching and last is not None and last.total_rho is not None:
        text += f"; largest per-record total so far ρ = {last.total_rho:.6g}"
        if last.total_eps is not None:
            text += f" (ε = {last.total_eps:.6g})"
    return text + f" (prdp ledger show {led.name})"


def ledger_frame(entries: list[Any], *, review: bool) -> Any:
    """A stored ledger as a table: one row per release with its public form and, unless ``review``, the
    statistics of the records kept when it was appended (never a per-record value)."""
    import datetime as dt

    import pandas as pd

    from ..core.loss_profile import MEASURE_SYMBOL
    from ..core.secure import mode_label
    from .ledgers import describe_data

    rows = []
    for s in entries:
        e = s.entry
        when = dt.datetime.fromtimestamp(s.created_at).strftime("%Y-%m-%d %H:%M")
        row: dict[str, Any] = {"#": s.seq, "recorded": when,
                               "release": e.label, "mechanism": e.mechanism, "measure": MEASURE_SYMBOL[e.measure],
                               "neighbours": e.neighbours.name, "mode": mode_label(e.secure), "seed": e.seed,
                               "worst case": e.loss.supremum(), "data": describe_data(s.fingerprint), "by": s.origin}
        if not review:
            row.update({"largest record loss": s.largest, "largest record total (ρ)": s.total_rho,
                        "largest record total (ε)": s.total_eps})
        rows.append({k: math.nan if v is None and k in _NUMBERS else v for k, v in row.items()})
    return pd.DataFrame(rows)


#: Numeric columns of :func:`ledger_frame` (a statistic not kept is NaN: "-" in tables, null in JSON).
_NUMBERS = ("worst case", "largest record loss", "largest record total (ρ)", "largest record total (ε)")


def _json_number(v: Any) -> Any:
    """JSON has no infinity: an unbounded loss is written "inf"."""
    return "inf" if isinstance(v, float) and math.isinf(v) else v


def ledger_show_text(led: Any, *, review: bool, fmt: str = "table") -> str:
    """What ``prdp ledger show`` prints of the named ledger ``led`` (a :class:`~.ledgers.NamedLedger`; ``fmt``:
    ``table`` or ``json``); review mode: public forms only."""
    entries = led.entries
    frame = ledger_frame(entries, review=review)
    last = entries[-1] if entries else None
    if fmt == "json":
        rows = [{k: None if isinstance(v, float) and math.isnan(v) else _json_number(v) for k, v in r.items()}
                for r in frame.to_dict(orient="records")]
        doc: dict[str, Any] = {"ledger": led.name, "data": led.data, "review": bool(review), "entries": rows,
                               "verified": True, "sealed by upgrade": led.seal.upgraded if led.seal else None}
        if not review:
            doc["largest record total (ρ)"] = None if last is None else _json_number(last.total_rho)
            doc["largest record total (ε)"] = None if last is None else _json_number(last.total_eps)
        return json_text(doc) + "\n"
    out = [f"Ledger '{led.name}' ({led.where}), data: {led.data}\n{_seal_line(led.seal, len(entries))}\n"]
    if frame.empty:
        return out[0] + "No release yet.\n"
    cols = ["#", "recorded", "release", "measure", "mode", "worst case"]
    cols += [] if review else ["largest record loss", "largest record total (ρ)", "largest record total (ε)"]
    out.append(frame[cols].to_string(index=False, max_colwidth=40, na_rep="-",
                                     float_format=lambda v: f"{v:.6g}") + "\n")
    if review:
        out.append(f"({len(frame)} release(s); review: statistics of the records left out)\n")
    elif last is not None and last.total_rho is not None:
        eps = "" if last.total_eps is None else f", ε = {last.total_eps:.6g}"
        out.append(f"Cumulative: the most exposed record has lost ρ = {last.total_rho:.6g}{eps} over "
                   f"{len(frame)} release(s) (sequential composition; confidential: a statistic of the records).\n")
        if math.isinf(last.total_rho):
            out.append("Unbounded: a release on other data counts at its worst case for every record, and that "
                       "worst case has no finite bound (a splitting policy's).\n")
    else:
        out.append(f"({len(frame)} release(s); no per-record total: the releases mix neighbour notions, or their "
                   "data is held by an engine, which does not evaluate records one by one)\n")
    return "".join(out)


def _seal_line(seal: Any, n: int) -> str:
    """What the check of a ledger's seal found (it passed: a changed ledger is refused before this is printed)."""
    import datetime as dt

    if seal is None:  # a ledger not read from a store (the review boundary's scan)
        return f"Not stored: {n} release(s), no seal."
    text = f"Seal verified: {n} release(s), none changed, removed or reordered in the store (key id {seal.key})"
    if seal.upgraded:
        when = dt.datetime.fromtimestamp(seal.upgraded_at or 0).strftime("%Y-%m-%d %H:%M")
        text += (f"; releases #1–#{seal.upgraded} were stored before ledgers were sealed and were sealed as found "
                 f"when the store was upgraded ({when})")
    return text + "."


__all__ = ["ledger_frame", "ledger_show_text", "list_text", "run_ledger_line"]
