"""Terminal-safe text: what the ``prdp`` command line prints never drives the terminal.

Names, rationales, column names, labels and file names are user text, and the CLI prints them in
tables, CSV, JSON, summaries and error messages. A control character in such text is an
instruction to the terminal that shows it: ``ESC ] 0;… BEL`` retitles the window, ``ESC [2J``
clears the screen, ``CR`` overwrites a line, and some terminals act on stranger sequences. So
every line the CLI prints goes through :class:`SafeStream` (:func:`prdp_core.commands.cli.main` wraps
stdout and stderr once), which writes each such character as visible text:

* the C0 controls except line feed and tab (``\\x00``–``\\x08``, ``\\x0b``–``\\x1f``: ESC, BEL,
  CR, backspace, …), DEL and the C1 controls (``\\x7f``–``\\x9f``, CSI ``\\x9b`` included) as
  ``\\xNN``;
* the bidirectional embedding, override and isolate characters (U+202A–U+202E, U+2066–U+2069),
  which reorder what a line appears to say, as ``\\uNNNN``.

Line feeds and tabs are the output's own structure and stay (they move the cursor down or right
and do nothing else; board names and rationales are one line already, the board store joins lines).
JSON output is escaped by :func:`json_text` with JSON's own ``\\uNNNN`` escapes, so it stays valid
JSON and loses nothing. CSV printed to stdout is escaped like every other line (whether or not
stdout is a terminal: the same command gives the same bytes in a terminal, a pipe or a log); files
written with ``--out`` are data and keep the text as it is.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

#: The characters written as visible escapes (see the module docstring).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """``text`` with every terminal control character written as ``\\xNN`` / ``\\uNNNN``."""
    return UNSAFE.sub(_visible, text)


def json_text(doc: Any) -> str:
    """``doc`` as indented JSON (non-ASCII letters kept) whose control characters are ``\\uNNNN`` escapes:
    valid JSON that reads back to the same values, and safe on a terminal."""
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(doc, indent=2, ensure_ascii=False))


class SafeStream:
    """A text stream that writes through :func:`escape`. ``raw`` is the stream underneath, for the
    progress bar's own carriage returns (its text is escaped by the bar itself)."""

    def __init__(self, raw: IO[str]) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        """Write ``text`` with its control characters escaped; returns the length of ``text``."""
        self.raw.write(escape(text))
        return len(text)

    def flush(self) -> None:
        """Flush the stream underneath."""
        self.raw.flush()

    def isatty(self) -> bool:
        """Whether the stream underneath is a terminal."""
        return bool(getattr(self.raw, "isatty", lambda: False)())


def safe(stream: IO[str]) -> Any:
    """``stream`` wrapped in a :class:`SafeStream` (once: a SafeStream is returned as it is)."""
    return stream if isinstance(stream, SafeStream) else SafeStream(stream)


__all__ = ["SafeStream", "UNSAFE", "escape", "json_text", "safe"]
