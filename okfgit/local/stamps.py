"""Sync's own no-op stamp: the memory folder as the last sync left it.

The projection fast path (``fastpath.py``) already proves that the tiers and every file
projection owns are as it left them. Capture also needs to know that no agent added,
removed or edited a memory file since. The stamp, ``<git common dir>/okf/sync.json``,
records after each successful sync:

- ``since``: the file-system time at which that sync started (the mtime of the lock file
  it had just written). Anything in the folder with an mtime at or after it may have been
  written while that sync ran, after capture had read the folder, so it is not vouched for;
- ``dirs``: inode and mtime of the folder and each folder below it (a file added, removed
  or renamed changes its folder's mtime);
- ``digest``: inode, size and mtime of every entry, summed as 64-bit hashes of integer
  tuples (order-independent: no sort and no string work per file);
- ``held``: a branch switch held the capture for the next sync outside a git hook (no record
  proved the branch the memories were written on): git hooks leave it, and the deep check
  never calls that sync a no-op.

Two checks: **shallow** (the folders only: cost independent of the number of files; git
hooks use it, since an in-place edit of a memory file does not change what git did) and
**deep** (every entry: what ``okfgit sync`` itself and the agents' session hooks use, so an
in-place edit is captured). The deep check also compares the active run's working tree
(``job``: its files, ``.git`` aside) with the stamp, so a STATE.md an agent edited is taken by
the next ``okfgit sync``. Standard library only: this runs on every git checkout.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from okfgit.local import paths

if TYPE_CHECKING:
    from okfgit.local.lock import Lock

ABSENT = "absent"
_MASK = (1 << 64) - 1
_TOP_FLAGS = os.O_RDONLY | os.O_DIRECTORY  # the memory folder as its path names it (a link to it is followed)
_DIR_FLAGS = _TOP_FLAGS | os.O_NOFOLLOW  # a folder below it: one the listing found, never a link put there since


class Scan(NamedTuple):
    """What ``scan`` saw: the digest, the newest mtime, each folder's (inode, mtime), and
    whether every file at or after the ``since`` it was given is one okfgit wrote. With
    ``keep``, also every entry's (inode, size, mtime, is a folder, is a symlink) by path
    relative to the folder, each folder's names, the digest's sum, and the names of okfgit's
    temp files there (``fsutil.is_temp_name``)."""

    digest: str
    newest: int
    dirs: dict[str, list[int]]
    vouched: bool = True
    entries: dict[str, tuple[int, int, int, bool, bool]] | None = None
    temp: tuple[str, ...] = ()
    names: dict[str, set[str]] | None = None  # folder ("" for the top) -> the names in it
    total: int = 0
    root: tuple[int, int, int] = (0, 0, 0)  # the top folder's (inode, size, mtime)


def scan(memory_dir: str, since: int | None = None,
         okfgit_wrote: Callable[[str, int, int], bool] | None = None, keep: bool = False) -> Scan:
    """Every entry under ``memory_dir`` (a missing folder gives digest ``absent``). With
    ``since`` and ``okfgit_wrote``, the same walk also says whether every file with an
    mtime at or after ``since`` is one okfgit wrote (``record``)."""
    try:
        root = os.lstat(memory_dir)
    except OSError:
        return Scan(ABSENT, 0, {}, entries={} if keep else None)
    newest = root.st_mtime_ns
    dirs = {".": [root.st_ino, root.st_mtime_ns]}
    total = hash((root.st_ino, root.st_size, root.st_mtime_ns))
    count = 0
    vouched = True
    check = since is not None and okfgit_wrote is not None
    after = since if since is not None else 0
    entries: dict[str, tuple[int, int, int, bool, bool]] | None = {} if keep else None
    names: dict[str, set[str]] = {}
    temp: list[str] = []
    is_temp_name: Callable[[str], bool] = bool
    if keep:
        from okfgit import fsutil  # not on the no-op path

        is_temp_name = fsutil.is_temp_name
    stack = [("", memory_dir)]
    while stack:
        rel, folder = stack.pop()
        here: set[str] = set()
        if keep:
            names[rel.rstrip("/")] = here
        # Listed through an open descriptor: each entry's stat is then an fstatat of its name,
        # not a walk of its whole path (a fifth less time for 10,000 files).
        fd = os.open(folder, _DIR_FLAGS if rel else _TOP_FLAGS)
        try:
            with os.scandir(fd) as found:
                for entry in found:
                    st = entry.stat(follow_symlinks=False)
                    mtime = st.st_mtime_ns
                    if mtime > newest:  # noqa: PLR1730 - cheaper than max() on 10,000 files
                        newest = mtime
                    total += hash((st.st_ino, st.st_size, mtime))
                    count += 1
                    is_dir = entry.is_dir(follow_symlinks=False)
                    if entries is not None:
                        name = entry.name
                        entries[rel + name] = (st.st_ino, st.st_size, mtime, is_dir, entry.is_symlink())
                        here.add(name)
                        if name.endswith(".okftmp") and is_temp_name(name):
                            temp.append(rel + name)
                    if is_dir:
                        dirs[rel + entry.name] = [st.st_ino, mtime]
                        stack.append((f"{rel}{entry.name}/", os.path.join(folder, entry.name)))
                    elif check and vouched and mtime >= after:
                        assert okfgit_wrote is not None
                        vouched = okfgit_wrote(os.path.join(folder, entry.name), st.st_size, mtime)
        finally:
            os.close(fd)
    return Scan(f"{count}:{total & _MASK:016x}", newest, dirs, vouched, entries, tuple(temp),
                names if keep else None, total, (root.st_ino, root.st_size, root.st_mtime_ns))


def after_writes(memory_dir: str, first: Scan, written: Iterable[str], since: int,
                 okfgit_wrote: Callable[[str, int, int], bool]) -> Scan | None:
    """What ``scan(memory_dir, since, okfgit_wrote)`` would see now, from ``first`` (a kept
    scan taken at the start, under the lock) and the files okfgit ``written`` since
    (relative paths: written, touched or removed), without a stat of every other file.

    Each folder is listed (names only) and must hold exactly the names ``first`` and the
    writes account for; None when one does not (something else came or went: the caller
    scans in full). A file changed in place by someone else meanwhile is not seen, as a
    shallow check would not see it: the next deep check, which scans, finds it."""
    if first.entries is None or first.names is None:
        return None
    entries = first.entries
    changed: dict[str, tuple[int, int, int, bool, bool] | None] = {}
    for rel in dict.fromkeys(written):
        try:
            st = os.lstat(os.path.join(memory_dir, rel))
        except FileNotFoundError:
            changed[rel] = None
            continue
        except OSError:
            return None
        changed[rel] = (st.st_ino, st.st_size, st.st_mtime_ns, stat.S_ISDIR(st.st_mode), stat.S_ISLNK(st.st_mode))
    names = {folder: set(inside) for folder, inside in first.names.items()}
    for rel, now in changed.items():
        folder, _, name = rel.rpartition("/")
        if folder not in names or (now is not None and now[3]) or (entries.get(rel) or (0, 0, 0, False))[3]:
            return None  # a new folder, or a folder written: a full scan says what it holds
        (names[folder].add if now is not None else names[folder].discard)(name)
    try:
        root = os.lstat(memory_dir)
        for folder, inside in names.items():
            if set(os.listdir(os.path.join(memory_dir, folder) if folder else memory_dir)) != inside:
                return None
        folders = {folder: os.lstat(os.path.join(memory_dir, folder)) for folder in names if folder}
    except OSError:
        return None
    total = first.total - hash(first.root) + hash((root.st_ino, root.st_size, root.st_mtime_ns))
    count = len(entries)
    now_entries = [*changed.items(), *((f, _dir_entry(st)) for f, st in folders.items())]
    for rel, now in now_entries:
        before = entries.get(rel)
        if before is not None:
            total -= hash(before[:3])
            count -= 1
        if now is not None:
            total += hash(now[:3])
            count += 1
    current = {rel: now for rel, now in now_entries}

    def mtimes() -> Iterator[tuple[str, tuple[int, int, int, bool, bool]]]:
        for rel, entry in entries.items():
            if rel not in current:
                yield rel, entry
        for rel, now in current.items():
            if now is not None:
                yield rel, now

    fresh = [root.st_mtime_ns, *(now[2] for now in current.values() if now is not None)]
    held = max((before[2] for rel in current if (before := entries.get(rel)) is not None), default=-1)
    if held < first.newest:  # the newest time is still where it was: no pass over every entry
        newest = max(first.newest, *fresh)
    else:
        newest = max(fresh + [entry[2] for _, entry in mtimes()])
    vouched = True
    # every file at or after ``since`` must be one okfgit wrote: only the written ones can be, unless
    # the first scan already saw one that new
    candidates = mtimes() if first.newest >= since else ((rel, now) for rel, now in current.items() if now)
    for rel, entry in candidates:
        if not entry[3] and entry[2] >= since and not okfgit_wrote(os.path.join(memory_dir, rel), entry[1], entry[2]):
            vouched = False
            break
    dirs: dict[str, list[int]] = {".": [root.st_ino, root.st_mtime_ns]}
    dirs.update((f, [st.st_ino, st.st_mtime_ns]) for f, st in folders.items())
    return Scan(f"{count}:{total & _MASK:016x}", newest, dirs, vouched)


def _dir_entry(st: os.stat_result) -> tuple[int, int, int, bool, bool]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, True, False)


def path(common_dir: str) -> str:
    return paths.sync_stamp(common_dir)


def held(common_dir: str) -> bool:
    """The last sync held its capture for a sync outside a git hook: no record proved the branch
    the memories were written on (spec/okf-capture-sync.md §8)."""
    try:
        return _load(common_dir).get("held") is True
    except (OSError, ValueError, AttributeError):
        return False


def matches(common_dir: str, *, deep: bool = True) -> bool:
    """True when the memory folder is as the last sync left it (see the module docstring)."""
    try:
        data = _load(common_dir)
        since = int(data["since"])
        memory_dir = str(data["memory_dir"])
        if deep:  # a held capture is for this sync to make
            return not data.get("held") and _as_left(data, scan(memory_dir)) and _job_as_left(data)
        dirs = data["dirs"]
        if not dirs:
            return not os.path.lexists(memory_dir)
        for rel, (ino, mtime) in dirs.items():
            st = os.lstat(memory_dir if rel == "." else os.path.join(memory_dir, rel))
            if st.st_ino != ino or st.st_mtime_ns != mtime or mtime >= since:
                return False
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def clean_scan(common_dir: str) -> tuple[str, Scan] | None:
    """The memory folder and its scan (kept: ``after_writes`` can start from it) when it is
    as the last sync left it (a deep ``matches``) and that sync's capture left nothing
    waiting (``clean``): a capture now would find nothing to take. None otherwise."""
    try:
        data = _load(common_dir)
        if data.get("clean") is not True:
            return None
        memory_dir = str(data["memory_dir"])
        seen = scan(memory_dir, keep=True)
        return (memory_dir, seen) if _as_left(data, seen) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _job_as_left(data: Any) -> bool:
    """The active run's working tree is as the stamp recorded it (True when none was)."""
    job = data.get("job")
    if job is None:
        return True
    digest, newest = job_digest(str(job["root"]))
    return bool(digest == job["digest"] and newest < int(data["since"]))


def job_digest(root: str) -> tuple[str, int]:
    """(digest, newest mtime) of every file and folder under a run's KB root, dot-names (its
    ``.git``) left out: what the deep check compares."""
    total, count, newest = 0, 0, 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            found = list(os.scandir(folder))
        except OSError:
            continue
        for entry in found:
            if entry.name.startswith("."):
                continue
            st = entry.stat(follow_symlinks=False)
            total += hash((st.st_ino, st.st_size, st.st_mtime_ns))
            count += 1
            newest = max(newest, st.st_mtime_ns)
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return f"{count}:{total & _MASK:016x}", newest


def _load(common_dir: str) -> Any:
    with open(path(common_dir), encoding="utf-8") as fh:
        return json.load(fh)


def _as_left(data: Any, seen: Scan) -> bool:
    """The folder ``seen`` now is as the stamp ``data`` recorded it, and nothing in it is as
    new as the sync that wrote the stamp (a change in that sync's clock tick is not vouched for)."""
    return bool(seen.digest == data["digest"] and seen.newest < int(data["since"]))


def save(common_dir: str, memory_dir: str, since: int,
         okfgit_wrote: Callable[[str, int, int], bool] | None = None, clean: bool = False,
         first: Scan | None = None, written: Iterable[str] = (), job: str | None = None, held: bool = False) -> None:
    """Write the stamp for ``memory_dir`` as it is now (``record``), once a sync is done; only
    a cache, so a failed write is ignored (the next sync does the full work). With
    ``okfgit_wrote`` the stamp's ``since`` moves past the files okfgit wrote while the sync
    ran (``record``); ``clean``: the capture took every file it could and left none skipped
    or waiting. ``first``: the folder's kept scan from the start of the sync, and ``written``
    the files the sync wrote there since: the folder is then known from them (``after_writes``)
    without a stat of every file. ``job``: the active run's KB root, whose working tree the
    stamp records too. ``held``: a capture waits for a sync outside a git hook (``held``)."""
    from pathlib import Path

    from okfgit import fsutil  # not on the no-op path
    from okfgit.errors import OkfError

    seen = after_writes(memory_dir, first, written, since, okfgit_wrote) \
        if first is not None and okfgit_wrote is not None else None
    try:
        fsutil.atomic_write(Path(path(common_dir)), record(memory_dir, since, okfgit_wrote, clean, seen, job, held),
                            fsync=False)
    except (OkfError, OSError):
        pass


def record(memory_dir: str, since: int, okfgit_wrote: Callable[[str, int, int], bool] | None = None,
           clean: bool = False, seen: Scan | None = None, job: str | None = None, held: bool = False) -> bytes:
    """The stamp bytes for ``memory_dir`` as it is now, for a sync that started at file-system
    time ``since`` (ns); the caller writes them atomically.

    Files newer than ``since`` were written while the sync ran. When every one of them is a
    file okfgit itself wrote in that time (``okfgit_wrote(path, size, mtime_ns)``: the
    projection state records exactly that size and mtime), nothing an agent wrote can hide
    among them, so the stamp vouches for them (its ``since`` moves past the newest) and the
    next sync is a no-op; otherwise ``since`` stays, and the next sync looks again. One walk
    of the folder gives both this and the digest."""
    if seen is None:
        seen = scan(memory_dir, since, okfgit_wrote)
    if okfgit_wrote is not None and seen.vouched and seen.digest != ABSENT:
        since = max(since, seen.newest) + 1
    data: dict[str, Any] = {"memory_dir": memory_dir, "since": since, "digest": seen.digest, "dirs": seen.dirs,
                            "clean": clean and not held, "held": held}
    if job is not None:
        data["job"] = {"root": job, "digest": job_digest(job)[0]}
    return json.dumps(data, separators=(",", ":")).encode("utf-8") + b"\n"


class Repository(Protocol):
    """The project repository a sync writes to (``okfgit.git.repository.Repo`` is one)."""

    @property
    def common_dir(self) -> Path: ...
    @property
    def gitdir(self) -> Path: ...
    @property
    def workdir(self) -> Path: ...


class SyncStamp:
    """One sync's bookkeeping of the memory folder: made under the sync lock, before capture
    reads the folder; ``finish``-ed once, after projection saved its record. It says
    whether the folder is as the last sync left it (``unchanged``) and whether a capture is
    held for a sync outside a git hook (``holding``), and at the end sweeps the temp files
    killed writes left and saves the stamp for the next sync."""

    __slots__ = ("repo", "since_ns", "started", "first", "holding")

    def __init__(self, repo: Repository, lock: Lock, *, hook: bool) -> None:
        common = str(repo.common_dir)
        self.repo = repo
        self.since_ns = lock.since_ns
        # The file-system clock at the start: a memory file written from now on may be
        # missed by this capture, so the stamp must not vouch for it.
        self.started = os.fstat(lock.fd).st_mtime_ns
        self.first = clean_scan(common)  # no agent wrote a memory since the last sync
        self.holding = hook and held(common)  # git hooks leave a held capture where it is

    @property
    def unchanged(self) -> str | None:
        """The memory folder, when no agent wrote in it since the last sync and that sync's
        capture left nothing waiting: a capture has nothing there to take."""
        return self.first[0] if self.first is not None else None

    def finish(self, memory: Path | None, placed: Iterable[Path], *, done: bool,
               wrote_as: Callable[[str, int, int], bool], clean: bool, job: Path | None) -> None:
        """Sweep what killed writes left in the repository and where projection ``placed``
        files, then, when the sync is ``done`` (nothing failed or was deferred) and knows its
        ``memory`` folder, save the stamp: ``wrote_as`` says which new files okfgit wrote,
        ``clean`` that capture took every file it could, ``job`` the active run's KB root."""
        from okfgit.local import journal  # not on the no-op path

        repo = self.repo
        files = [str(p) for p in placed]
        journal.sweep(repo.common_dir, repo.gitdir, repo.workdir, self.since_ns, {repo.workdir})
        # the folder's scan at the start, if it is of this memory folder
        seen = self.first[1] if self.first is not None and memory is not None and self.first[0] == str(memory) else None
        journal.sweep_placed(memory, files, self.since_ns, seen.temp if seen is not None else None)
        if memory is None or not done:
            return
        save(str(repo.common_dir), str(memory), self.started, wrote_as, clean=clean, first=seen,
             written=_inside(memory, files), job=str(job) if job is not None else None, held=self.holding)


def _inside(memory: Path, placed: list[str]) -> list[str]:
    """The files projection ``placed`` in the memory folder (written, touched, removed or
    left), relative to it: what changed there, and a few that did not."""
    out: list[str] = []
    inside = str(memory).rstrip(os.sep) + os.sep
    for text in placed:  # one per memory file: compared as strings, a Path only for the rest
        if text.startswith(inside):
            out.append(text[len(inside):] if os.sep == "/" else Path(text[len(inside):]).as_posix())
            continue
        try:
            out.append(Path(text).relative_to(memory).as_posix())
        except ValueError:
            continue
    return out
