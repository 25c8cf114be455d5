"""Atomic file writes and safe relative paths.

Every write is a temp file in the same folder plus an atomic rename. Files that hold a
person's bytes are fsynced before the rename; derived files are made durable in one
batch by fsyncing their folders at the end (DESIGN.md, "Exit codes").
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from okfgit.errors import UnwritableError, UsageError


def atomic_write(path: Path, data: bytes, *, fsync: bool, mode: int | None = None,
                 mtime_ns: int | None = None) -> os.stat_result:
    """Write ``data`` to ``path`` via a temp file in the same folder and a rename; the file's
    stat as it was renamed into place (what an ownership record keeps: a rename changes
    neither its size nor its modification time).

    The file keeps the mode it had (or gets ``mode``, or ``0o666`` less the umask when new),
    and gets the modification time ``mtime_ns`` when it is given (set before the rename).
    A file whose mode has no owner write bit is refused (UnwritableError naming the fix),
    for root too: the rename would replace it, but a read-only mode is someone's "keep
    this as it is".

    Few system calls, as projection and a commit write thousands of files: one lstat,
    the temp file created with its final mode (O_EXCL, no follow), a write, its times and
    stat through the open file, the rename; the folder is made only when the create says
    it is missing, and the mode set only when the umask took bits from it.
    """
    try:
        st: os.stat_result | None = os.lstat(path)
    except OSError:
        st = None
    problem = _read_only(path, st)
    if problem is not None:
        raise UnwritableError(f"cannot write {path}: {problem}")
    if mode is None:
        mode = _mode_of(path, st)
    try:
        fd, tmp = _create_temp(path, mode)
    except OSError as exc:
        raise UnwritableError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if mode & _umask():  # the create dropped bits the file must have
                os.fchmod(fd, mode)
            if mtime_ns is not None:
                os.utime(fd, ns=(mtime_ns, mtime_ns))
            if fsync:
                os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise UnwritableError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return st


def _mode_of(path: Path, st: os.stat_result | None) -> int:
    """The mode a rewrite of ``path`` keeps (a link's: its target's), or a new file's."""
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            st = os.stat(path)
        except OSError:
            st = None
    return stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def _create_temp(path: Path, mode: int) -> tuple[int, str]:
    """A new temp file ``.okf-<random>.okftmp`` beside ``path`` (its folder made when missing).

    The temp name does not contain the file's name: it is short and always the same length,
    so any name that fits the file system can be written (``.<name>...`` passed the 255-byte
    limit for a name of 238 bytes or more)."""
    folder = os.fspath(path.parent)
    made = False
    try:
        # Asked for its times, the folder takes a fine-grained time at the next change (Linux
        # multigrain timestamps), and so do the files made after it: files written one after
        # another get distinct modification times, not one coarse clock tick (the no-op
        # fast path reads a stat in its stamp's tick as "not sure").
        os.stat(folder)
    except FileNotFoundError:
        pass
    for _ in range(100):
        tmp = os.path.join(folder, temp_name())
        try:
            return os.open(tmp, _CREATE, mode), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:
            if made:
                raise
            os.makedirs(folder, exist_ok=True)
            made = True
    raise FileExistsError(f"no free temp file name in {folder}")


def read_only(path: Path) -> str | None:
    """Why okfgit must not replace the file at ``path`` (no owner write bit: read-only for
    everyone alike, root included), or None. A missing file or a symlink is not read-only
    here (links are the callers' business)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return _read_only(path, st)


def _read_only(path: Path, st: os.stat_result | None) -> str | None:
    if st is not None and stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IWUSR:
        return (f"it is read-only (mode {stat.S_IMODE(st.st_mode):04o}); okfgit does not replace a read-only file. "
                f"To let it: chmod u+w {path} (nothing was changed)")
    return None


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


def sync_filesystem(path: Path) -> None:
    """Make everything written so far on the filesystem holding ``path`` durable, in one
    call (``syncfs``; ``sync`` where there is none): for many files whose bytes need to
    last (the objects of a commit), one flush instead of an fsync per file. Measured on the
    dev VM: 1,000 fsyncs take about 1.5 s, one syncfs after 1,000 writes 20-30 ms.
    UnwritableError when the system reports that the data could not be written."""
    syncfs = _syncfs()
    if syncfs is None:
        os.sync()
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise UnwritableError(f"cannot open {path} to make it durable: {exc.strerror or exc}") from exc
    try:
        if syncfs(fd) != 0:
            import ctypes

            err = ctypes.get_errno()
            raise UnwritableError(f"cannot make {path} durable: {os.strerror(err)}")
    finally:
        os.close(fd)


_SYNCFS: list[Callable[[int], int] | None] = []


def _syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs`` (Linux), looked up once; None where there is none."""
    if not _SYNCFS:
        found: Callable[[int], int] | None = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                found = ctypes.CDLL(None, use_errno=True).syncfs
            except (OSError, AttributeError):
                found = None
        _SYNCFS.append(found)
    return _SYNCFS[0]


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
    if any(len(os.fsencode(p)) > 255 for p in parts):
        raise UsageError(f"invalid {what} {value!r}: a file or folder name is at most 255 bytes")
    return "/".join(parts)


def is_inside(child: Path, parent: Path) -> bool:
    """True when ``child`` resolves inside ``parent`` (symlinks followed)."""
    try:
        child.resolve().relative_to(parent.resolve())
    except ValueError:
        return False
    return True


TEMP_SUFFIX = ".okftmp"
_TEMP_NAME = re.compile(r"\.okf-[0-9a-f]{16}\.okftmp")


def temp_name() -> str:
    """A fresh temp file name: ``.okf-<16 hex digits>.okftmp``, 28 bytes whatever it stands for."""
    return f".okf-{os.urandom(8).hex()}{TEMP_SUFFIX}"


def is_temp_name(name: str) -> bool:
    """A temp file name okfgit makes (``temp_name``), or one an earlier okfgit made and a killed
    run may have left: ``.<name>.<random>.okftmp``."""
    if not name.endswith(TEMP_SUFFIX) or not name.startswith("."):
        return False
    return bool(_TEMP_NAME.fullmatch(name)) or name.count(".") >= 3


def sweep_temp(folders: Iterable[Path], older_than_ns: int, *, recursive: bool = False) -> list[Path]:
    """Remove the temp files a killed okfgit left in ``folders`` (okfgit's own pattern only,
    regular files only, last modified before ``older_than_ns``: the start of the lock
    holder, so a temp file of a live writer is never touched). Returns what was removed."""
    removed: list[Path] = []
    stack = [str(f) for f in set(folders)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if recursive and entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                    stack.append(entry.path)
                    continue
                if not is_temp_name(entry.name) or not entry.is_file(follow_symlinks=False):
                    continue
                if entry.stat(follow_symlinks=False).st_mtime_ns >= older_than_ns:
                    continue
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            except OSError:
                continue
    return removed
