"""Python literals for generated code: the only way user text enters a generated script.

``reproduce.py`` (:func:`prdp_core.review.report.reproduction_script`) and the app's "Reproduce in
Python" snippets are read and run by other people — a reviewer runs the script of a study a
workshop participant shared. Everything in them that comes from the user (study title, labels,
expressions, column names, group values, file and dataset names, filter values) is written by
:func:`literal`: a Python literal built with ``repr`` from a plain value. ``repr`` escapes
quotes, backslashes, newlines, carriage returns and every character that is not printable
(U+2028, U+0085, form feeds, …), so such a value can never end its string, open a comment or
become code. Generated scripts never place user text in a docstring, a comment or the text of
an f-string; tests/unit/test_generated_code.py feeds hostile text through every generator and
runs the results.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def literal(value: Any) -> str:
    """``value`` as Python source that evaluates to it: text, numbers, booleans and None, and
    lists, tuples and dicts of them (numpy scalars and arrays become their Python values).

    Non-finite floats are written ``float('nan')`` / ``float('inf')``. Any other object (a date,
    a decimal, …) is written as the literal of its text, ``repr(str(value))``: an object's own repr
    is code, never written."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):  # subclasses (enums) have other reprs: write the plain value
        return repr(int(value))
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, float):
        x = float(value)
        if math.isfinite(x):
            return repr(x)
        return "float('nan')" if math.isnan(x) else ("float('inf')" if x > 0 else "-float('inf')")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return "(" + inner + ("," if len(value) == 1 else "") + ")"
    return repr(str(value))


__all__ = ["literal"]
