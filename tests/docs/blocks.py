"""The code blocks of the documentation (README.md, docs/*.md, docs/reproductions/*.md) and how each is run.

Every fenced block declares its language. ``python`` blocks and shell blocks (``bash``, ``sh``, ``shell``,
``console``) run; the others (``text`` diagrams, ``yaml`` fragments, …) are read, not run. An HTML comment on
the line right before a block (blank lines allowed between) tells the test how to run it::

    <!-- docs-test: skip — starts a server; covered by tests/e2e -->   not run: the reason is shown by pytest
    <!-- docs-test: spark -->                                         runs against Spark in local mode
    <!-- docs-test: env ROWS=20000 -->                                sets environment variables for the block

(several directives are separated by ``;``, ``skip`` last: its reason is the rest of the marker). The blocks of one
file run in order, in one fresh working folder holding a copy of the checkout's ``examples/`` (the folder the docs'
commands are run from), the Python blocks in one namespace, like the cells of a notebook; shell blocks run with
``bash -eo pipefail`` and the project's ``.venv/bin`` first on ``PATH`` (so ``prdp`` and ``python`` are the
project's). A shell block may run only ``prdp``, ``python`` and simple file commands (:data:`SHELL_COMMANDS`): one
that builds, installs, starts a server (:data:`SERVERS`) or needs a cluster is marked ``skip`` with its reason.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The documents whose blocks are tested (found again at every collection: new blocks are picked up).
PATTERNS = ("README.md", "docs/*.md", "docs/reproductions/*.md")

PYTHON = frozenset({"python", "py"})
SHELL = frozenset({"bash", "sh", "shell", "console"})
#: Languages that are read, not run.
READ_ONLY = frozenset({"text", "yaml", "yml", "json", "toml", "csv", "sql", "html", "ini", "conf"})

#: The commands a shell block may run without a ``skip`` marker.
SHELL_COMMANDS = frozenset({"prdp", "python", "python3", ".venv/bin/python", ".venv/bin/prdp", "cat", "ls", "cp",
                            "mkdir", "echo", "export", "cd", "test", "head", "tail", "diff", "cmp", "wc", "rm"})

#: Commands of an allowed program that start a server (they never end by themselves).
SERVERS = frozenset({"prdp app"})

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<lang>[^`\s]*)[^`]*$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")


@dataclass(frozen=True)
class Block:
    """One fenced block: its document (relative to the checkout), the line of its opening fence, language,
    code (indentation of the fence removed) and the directives of its ``docs-test`` marker."""

    doc: str
    line: int
    lang: str
    code: str
    skip: str | None = None
    spark: bool = False
    env: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in PYTHON or self.lang in SHELL


class DocError(ValueError):
    """A block the tests cannot run as it stands (no language, a bad marker, an unmarked command)."""


def documents() -> list[Path]:
    """The documents whose blocks are tested, sorted."""
    return sorted({p for pattern in PATTERNS for p in ROOT.glob(pattern) if p.is_file()})


def _directives(body: str, where: str) -> dict[str, object]:
    env: dict[str, str] = {}
    out: dict[str, object] = {"env": env}
    head, skip, reason = body.partition("skip")  # the reason is the rest of the marker (it may hold ";")
    if skip and (head.strip() == "" or head.rstrip().endswith(";")):
        reason = reason.strip().lstrip("—–-:").strip()
        if not reason:
            raise DocError(f"{where}: a docs-test skip marker must say why the block is not run.")
        out["skip"], body = reason, head
    for part in (p.strip() for p in body.split(";")):
        if not part:
            continue
        word, _, rest = part.partition(" ")
        if word == "spark":
            out["spark"] = True
        elif word == "env":
            for item in shlex.split(rest):
                name, eq, value = item.partition("=")
                if not eq or not name.isidentifier():
                    raise DocError(f"{where}: docs-test env expects NAME=VALUE, got {item!r}.")
                env[name] = value
        else:
            raise DocError(f"{where}: unknown docs-test directive {word!r} (skip, spark, env).")
    return out


def parse(path: Path, root: Path = ROOT) -> list[Block]:
    """The fenced blocks of the document ``path`` (named relative to ``root``), in order. Raises :class:`DocError`
    for a block without a language or a marker that does not parse."""
    doc = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent, fence, lang = i, m["indent"], m["fence"], m["lang"].lower()
        body: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and lines[i].strip().strip(fence[0]) == ""):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        where = f"{doc}:{start + 1}"
        if not lang:
            raise DocError(f"{where}: a fenced block without a language; write ```python, ```bash, or ```text for a "
                           "diagram or output, so that every Python and shell block is run.")
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = _MARKER.match(lines[j]) if j >= 0 else None
        d = _directives(marker["body"], where) if marker else {"env": {}}
        skip, env = d.get("skip"), d["env"]
        blocks.append(Block(doc, start + 1, lang, "\n".join(body) + "\n", skip=None if skip is None else str(skip),
                            spark=bool(d.get("spark")), env=dict(env) if isinstance(env, dict) else {}))
    return blocks


def logical_lines(code: str) -> tuple[list[str], bool]:
    """The command lines of a shell script (continuations joined, heredoc bodies left out) and whether it
    holds a heredoc."""
    logical: list[str] = []
    pending = ""
    heredoc: str | None = None
    seen = False
    for raw in code.splitlines():
        if heredoc is not None:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        line = pending + raw
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        h = _HEREDOC.search(line)
        if h:
            heredoc, seen = h.group(1), True
        logical.append(line)
    return logical, seen


def plain_prdp(line: str) -> list[str] | None:
    """The arguments of a line that is one plain ``prdp`` command (no variable, pipe, redirection or second
    command), else None."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    code = line.split("#", 1)[0]
    if not words or words[0] != "prdp" or any(c in code for c in "$|;&<>`()"):
        return None
    return words[1:]


def commands(code: str) -> list[str]:
    """The first word of every command of a shell block (continuations joined, heredoc bodies, comments and
    ``console`` output lines left out; ``NAME=value`` prefixes skipped; a server command of :data:`SERVERS` as its
    two words)."""
    out: list[str] = []
    for line in logical_lines(code)[0]:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        cmd: list[str] = []
        for w in [*words, ";"]:
            if w in (";", "|", "||", "&&", "&"):
                names = [x for x in cmd if not re.match(r"^\w+=", x)]
                if names:
                    out.append(" ".join(names[:2]) if " ".join(names[:2]) in SERVERS else names[0])
                cmd = []
            else:
                cmd.append(w)
    return out


def shell_script(block: Block) -> str:
    """The script a shell block runs (``console`` blocks: the lines after a ``$`` prompt)."""
    if block.lang != "console":
        return block.code
    return "\n".join(line[2:] for line in block.code.splitlines() if line.startswith("$ ")) + "\n"


def unmarked_commands(block: Block) -> list[str]:
    """The commands of a shell block that only a ``skip`` marker may leave unrun."""
    return [c for c in commands(shell_script(block)) if c not in SHELL_COMMANDS]
