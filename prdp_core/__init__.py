"""prdp_core: the engine of PrDP Explorer.

Design, preview and run per-record differential privacy policies from Python.
The Streamlit app is a thin layer over this package; everything it does can be
done from here. Modules follow the concepts of the papers (see docs/architecture.md).

Quick start::

    import prdp_core
    ds = prdp_core.data.samples.load_dataset("cbp_like", n=10_000, seed=1)
    prof = prdp_core.data.profile.profile_dataset(ds)
    print(prof.table())
"""

from __future__ import annotations

from . import _moved, data
from .core import errors, limits
from .core.errors import PrdpError
from .data import profile, samples
from .data.dataset import Dataset, Schema, guess_schema, load_table, prepare_dataset

_moved.install()  # the old module paths, kept for one release with a warning

__version__ = "0.1.0"

__all__ = [
    "Dataset",
    "PrdpError",
    "Schema",
    "data",
    "errors",
    "guess_schema",
    "limits",
    "load_table",
    "prepare_dataset",
    "profile",
    "samples",
]
