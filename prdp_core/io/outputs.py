"""Writing output files into a folder without following links or replacing files prdp did not write.

Every file prdp writes for its user goes through this module: ``prdp run --out DIR``
(:func:`prdp_core.review.report.write_outputs`), ``prdp board export --out DIR``
(:func:`prdp_core.commands.board_cli.write_board`), ``prdp suggest thresholds --out FILE`` and ``prdp
samples write --out FILE`` (:func:`prdp_core.data.samples.write_sample`, streamed through
:func:`new_file`), and the reproduction script's ``results.csv``. They write known file names
into a folder that may be shared. A file there with one of those names may be someone's own
work, and a symbolic link with one of those names (``report.html → ../notes.txt``) would make a
plain write overwrite its target. So:

* DIR must be a folder (created if missing) and not itself a symbolic link; nothing on its path
  may be a file.
* Every file is written to a new temporary file in DIR (created exclusively, never through a link)
  and then renamed over its name: a link in the way is replaced, never followed; a hard link to
  another file is replaced, never written through; a reader never sees half a file.
* DIR keeps a manifest, ``.prdp-outputs.json``, with the SHA-256 of every file prdp wrote there. A
  name already taken is overwritten only when it is a regular file the manifest lists with its
  current content (prdp's own earlier output). Anything else — a file prdp did not write or one
  edited since, a symbolic link, a folder — is refused with :class:`~prdp_core.core.errors.OutputError`
  naming it, unless ``force=True`` (``--force`` of each command), which replaces files and links
  (still never following a link) but never a folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..core.errors import OutputError

#: The manifest of the files prdp wrote into an output folder (name → SHA-256 of the content).
MANIFEST = ".prdp-outputs.json"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def folder_problem(out: Path) -> str | None:
    """Why ``out`` cannot be an output folder (a file, a file on its path, a symbolic link), or None."""
    if out.is_symlink():
        return (f"The output folder {out} is a symbolic link. prdp never writes through links: give the folder "
                f"itself ({out.resolve()}).")
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                what = "is a file" if p == out else f"is inside {p}, which is a file"
                return f"The output folder {out} {what}, not a folder. Choose a folder (it is created if missing)."
            return None
    return None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_regular(path: Path) -> bytes | None:
    """The content of ``path`` if it is a regular file (opened without following a link or waiting on
    a pipe), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read() if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else None


def _manifest(out: Path) -> dict[str, str]:
    """name → SHA-256 of the files prdp wrote into ``out`` (empty when missing, a link or unreadable)."""
    raw = _read_regular(out / MANIFEST)
    try:
        files = json.loads(raw.decode("utf-8"))["files"] if raw is not None else {}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def check_folder(out: str | os.PathLike, names: Iterable[str], *, force: bool = False) -> None:
    """Raise :class:`OutputError` unless ``names`` can be written into ``out`` (see the module docstring)."""
    out = Path(out)
    problem = folder_problem(out)
    if problem:
        raise OutputError(problem)
    if not out.is_dir():
        return
    ours = _manifest(out)
    folders, links, others = [], [], []
    for name in names:
        p = out / name
        try:
            mode = os.lstat(p).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(mode):
            folders.append(name)
        elif stat.S_ISLNK(mode):
            links.append(name)
        elif not force and (not stat.S_ISREG(mode) or ours.get(name) != _digest(_read_regular(p) or b"")):
            others.append(name)
    if folders:
        raise OutputError(f"The output folder {out} has folders named like outputs: {', '.join(folders)}.",
                          hint="Move them away or choose another output folder.")
    if (links and not force) or others:
        parts = ([f"symbolic links ({', '.join(links)})"] if links and not force else []) + (
            [f"files prdp did not write or that changed since ({', '.join(others)})"] if others else [])
        raise OutputError(f"The output folder {out} holds {' and '.join(parts)}: they are not overwritten.",
                          hint="Choose another output folder, or pass --force (force=True from Python) to "
                               "replace them (a link is replaced, never followed).")


def _temporary(out: Path, name: str) -> tuple[int, Path]:
    """A new temporary file in ``out`` for ``name``, created exclusively (never through a link): (fd, path)."""
    for attempt in range(100):
        tmp = out / f".{name}.{os.getpid()}.{attempt}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666), tmp
        except FileExistsError:
            continue
    raise OutputError(f"Cannot create a temporary file in {out}.")


def _replace(out: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to a fresh temporary file in ``out`` and rename it over ``name``."""
    fd, tmp = _temporary(out, name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, out / name)  # replaces a link or file at the name; never follows it
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out / name


def _record(out: Path, digests: Mapping[str, str]) -> None:
    """Add ``digests`` (name → SHA-256) to the manifest of ``out``."""
    manifest = {**_manifest(out), **digests}
    body = {"written_by": "prdp (PrDP Explorer)", "files": dict(sorted(manifest.items()))}
    _replace(out, MANIFEST, (json.dumps(body, indent=2) + "\n").encode("utf-8"))


def write_files(out: str | os.PathLike, files: Mapping[str, bytes], *, force: bool = False) -> dict[str, Path]:
    """Write ``files`` (name → content) into ``out`` safely and record them in the manifest; name → path.

    Raises :class:`OutputError` (see :func:`check_folder`) before writing anything; an OSError of the
    file system itself (no space, no permission) is passed on."""
    out = Path(out)
    check_folder(out, files, force=force)
    out.mkdir(parents=True, exist_ok=True)
    written = {name: _replace(out, name, data) for name, data in files.items()}
    _record(out, {name: _digest(data) for name, data in files.items()})
    return written


@contextmanager
def new_file(path: str | os.PathLike, *, force: bool = False) -> Iterator[BinaryIO]:
    """A binary file object to stream one output file into, written by the rules above.

    ``path``'s folder is checked first (:func:`check_folder`, :class:`OutputError`); the content goes to
    a temporary file created exclusively in that folder, which replaces ``path`` (never following a
    link) only when the ``with`` block ends without an error, and is then recorded in the manifest.
    An error in the block leaves ``path`` as it was and removes the temporary file."""
    target = Path(path)
    out, name = target.parent, target.name
    check_folder(out, [name], force=force)
    out.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temporary(out, name)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f  # a writer may close f itself
        sha = hashlib.sha256()
        with os.fdopen(os.open(tmp, os.O_RDONLY | _NOFOLLOW), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                sha.update(block)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _record(out, {name: sha.hexdigest()})


__all__ = ["MANIFEST", "check_folder", "folder_problem", "new_file", "write_files"]
