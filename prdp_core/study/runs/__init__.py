"""Typed, registered run configurations: one class per mechanism kind of a study config.

Each mechanism entry of a study (``mechanisms[i]``) is parsed into a frozen :class:`RunConfig`
of its kind, found in :data:`RUN_KINDS` by the entry's ``kind``. The class holds all that is
particular to the kind: validation (the same ``ConfigError`` messages naming the key), the
normalised entry (:meth:`RunConfig.to_config`), the columns it reads, the run, the reproduction
code and its rows in the study's tables and report. The study parser
(:mod:`prdp_core.study.config.mechanisms`), :func:`prdp_core.study.runner.run_study`, the reproduction script,
:mod:`prdp_core.study.study_tables` and :mod:`prdp_core.review.report` dispatch through the registry, so a new
kind is one new module here (a :func:`register`-ed subclass), nothing else.

One module per kind: :mod:`.unit_splitting`, :mod:`.prdp`, :mod:`.personalized`,
:mod:`.multitier`, :mod:`.granular`, :mod:`.legacy_sdc`; the contract and the registry in :mod:`.base`. The
registry's order (the order of the imports below) is the order of ``config.keys.MECHANISM_KINDS``.
"""

from __future__ import annotations

from .base import RUN_KINDS, ParseContext, RunConfig, held_by_engine, needs_records, parse_run, register

# isort: off
# the kinds register in this order: the order of config.keys.MECHANISM_KINDS and of the messages listing them
from .unit_splitting import UnitSplittingRun
from .prdp import PRDP_LABELS, PRDP_LOCAL_LABELS, PrdpRun, prdp_query
from .personalized import PersonalizedRun, pdp_mechanism
from .multitier import MultitierRun, multitier_filter
from .granular import GranularRun, granular_domains
from .legacy_sdc import LegacySdcRun
# isort: on

__all__ = ["GranularRun", "LegacySdcRun", "MultitierRun", "PRDP_LABELS", "PRDP_LOCAL_LABELS", "ParseContext",
           "PersonalizedRun", "PrdpRun", "RUN_KINDS", "RunConfig", "UnitSplittingRun", "granular_domains",
           "held_by_engine", "multitier_filter", "needs_records", "parse_run", "pdp_mechanism", "prdp_query",
           "register"]
