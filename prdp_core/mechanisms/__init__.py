"""Mechanism families: a subpackage per framework (prdp, personalized, multitier, granular), the unit-splitting
module and the global baselines (see docs/architecture.md).

Each module exposes mechanisms whose parameters are frozen dataclasses (or keyword
arguments) and whose runs return a :class:`prdp_core.core.release.Release`.
"""
