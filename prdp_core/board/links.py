"""A policy as a link: the study config's design in one compact URL parameter.

:func:`encode` keeps the parts of a study config that make a design — the data source, the
policy, the workload, the mechanisms, the seed and the report's δ — leaves out the pages'
view settings, the title and the mode (a link never switches its reader to teaching mode), and
writes them as base64url of zlib-compressed JSON, at most :data:`MAX_LINK_CHARS` characters
(a larger design is refused: share the study file instead).

:func:`decode` reads a link back with the same validation as a study import
(:func:`prdp_core.study.config.parse_config`: every key checked, never evaluated): a damaged,
oversized or invalid link is a :class:`~prdp_core.core.errors.ConfigError` saying so. Decompression
stops at :data:`MAX_JSON_BYTES`, so a small link cannot unpack into a huge document.

This is the long form of a share link, which works without the server's store (offline, another server);
the short form stores the same design in the workshop store under a short id (:mod:`.shared_designs`).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from typing import Any, Mapping

from ..core.errors import ConfigError, ResourceLimitError
from ..study.config import Study, parse_config

#: Longest policy parameter written or read (characters of base64url).
MAX_LINK_CHARS = 6000
#: Largest JSON a link may unpack into (bytes).
MAX_JSON_BYTES = 200_000
#: Name of the query parameter holding the policy.
PARAM = "policy"
#: Top-level keys of a study config a link carries.
LINK_KEYS = ("version", "seed", "data", "policy", "workload", "mechanisms", "report")

_B64URL = re.compile(r"[A-Za-z0-9_-]+")


def link_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a study config a link carries (see the module docstring)."""
    return {k: config[k] for k in LINK_KEYS if k in config and config[k] not in (None, [], {})}


def encode(config: Mapping[str, Any]) -> str:
    """The design of a study config as a URL-safe parameter (ResourceLimitError when too large)."""
    raw = json.dumps(link_config(config), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = base64.urlsafe_b64encode(zlib.compress(raw.encode("utf-8"), 9)).rstrip(b"=").decode("ascii")
    if len(text) > MAX_LINK_CHARS:
        raise ResourceLimitError(f"This design is too large for a link ({len(text):,} characters; at most "
                                 f"{MAX_LINK_CHARS:,}).", hint="Share the study file instead (Study page).")
    return text


def decode(text: Any) -> Study:
    """The study a link carries, validated like a study import (ConfigError otherwise)."""
    return parse_config(unpack(text))


def unpack(text: Any) -> dict[str, Any]:
    """The JSON a link's parameter carries, unpacked within the size limits but not yet validated as a study
    config (:func:`decode` does that); ConfigError for a damaged or oversized parameter."""
    if not isinstance(text, str) or not text:
        raise ConfigError("The link holds no policy.")
    if len(text) > MAX_LINK_CHARS:
        raise ConfigError(f"The link's policy is too long ({len(text):,} characters; at most {MAX_LINK_CHARS:,}).",
                          hint="Ask for the study file instead.")
    if not _B64URL.fullmatch(text):
        raise ConfigError("The link's policy is damaged (it was cut or changed).",
                          hint="Copy the whole link again.")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        unpack = zlib.decompressobj()
        raw = unpack.decompress(data, MAX_JSON_BYTES)
        if unpack.unconsumed_tail:
            raise ConfigError(f"The link's policy unpacks to more than {MAX_JSON_BYTES:,} bytes.",
                              hint="Share the study file instead.")
        if not unpack.eof:
            raise ValueError("truncated")
        obj = json.loads(raw.decode("utf-8"))
    except ConfigError:
        raise
    except (binascii.Error, zlib.error, ValueError, UnicodeDecodeError, RecursionError):
        raise ConfigError("The link's policy is damaged (it was cut or changed).",
                          hint="Copy the whole link again.") from None
    if not isinstance(obj, Mapping):
        raise ConfigError("The link's policy is not a study config.")
    return dict(obj)


__all__ = ["MAX_JSON_BYTES", "MAX_LINK_CHARS", "PARAM", "decode", "encode", "link_config", "unpack"]
