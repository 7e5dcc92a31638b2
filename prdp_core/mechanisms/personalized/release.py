"""Ledger-ready releases of personalized DP: a mechanism run on a table with its per-user delivered ε.

A release states its neighbour notion, its promise and the ε each tuple's owner receives; query
parameters left at a design default computed from the data are flagged (:func:`flag_design_defaults`)
so they are never published as if they were public.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

import numpy as np
import pandas as pd

from ...core.accounting import LedgerEntry, RecordLoss
from ...core.errors import PolicyError
from ...core.noise_source import Noise, resolve
from ...core.provenance import mark_sources
from ...core.release import Release
from ...core.secure import SecureSampler
from .defaults import DESIGN_DEFAULTS
from .neighbours import noise_calibration, substitution_factor
from .query import PersonalizedQuery
from .spec import ROSTER_TEXT, PrivacySpec

if TYPE_CHECKING:
    from .mechanisms import PDPMechanism


@dataclass(frozen=True)
class PersonalizedPlan:
    """A personalized-DP release before any data (:class:`prdp_core.mechanisms.contract.Plan`): the specification Φ
    over the public roster, the mechanism and the query. Each user's delivered ε is a function of Φ and
    of the mechanism alone (α = min Φ for Minimum, min(Φ, t) for Threshold, …), in the neighbour notion of
    :meth:`PDPMechanism.neighbours_for`."""

    spec: PrivacySpec
    mechanism: PDPMechanism
    query: PersonalizedQuery

    loss_kind: ClassVar[str] = "eps"
    #: record_loss is what the release's ledger entry charges each tuple's owner.
    exact: ClassVar[bool] = True

    def delivered(self, phi: np.ndarray) -> np.ndarray:
        """The ε delivered to owners whose requirements are ``phi``."""
        return self.mechanism.delivered_for(phi, self.spec, self.query)

    def record_loss(self, records: pd.DataFrame | int) -> np.ndarray:
        """The delivered ε of each tuple's owner (``records``: the table, or its number of rows when the
        roster is the rows themselves)."""
        return self.delivered(self.spec.phi_for(records))


def release(table: pd.DataFrame, spec: PrivacySpec, query: PersonalizedQuery, mechanism: PDPMechanism, *,
            rng: np.random.Generator | None = None, seed: int | None = None, reveal: bool = False,
            label: str | None = None, secure: bool = False, sampler: SecureSampler | None = None,
            noise: Noise | None = None) -> Release:
    """Run ``mechanism`` on ``table`` under ``spec`` and return a ledger-ready :class:`Release`.

    ``loss`` is the delivered ε of each tuple's owner (aligned with the rows),
    ``requested`` their Φ; the ledger entry carries them as a :class:`RecordLoss` in
    pure ε. The neighbour notion is the mechanism's own when the roster is public, and
    substitution when it was read from the table (:meth:`PDPMechanism.neighbours_for`); the
    losses, the params, the promise and the ledger entry all state it.
    ``reveal=True`` (teaching mode) adds the true answer and the error.
    ``secure=True`` (or a :class:`~prdp_core.core.secure.SecureSampler`): a real release with exact OpenDP
    samplers and system randomness, no seed (``rng`` and ``seed`` are ignored), outputs on the grids of
    :mod:`.secure`, and each user's loss certified at or below the delivered ε before it is returned.
    ``noise``: the noise source (:class:`~prdp_core.core.noise_source.Noise`: ``Noise.teaching(seed)`` or
    ``Noise.secure()``); ``rng``/``seed``/``secure``/``sampler`` are its legacy spelling.
    """
    mechanism.check_query(query)
    nz = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler)
    smp, rng, seed = nz.parts()
    phi = spec.phi_for(table)
    raw = query.raw(table)
    vals = query.prepare(raw)
    if smp is not None:
        ans = mechanism.secure_answer(vals, phi, query, spec, sampler=smp)
    else:
        ans = mechanism.answer(vals, phi, query, spec, rng=rng)  # type: ignore[arg-type]  # rng is set when there is no exact sampler (NoiseSource.parts)
    notion = mechanism.neighbours_for(spec)
    delivered = PersonalizedPlan(spec, mechanism, query).delivered(phi)
    promise = mechanism.promise_for(spec, query)
    row: dict[str, Any] = {"query": query.describe(), "estimate": ans.estimate}
    if ans.scale is not None:
        row["scale"] = ans.scale
    bias = mechanism.bias_note(spec, query)
    if bias is not None:  # public: Φ over the roster (the same in review mode)
        row["expected_bias"] = float(mechanism.expected_share(spec, query) or 0.0) - 1.0
    if reveal:
        truth = query.truth(raw)
        row.update({"true": truth, "error": ans.estimate - truth, "abs_error": abs(ans.estimate - truth)})
    params = {"mechanism": mechanism.label(spec), "query": query.kind, "column": query.column,
              "cutoff": query.cutoff, "lo": query.lo, "hi": query.hi, "integer": bool(query.integer),
              "neighbours": notion.name, "roster": spec.roster, "spec_source": spec.source, **mechanism.params(spec)}
    if bias is not None:
        params["expected_bias"] = row["expected_bias"]
    if query.black_box is not None:
        params["black_box"] = query.black_box.name
        params["black_box_substitution"] = float(query.black_box.substitution)
    if smp is not None:
        params["secure"] = smp.describe()
        params["certified_ratio"] = ans.certified
    if notion != mechanism.neighbours:
        params["substitution_factor"] = substitution_factor(query)
        params["noise_calibration"] = noise_calibration(query, spec)
    sup = float(mechanism.delivered_for(spec.eps, spec, query).max()) if spec.n_users else 0.0
    note = f"{promise}; PDP, {notion.text}"
    if spec.roster == "table":
        note += f"; {ROSTER_TEXT['table']}"
    entry = LedgerEntry(label=label or f"{mechanism.label(spec)} · {query.describe()}",
                        mechanism=f"personalized.{mechanism.name}",
                        loss=RecordLoss(delivered, "eps", note=note, bound=sup), params=params, seed=seed,
                        neighbours=notion, secure=smp is not None)
    extras: dict[str, Any] = {"neighbours": notion.name, "promise": promise, "roster": ROSTER_TEXT[spec.roster],
                              "mode": nz.label}
    if ans.eps_used is not None:
        extras["eps_used"] = ans.eps_used
    if bias is not None:
        extras["bias"] = bias
    if reveal:
        extras.update({f"private_{k}": v for k, v in ans.private.items()})
    return Release(mechanism=f"personalized.{mechanism.name}", answers=pd.DataFrame([row]), measure="eps",
                   loss=delivered, entries=(entry,), params=params, seed=seed, requested=phi,
                   truth_included=reveal, extras=extras, secure=smp is not None)


#: What a release records about the upper bound hi left at its design default (each parameter's note is its
#: :meth:`~.defaults.DesignDefault.note`).
DATA_DEFAULT_NOTE = DESIGN_DEFAULTS["hi"].note()

#: Query parameters whose design default may come from the data.
DESIGN_DEFAULT_PARAMS = tuple(DESIGN_DEFAULTS)


def require_public_bounds(names: Iterable[str]) -> None:
    """Refuse query parameters left at a design default computed from the confidential data (``hi``,
    ``cutoff``) in a secure release that is not a teaching run: a bound read off the records sets the noise
    or the output range, so it leaks through the release itself. Raises :class:`PolicyError` naming them."""
    flagged = [n for n in names if n in DESIGN_DEFAULT_PARAMS]
    if flagged:
        raise PolicyError("A secure release cannot use query parameters computed from the confidential data: "
                          + "; ".join(f"{n} ({DESIGN_DEFAULTS[n].origin})" for n in flagged) + ".",
                          hint="Type a public value (fixed from public knowledge), or adopt a private (DP) "
                               "suggestion charged to the ledger.")


def flag_design_defaults(rel: Release, names: Iterable[str]) -> Release:
    """The release with its params (and its ledger entries' params) stating which query parameters
    (``hi``, ``cutoff``) are design defaults computed from the confidential data, so they are never
    published as if they were public."""
    return mark_sources(rel, {n: DESIGN_DEFAULTS[n].note() for n in names if n in DESIGN_DEFAULT_PARAMS})
