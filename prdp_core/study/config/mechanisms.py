"""The mechanisms section of a study config: each entry validated by the run configuration of its kind.

An entry ``mechanisms[i]`` names its ``kind``; the class registered for that kind in
:data:`prdp_core.study.runs.RUN_KINDS` (unit_splitting, prdp, personalized, multitier, granular) checks
its parameters, label, seed or secure flag and returns a typed, frozen
:class:`~prdp_core.study.runs.RunConfig` (read as the normalised mapping of the entry).
"""


from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from ..runs import RunConfig


def _mechanism(v: Any, i: int, policy: Mapping[str, Any], has_workload: bool, engine: str = "memory"
               ) -> RunConfig:
    """Validate ``mechanisms[i]`` given the study's normalised policy, whether it has a workload and its
    data engine (records held by an engine leave out the PrDP algorithms that need them)."""
    from ..runs import ParseContext, parse_run  # the runs import this package's validators

    return parse_run(v, i, ParseContext(policy=policy, has_workload=has_workload, engine=engine))
