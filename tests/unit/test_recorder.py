"""One recorder: noise on confidential data is drawn only inside a recorded release, which is in the ledger
before it is returned; the report and its outputs render recorded releases and draw nothing."""

from __future__ import annotations

import pytest

from prdp_core.core.accounting import Ledger
from prdp_core.core.errors import ParameterError
from prdp_core.core.recorder import Recorder, recording
from prdp_core.review import report as R
from prdp_core.study.config import parse_config

from ..samplers import watch
from .test_cli import ALL_KINDS, ROOT, cli


def test_a_release_is_in_the_ledger_before_it_is_returned_and_a_refusal_records_nothing():
    from prdp_core.core.accounting import FlatLoss, LedgerEntry

    led = Ledger()
    rec = Recorder(led)
    entry = LedgerEntry("count", "*", FlatLoss(0.5))
    seen: list[object] = []

    def make() -> LedgerEntry:
        seen.append(recording())
        return entry

    assert rec.release(make, label="count") is entry and led.entries == [entry]
    assert seen == [(rec, "count")] and recording() is None

    def refuse() -> None:
        raise ParameterError("no")

    with pytest.raises(ParameterError):
        rec.release(refuse)
    assert led.entries == [entry] and recording() is None


@pytest.mark.parametrize("secure", [False, True])
def test_every_draw_of_a_study_run_is_inside_a_recorded_release_and_the_report_draws_none(monkeypatch, secure):
    text = ALL_KINDS
    if secure:  # every mechanism secure (unseeded); pe's own seed dropped
        text = text.replace(", seed: 77}", "}").replace("  - {kind: unit_splitting}",
                                                         "  - {kind: unit_splitting, secure: true}")
        text = text.replace("  - {kind: prdp, query: count}", "  - {kind: prdp, query: count, secure: true}")
    draws = watch(monkeypatch)
    run = R.run_study(parse_config(text))
    assert draws.count > 0 and not draws.outside, draws.outside
    assert draws.ledgers == {id(run.ledger)}
    assert len(run.ledger) == sum(len(rel.entries) for _, _, rel in run.releases)
    seen = draws.count
    R.render_html(run)
    R.results_frame(run.releases, teaching=run.teaching)
    R.budget_table(run)
    assert draws.count == seen  # outputs render the recorded releases


def test_prdp_run_draws_only_inside_recorded_releases(monkeypatch, tmp_path):
    cfg = tmp_path / "study.yaml"
    cfg.write_text(ALL_KINDS)
    draws = watch(monkeypatch)
    code, _, err = cli("run", str(cfg), "--out", str(tmp_path / "o"), "-q")
    assert code == 0, err
    assert draws.count > 0 and not draws.outside, draws.outside
    assert len(draws.ledgers) == 1  # one run, one ledger: every mechanism released once


@pytest.mark.parametrize("secure", [False, True])
def test_the_watch_sees_a_release_made_outside_a_recorder(monkeypatch, secure):
    """The wrapped samplers catch noise drawn by a mechanism called directly (so the tests above can fail)."""
    from prdp_core.mechanisms.unit_splitting import release

    study = parse_config(ALL_KINDS)
    ds = R.load_data(study)
    draws = watch(monkeypatch)
    how = {"secure": True} if secure else {"seed": 3}
    release(ds, study.validate_policy(ds), reveal=True, **how)
    assert draws.outside and draws.outside[0].split(" ")[0].startswith("SecureSampler" if secure else "Generator")


def test_prdp_run_says_how_its_recorded_releases_were_made(tmp_path):
    """A secure study's summary line names no seed; a seeded one names the seeds its releases used."""
    base = (ROOT / "examples" / "cbp_unit_splitting.yaml").read_text().replace("n: 20000", "n: 3000")
    cfg = tmp_path / "s.yaml"
    cfg.write_text(base.replace("    partition_delta: 1.0e-6", "    partition_delta: 1.0e-6\n    secure: true"))
    code, out, err = cli("run", str(cfg), "--out", str(tmp_path / "o"), "-q")
    assert code == 0, err
    assert "1 secure (unseeded)" in out and "seed" not in out.replace("unseeded", "")
    cfg.write_text(base)
    code, out, err = cli("run", str(cfg), "--out", str(tmp_path / "p"), "-q")
    assert code == 0, err
    seed = parse_config(base).mechanism_seed(0)
    assert f"seed {seed})" in out and "secure" not in out


# ---------------------------------------------------------------------------
# Teaching simulations
# ---------------------------------------------------------------------------


def test_a_simulation_is_refused_in_review_mode_before_anything_runs():
    from prdp_core.core.errors import AccessError, SimulationRefused
    from prdp_core.core.recorder import simulating, simulation

    ran = []
    with pytest.raises(SimulationRefused, match="review mode") as err:
        with simulation("Compare mechanisms", teaching=False):
            ran.append(1)
    assert not ran and simulating() is None
    assert isinstance(err.value, AccessError) and "Compare mechanisms" in str(err.value)
    assert "teaching mode" in (err.value.hint or "")


def test_simulations_nest_and_end_with_their_block_also_on_an_error():
    from prdp_core.core.recorder import simulating, simulation

    with simulation("outer", teaching=True):
        assert simulating() == "outer"
        with simulation("inner", teaching=True):
            assert simulating() == "inner"
        assert simulating() == "outer"
        with pytest.raises(ParameterError):
            with simulation("failing", teaching=True):
                raise ParameterError("no")
        assert simulating() == "outer"
    assert simulating() is None
    with pytest.raises(ParameterError):
        with simulation("failing", teaching=True):
            Recorder().release(lambda: (_ for _ in ()).throw(ParameterError("no")))
    assert simulating() is None and recording() is None


def test_the_watch_counts_draws_in_a_simulation_apart_from_releases_and_draws_outside(monkeypatch):
    from prdp_core.core.noise_source import Noise
    from prdp_core.core.recorder import simulation

    draws = watch(monkeypatch)
    with simulation("estimate", teaching=True):
        Noise.teaching(1).rng.laplace()
        Recorder().release(lambda: Noise.teaching(2).rng.normal())  # a simulation's own throwaway run
    assert (draws.simulations, draws.simulated, draws.outside, draws.ledgers) == (2, {"estimate"}, [], set())
    rec = Recorder()
    rec.release(lambda: Noise.teaching(3).rng.normal())
    Noise.teaching(4).rng.normal()
    assert draws.simulations == 2 and draws.ledgers == {id(rec.ledger)} and len(draws.outside) == 1


#: ``prdp suggest thresholds`` needs one row of thresholds: the unit-splitting example, on fewer records.
SPLITTING = (ROOT / "examples" / "cbp_unit_splitting.yaml").read_text().replace("n: 20000", "n: 3000")


@pytest.mark.parametrize("mode", ["teaching", "review"])
def test_the_cli_draws_in_recorded_releases_and_simulates_in_teaching_mode_only(monkeypatch, tmp_path, mode):
    """``prdp run`` (an example study), ``prdp board submit`` of every policy part and ``prdp suggest thresholds``
    with every sampler wrapped: every draw in a recorded release, or (a teaching study) in the board's simulation."""
    from prdp_core.board import summary as S
    from prdp_core.board.store import BoardStore
    from prdp_core.board.workshop import board_url

    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path / "w"))
    monkeypatch.delenv("PRDP_BOARD_URL", raising=False)
    split, every = tmp_path / "split.yaml", tmp_path / "every.yaml"
    split.write_text(SPLITTING.replace("mode: review", f"mode: {mode}"))
    every.write_text(ALL_KINDS.replace("mode: teaching", f"mode: {mode}"))
    draws = watch(monkeypatch)
    code, _, err = cli("run", str(split), "--out", str(tmp_path / "o"), "-q")
    assert code == 0, err
    for part in S.PARTS:
        code, _, err = cli("board", "submit", str(every), "--name", part, "--policy", part)
        assert code == 0, err
        assert ("no error figures" in err) == (mode == "review")
    code, _, err = cli("suggest", "thresholds", str(split), "--range", "EMP=1:1e5", "--epsilon", "0.2",
                       "--out", str(tmp_path / "private.yaml"))
    assert code == 0, err
    assert draws.count > 0 and not draws.outside, "\n".join(draws.outside)
    assert len(draws.ledgers) == 2  # prdp run's ledger and the suggestion's
    errors = [e.summary["records"]["median_rel_error"] for e in BoardStore(board_url()).entries()]
    assert len(errors) == len(S.PARTS)
    if mode == "teaching":
        assert draws.simulated == {"the board's error estimate"} and all(v is not None for v in errors)
    else:
        assert draws.simulations == 0 and errors == [None] * len(S.PARTS)
