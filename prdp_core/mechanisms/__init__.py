"""Mechanism families, one module per paper (see docs/architecture.md).

Each module exposes mechanisms whose parameters are frozen dataclasses (or keyword
arguments) and whose runs return a :class:`prdp_core.release.Release`.
"""
