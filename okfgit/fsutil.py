"""Atomic file writes and safe relative paths.

Every write is a temp file in the same folder plus an atomic rename. Files that hold a
person's bytes are fsynced before the rename; derived files are made durable in one
batch by fsyncing their folders at the end (DESIGN.md, "Exit codes").
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from okfgit.errors import UnwritableError, UsageError


def atomic_write(path: Path, data: bytes, *, fsync: bool, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder and a rename."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".okftmp", dir=folder)
    except OSError as exc:
        raise UnwritableError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif path.exists():
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise UnwritableError(f"cannot write {path}: {exc.strerror or exc}") from exc


def fsync_dirs(folders: Iterable[Path]) -> None:
    """Make renames durable: one fsync per touched folder, not per file."""
    for folder in sorted(set(folders)):
        try:
            fd = os.open(folder, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


_UMASK: int | None = None


def _umask() -> int:
    global _UMASK
    if _UMASK is None:
        current = os.umask(0)
        os.umask(current)
        _UMASK = current
    return _UMASK


def safe_relpath(value: str, what: str = "path") -> str:
    """Validate a KB-relative POSIX path: no absolute, no ``..``, no NUL, no empty parts.

    Returns the normalised path (no ``./`` parts, no trailing slash).
    """
    if not value or "\x00" in value:
        raise UsageError(f"invalid {what} {value!r}: empty or contains NUL")
    if "\\" in value:
        raise UsageError(f"invalid {what} {value!r}: backslashes are not allowed")
    if value.startswith("/") or (len(value) > 1 and value[1] == ":"):
        raise UsageError(f"invalid {what} {value!r}: must be relative")
    parts = [p for p in PurePosixPath(value).parts if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise UsageError(f"invalid {what} {value!r}: must stay inside the knowledge base")
    if any(p == ".git" for p in parts):
        raise UsageError(f"invalid {what} {value!r}: .git is reserved")
    return "/".join(parts)


def is_inside(child: Path, parent: Path) -> bool:
    """True when ``child`` resolves inside ``parent`` (symlinks followed)."""
    try:
        child.resolve().relative_to(parent.resolve())
    except ValueError:
        return False
    return True
