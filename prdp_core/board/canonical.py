"""The canonical JSON form of what the board stores: sorted keys, no NaN, the same text for the same value."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no NaN (None instead), the stored form of configs and summaries."""
    return json.dumps(_finite(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Mapping):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


__all__ = ["canonical_json"]
