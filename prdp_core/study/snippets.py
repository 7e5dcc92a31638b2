"""The app's "Reproduce in Python" snippets, written from a study config by one generator.

:func:`snippet` takes a :class:`~prdp_core.study.config.Study` (the app builds it from a page's state with the
Study page's builders) and the part a page shows — the data and its profile, the policy and its loss preview,
a unit-splitting run, a PrDP run, a personalized release, a multi-tier release, the histogram lab's granular
histograms or a trade-off sweep — and returns a short script made of the building blocks of
:func:`prdp_core.study.reproduction.reproduction_script`: the same data code, the same policy code and the same code
per mechanism, with each mechanism's seed. Run on the same data it computes the numbers the page shows.

User text (column names, group values, labels, filter values, file names, expressions) reaches a snippet only
as a Python literal (:func:`prdp_core.io.codegen.literal`), never in a comment, a docstring or an f-string.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.errors import ConfigError
from ..io.codegen import literal
from .config import Study
from .reproduction import _data_code, _engine_mode, import_lines, mechanism_code
from .runs.unit_splitting import policy_code

#: The parts a snippet can show, and the mechanism kind each reruns (None: no mechanism of the study).
PARTS: dict[str, str | None] = {"data": None, "policy": None, "run": "unit_splitting", "budget": "prdp",
                                "personalized": "personalized", "multitier": "multitier", "granular": None,
                                "tradeoffs": None}


def snippet(study: Study, part: str, *, data_file: str | None = None, data_dir: str | None = None,
            sample: tuple[int, int] | None = None, owner_method: str = "lemma4") -> str:
    """The "Reproduce in Python" code of ``part`` (a key of :data:`PARTS`) for ``study``.

    ``data_file`` is the path the snippet reads a file source from (default: the study's ``data.path``,
    relative to the working folder, or to ``data_dir``, the folder an engine reads it in and may not leave — the
    app's data folder); ``sample`` = (rows, seed) takes the page's uniform sample of a dataset
    held by an engine, in memory (a page whose mechanisms need the records); ``owner_method`` is the Policy
    designer's owner bound (``lemma4`` or ``lemma5``). A part needing a policy section or mechanism the study
    lacks raises :class:`~prdp_core.core.errors.ConfigError`."""
    if part not in PARTS:
        raise ConfigError(f"No snippet part {part!r}.", hint=f"Parts: {', '.join(PARTS)}.")
    kind = PARTS[part]
    if data_file is None and study.data.path is not None:
        data_file = study.data.path  # read from the working folder (or the URI Spark reads)
    index = _mechanism_index(study, kind) if kind else None
    lab = part == "granular"
    generated = lab and study.app.get("concepts", {}).get("hl_source", "generated") != "dataset"
    kinds = {kind} if kind else ({"unit_splitting"} if part in ("policy", "tradeoffs") else set())
    L = ["import numpy as np", "import pandas as pd", "from pathlib import Path", "", "import prdp_core"]
    L += import_lines(kinds | ({"granular"} if lab else set()))
    L += list(_EXTRA_IMPORTS.get(part, ()))
    on_engine = _engine_mode(study, data_file) and not generated
    if on_engine:
        L.append("import prdp_core.engines")
    L += ["", f"SEED = {int(study.seed)}  # a seeded run is for teaching and review only, never a real release",
          f"REVEAL = {study.mode == 'teaching'!r}  # teaching mode: true values are attached (confidential)"]
    if not generated:
        L += _data_code(study, data_file, argv=False, base_dir=data_dir)
    if sample is not None and on_engine:
        L.append(f"ds = ds.sample({int(sample[0])}, seed={int(sample[1])})  # a labelled uniform sample, in memory: "
                 "this page's mechanisms need the records")
        on_engine = False
    T = "ds" if on_engine else "ds.table"
    if index is not None:
        L += ["", "releases = []  # (label, Release)"]
        L += mechanism_code(study, index, study.mechanisms[index], table=T)
    L += ["", *_BODIES[part](study, T, owner_method)]
    return "\n".join(L) + "\n"


def _mechanism_index(study: Study, kind: str) -> int:
    for i, m in enumerate(study.mechanisms):
        if m["kind"] == kind:
            return i
    raise ConfigError(f"The study has no {kind} mechanism to reproduce.")


def _setting(study: Study, page: str, key: str, default: Any) -> Any:
    """A page's view setting carried in the study's ``app`` section (its default when absent)."""
    v = study.app.get(page, {}).get(key)
    return default if v is None else v


_EXTRA_IMPORTS: dict[str, tuple[str, ...]] = {
    "policy": ("from prdp_core.mechanisms.preview import preview_policy",),
    "tradeoffs": ("from prdp_core import analysis, budget_solver, sweeps",),
    "granular": ("from prdp_core import accounting, interpret",),
}


def _data_body(study: Study, T: str, owner_method: str) -> list[str]:
    return ["profile = prdp_core.data.profile.profile_dataset(ds)", "print(profile.table())"]


def _policy_body(study: Study, T: str, owner_method: str) -> list[str]:
    return [*policy_code(study, T),
            "print(policy.describe())",
            f"preview = preview_policy(ds, policy, owner_method={literal(owner_method)})",
            "print(preview.summary())  # confidential: describes real records",
            "x, share = preview.records.ecdf()  # the policy-loss CDF"]


def _run_body(study: Study, T: str, owner_method: str) -> list[str]:
    out = ["print(rel.answers.head())  # in teaching mode with the true values and errors",
           "review = rel.for_review()  # what a review-mode export contains"]
    if T == "ds.table" and study.mode == "teaching":
        out.append("realized = rel.extras.get('private_realized')  # confidential: realized loss of every record")
    return out


def _budget_body(study: Study, T: str, owner_method: str) -> list[str]:
    m = study.mechanisms[_mechanism_index(study, "prdp")]
    out = [f"print(E.domain_table({T}, beta={literal(m['beta'])}))  # domains, value ranges, thresholds",
           "for label, rel in releases:",
           "    print(label, rel.answers[['estimate', 'eps_tau', 'ell']], sep='\\n')"]
    if T == "ds.table":
        out.append("    assert rel.check_delivered_within_requested()  # every record gets at most E(r)")
    else:
        out.append("    print(rel.distribution().summary())  # delivered losses, as counts per domain")
    vary = _setting(study, "budget_functions", "bf_scale_vary", None)
    if vary is not None:
        trials = int(_setting(study, "budget_functions", "bf_scale_trials", 20))
        out += ["", "# the scaling study on simulated data (the paper's Figs. 3-5)",
                f"scaling = prdp.scaling_study({literal(str(vary))}, trials={trials}, seed=SEED)"]
    return out


def _personalized_body(study: Study, T: str, owner_method: str) -> list[str]:
    runs = int(_setting(study, "personalized", "pdp_cmp_runs", 100))
    return ["print(spec.summary(), spec.tier_table(), sep='\\n')",
            "# a roster read from the table (spec.roster == 'table') makes every release a substitution-neighbour "
            "statement",
            "print(personalized.delivered_table(spec, personalized.paper_mechanisms(query.kind)))",
            f"comparison = personalized.compare(ds.table, spec, query, runs={runs}, rng=np.random.default_rng(SEED))"
            "  # uses the private data",
            "print(rel.answers, rel.params['neighbours'], rel.entries[0].loss.describe())"]


def _multitier_body(study: Study, T: str, owner_method: str) -> list[str]:
    m = study.mechanisms[_mechanism_index(study, "multitier")]
    out = ["print(plan.table())  # per-tier error: multi-tier = ideal; gradual is worse"]
    if m["model"] == "local":
        out.append("print(plan.template_table())  # the template chain (Algorithms 2-5, corrected Rescale)")
    return out + ["print(mt.coalition_table(plan))  # computed privacy loss of colluding tiers", "print(rel.answers)"]


def _granular_body(study: Study, T: str, owner_method: str) -> list[str]:
    s: Mapping[str, Any] = {**_LAB_DEFAULTS, **study.app.get("concepts", {})}
    f, i = float, int
    calc = [f"interpret.inference_accuracy({literal(f(s['cc_eps']))})  # best guess of one bit",
            f"interpret.posterior_bound({literal(f(s['cc_eps']))}, {literal(f(s['cc_prior']) / 100)})",
            f"interpret.laplace_round_back_eps({literal(f(s['cc_eps']))})  # count + Lap(1/eps) rounds back",
            f"interpret.zcdp_side_by_side({literal(f(s['cc_rho']))}, {literal(f(s['cc_delta']))})  # CKS vs textbook",
            f"interpret.record_guarantee({literal(f(s['cc_rec_value']))}, {literal(str(s['cc_rec_measure']))}, "
            f"delta={literal(f(s['cc_delta']))}).sentences()",
            "",
            "# per-attribute explorer",
            f"granular.record_cost_table({i(s['pa_d'])}, {literal(f(s['pa_eps0']))}, k={i(s['pa_k'])}, "
            f"delta={literal(f(s['cc_delta']))})",
            f"granular.granularity_table({i(s['pa_d'])}, {literal(f(s['pa_eps0']))}, k={i(s['pa_k'])}, "
            f"kind={literal(str(s['pa_kind']))})",
            "census = granular.census_2020_illustrative()",
            "accounting.attribute_rho_table(census, delta=" + literal(f(s["cc_delta"])) + ")",
            "", "# histogram lab", "rng = np.random.default_rng(SEED)"]
    if s["hl_source"] == "dataset":
        columns = [str(c) for c in s.get("hl_columns") or ()]
        typed = {str(c): str(v) for c, v in zip(s.get("hl_declared_columns") or (),
                                                s.get("hl_declared_categories") or ())
                 if c in columns and str(v).strip() and s["hl_domains"] == "public"}
        doms = literal(typed) if study.data.sample is None else \
            f"{{**granular.sample_domains({literal(study.data.sample)}), **{literal(typed)}}}"
        from_data = ", from_data=True)  # exploration only: not DP for the set of categories" \
            if s["hl_domains"] == "data" else ")"
        calc += ["domains = " + doms + "  # public categories; other values go to '(other)', numbers: size classes",
                 f"data = granular.encode_attributes(ds.table, {literal(columns)}, domains{from_data}"]
    else:
        calc.append(f"data = granular.synthetic_attribute_data({i(s['hl_n'])}, {i(s['hl_d'])}, "
                    f"patterns={i(s['hl_patterns'])}, heavy_share={literal(f(s['hl_heavy']))}, rng=rng)")
    how = "noise=Noise.secure()" if s.get("hl_secure") else "noise=Noise.from_rng(rng, seed=SEED)"
    if s.get("hl_secure"):
        calc.append("# secure mode: exact OpenDP samplers, unseeded, so every run differs")
    std_eps = literal(f(s["hl_eps0"])) if s["hl_match"] == "eps0" else "hh.extras['whole_record']"
    return ["# calculators", *calc,
            f"hh = granular.heavy_hitter_histogram(data, eps0={literal(f(s['hl_eps0']))}, "
            f"nu={literal(f(s['hl_nu']))}, method={literal(str(s['hl_method']))}, {how}, reveal=REVEAL)",
            f"std = granular.standard_histogram(data, eps={std_eps}, {how}, reveal=REVEAL)",
            "print(hh.extras['calibration'])",
            "print(hh.answers.head(20))"]


#: The Concepts page's defaults, for settings a study does not carry.
_LAB_DEFAULTS: dict[str, Any] = {
    "cc_eps": 1.0, "cc_prior": 1.0, "cc_rho": 2.63, "cc_delta": 1e-6, "cc_rec_value": 0.5, "cc_rec_measure": "rho",
    "pa_d": 20, "pa_k": 2, "pa_eps0": 0.2, "pa_kind": "cdp",
    "hl_source": "generated", "hl_d": 64, "hl_n": 50_000, "hl_patterns": 20, "hl_heavy": 0.5, "hl_eps0": 1.0,
    "hl_nu": 0.01, "hl_method": "exact", "hl_match": "eps0", "hl_domains": "public", "hl_secure": False}


def _tradeoffs_body(study: Study, T: str, owner_method: str) -> list[str]:
    g = lambda k, d: _setting(study, "tradeoffs", k, d)  # noqa: E731
    pcts = [float(p) for p in g("tr_pcts", [90.0, 97.0, 99.0, 99.9])]
    rhos = [float(r) for r in g("tr_rhos", [0.1, 1.0, 10.0])]
    measures = split_measures(study)
    return [*policy_code(study, T), "",
            "# Fig. 2: thresholds at percentiles x base budgets (analytic: nothing is released)",
            f"grid = sweeps.percentile_grid({T}, {literal(measures)}, {literal(pcts)})",
            f"errors, losses = sweeps.sweep({T}, policy, grid, {literal(rhos)}, "
            f"min_count={int(g('tr_min', 100))}, labels={literal([f'p{p:g}' for p in pcts])})",
            "print(losses)", "",
            "# per-answer expected errors of the active policy, and the budget for a goal (Fig. 4)",
            f"errs = analysis.workload_errors({T}, policy, gamma={literal(float(g('tr_gamma', 0.95)))}, "
            f"min_count={int(g('tr_fmin', 100))})",
            "print(analysis.summarize_errors(errs))",
            f"solution = budget_solver.solve_budget({T}, policy, target={literal(float(g('tr_solve_t', 0.05)))}, "
            f"gamma={literal(float(g('tr_solve_g', 0.95)))}, share={literal(float(g('tr_solve_s', 0.95)))}, "
            f"min_count={int(g('tr_solve_min', 100))})",
            "print(solution.describe())"]


def split_measures(study: Study) -> list[str]:
    """Measures the workload sums on split data (those a threshold sweep moves; all thresholded ones if none)."""
    out: list[str] = []
    for q in (study.workload or {}).get("queries", ()):
        if q["kind"] != "count" and q.get("split", True) and q.get("measure") not in out:
            out.append(q["measure"])
    t = study.policy.get("thresholds", {})
    return out or list(next(iter(t["rows"].values())) if "rows" in t else t)


_BODIES = {"data": _data_body, "policy": _policy_body, "run": _run_body, "budget": _budget_body,
           "personalized": _personalized_body, "multitier": _multitier_body, "granular": _granular_body,
           "tradeoffs": _tradeoffs_body}

__all__ = ["PARTS", "snippet"]
