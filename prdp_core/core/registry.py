"""Registries of kinds: the classes a serialised ``{"kind": …}`` mapping is rebuilt into.

Loss functions (:mod:`prdp_core.core.accounting`), budget-function shapes (:mod:`prdp_core.core.shapes`) and
the mechanism kinds of a study config each keep one :class:`Registry`. A class joins its registry with the
``@registry.register`` decorator (its ``kind`` class attribute names it); looking up a kind that no class
registered raises a :class:`~prdp_core.core.errors.ConfigError` listing the known kinds, so a config or ledger naming a
kind this version does not know gets a message instead of a ``KeyError``.
"""

from __future__ import annotations

from typing import Generic, Iterator, TypeVar

from .errors import ConfigError

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Classes by their ``kind``: ``what`` names them in messages (e.g. ``"loss-function"``)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._classes: dict[str, T] = {}

    def register(self, cls: T) -> T:
        """Class decorator: make ``cls`` loadable under ``cls.kind`` (a later class of the same kind replaces it)."""
        self._classes[cls.kind] = cls  # type: ignore[attr-defined]  # a registered class declares its kind
        return cls

    def get(self, kind: object) -> T:
        """The class registered under ``kind``; an unknown kind is a :class:`ConfigError` naming the known ones."""
        if not isinstance(kind, str) or kind not in self._classes:
            raise ConfigError(f"Unknown {self.what} kind '{kind}'.", hint=f"Known kinds: {', '.join(sorted(self))}.")
        return self._classes[kind]

    def __contains__(self, kind: object) -> bool:
        return kind in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(self._classes)

    def __len__(self) -> int:
        return len(self._classes)


__all__ = ["Registry"]
