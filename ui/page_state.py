"""The declaration of a page's session state: which keys it owns, how the Study page exports and imports them,
and the rules an imported value must follow.

Each page's ui module declares one :class:`PageState` as ``STATE``; :mod:`ui.study` gathers those declarations
(export, import, keeping settings across page changes) instead of holding key lists of its own. The config format
is the one of docs/config.md: ``engine`` keys feed the policy and mechanism sections, ``settings`` the page's
``app.<page>`` section.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class PageState:
    """The session-state keys of one page (all in ``st.session_state``).

    ``page``: the page's name in a study config (``app.<page>``) and in the app (``app_pages/<page>.py``).
    ``settings``: view settings (charts, sweeps, calculators), exported under ``app.<page>`` as plain values; they
    change what is shown, never a release's privacy loss.
    ``engine``: widget keys from which the study's policy and mechanism sections are built; they set the privacy
    loss of the page's releases, so an import writes them only after the whole config is validated.
    ``rules``: allowed values of settings whose widgets refuse others — ``("range", lo, hi, whole)``,
    ``("choice", options)`` or ``("subset", options)``; an import leaves out a value that breaks its rule.
    ``editors``: editor tables and their bases (not exported key by key): an import clears them.
    ``results``: results of earlier runs, dropped by an import (they belong to the previous settings).
    ``prefixes``: prefixes of settings whose keys depend on the data (prefix + column name).
    ``dataset_defaults``: the page's defaults are computed from the dataset (reset on a new one, kept after an
    import, :func:`ui.state.settings_belong_to_dataset`).
    """

    page: str
    settings: tuple[str, ...] = ()
    engine: tuple[str, ...] = ()
    rules: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    editors: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    dataset_defaults: bool = False
