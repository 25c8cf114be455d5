"""The write journal: what an okfgit commit into a checked-out branch is in the middle of.

A commit into a checked-out branch has three steps that cannot be one atomic act: the
branch ref moves, then the written files land in the working tree, then the index takes
their new entries. A process killed between them must not leave the index holding the
old blobs, because the user's next ``git commit`` would then revert okfgit's commit. So
before each step okfgit writes down what it is doing, in
``<git common dir>/okf/journal/<worktree>.json`` (``paths.journal``; one file per working
tree, since each has its own index and HEAD):

- ``pid`` and ``since``: the writer;
- ``index_lock``: ``[st_dev, st_ino]`` of the ``index.lock`` okfgit created, so that a
  later run can tell a lock a killed okfgit left (remove it) from one a live git process
  holds (never touch it);
- ``intent``: the ref, its old and new commit, and every written path with the blob OID
  and mode the new commit gives it (null for a deletion), recorded before the ref moves.

The record is removed when the write is complete. Any later write (under the same
per-repository write lock, so the writer is known to be gone) reads it first and
finishes the job: ``git/recovery.py``. Pure Python and JSON, like ``state``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from okfgit import fsutil
from okfgit.errors import UnwritableError
from okfgit.local import fastpath, paths

INDEX_SCRATCH = "okf-index.okftmp"  # where libgit2 writes the new index before it goes into index.lock
INDEX_LOCK_SCRATCH = "okf-index-lock.okftmp"  # index.lock's bytes before they are linked to that name
CRASH_ENV = "OKFGIT_TEST_CRASH_AT"  # tests only: die by SIGKILL at a named step of a write


class Intent(NamedTuple):
    """A commit about to move ``ref`` from ``old`` to ``new`` and then update ``paths``."""

    ref: str
    old: str | None
    new: str
    paths: dict[str, tuple[str, int] | None]  # repo path -> (blob oid, mode) at ``new``; None: deleted

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "old": self.old, "new": self.new,
                "paths": {p: (list(v) if v is not None else None) for p, v in sorted(self.paths.items())}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Intent":
        paths: dict[str, tuple[str, int] | None] = {}
        for path, value in dict(data["paths"]).items():
            paths[str(path)] = (str(value[0]), int(value[1])) if value is not None else None
        old = data.get("old")
        return cls(str(data["ref"]), str(old) if old else None, str(data["new"]), paths)


class Record:
    """One working tree's journal entry (a plain class: every command imports this module)."""

    __slots__ = ("pid", "since", "index_lock", "intent")

    def __init__(self, pid: int, since: float, index_lock: tuple[int, int] | None = None,
                 intent: Intent | None = None) -> None:
        self.pid = pid
        self.since = since
        self.index_lock = index_lock
        self.intent = intent

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and (self.pid, self.since, self.index_lock, self.intent) == (
            other.pid, other.since, other.index_lock, other.intent)

    def __repr__(self) -> str:
        return f"Record(pid={self.pid}, since={self.since}, index_lock={self.index_lock}, intent={self.intent})"

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "since": self.since,
                "index_lock": list(self.index_lock) if self.index_lock else None,
                "intent": self.intent.to_json() if self.intent else None}


def save(file: Path, record: Record, *, durable: bool) -> None:
    """Write the record atomically; ``durable`` fsyncs it (the intent must survive a power cut)."""
    data = json.dumps(record.to_json(), sort_keys=True).encode() + b"\n"
    fsutil.atomic_write(file, data, fsync=durable)


def load(file: Path) -> Record | None:
    """The record, or None when there is none. A damaged record reads as one with no
    intent: its writer is gone and nothing in it can be trusted to finish."""
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return None
    try:
        data = json.loads(raw)
        lock = data.get("index_lock")
        intent = data.get("intent")
        return Record(int(data.get("pid", 0)), float(data.get("since", 0.0)),
                      (int(lock[0]), int(lock[1])) if lock else None,
                      Intent.from_json(intent) if intent else None)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return Record(0, 0.0)


def pending(file: Path) -> bool:
    """A record is there (one stat: cheap enough for the sync fast path)."""
    return os.path.lexists(file)


def needs_recovery(file: Path) -> bool:
    """A record, or a temp file of one a killed writer left half-written, in ``file``'s folder."""
    if pending(file):
        return True
    try:
        return any(fsutil.is_temp_name(name) for name in os.listdir(file.parent))
    except OSError:
        return False


def left_behind(repo_path: Path) -> bool:
    """Whether a killed okfgit write in the repository at ``repo_path`` (a working tree root)
    waits to be finished. Standard library only: every command asks this of every tier
    before it reads them."""
    dotgit = os.path.join(repo_path, ".git")
    try:
        gitdir = dotgit if os.path.isdir(dotgit) else fastpath.gitfile_target(dotgit)
    except (fastpath.Unsure, OSError, UnicodeDecodeError):
        return False
    return needs_recovery(paths.journal(fastpath.common_dir(gitdir), gitdir))


def sweep(common_dir: Path, gitdir: Path, workdir: Path, since_ns: int, folders: Iterable[Path] = ()) -> list[Path]:
    """Remove what killed okfgit writes left in a repository, holding the write lock taken at
    ``since_ns``: ``.okftmp`` temp files (okfgit's pattern only, older than ``since_ns``) in
    ``folders`` (those the write touches, inside ``workdir``), in ``<git common dir>/okf/``
    and its journal folder; the index scratch files; and libgit2's ``tmp_object_git2_*``."""
    file = paths.journal(common_dir, gitdir)
    places = {f for f in folders if f.is_relative_to(workdir)}
    places |= {paths.okf_dir(common_dir), file.parent, gitdir}  # the git dir: the index scratch's temp file
    removed = fsutil.sweep_temp(places, since_ns)
    for name in (INDEX_SCRATCH, INDEX_SCRATCH + ".lock", INDEX_LOCK_SCRATCH):
        scratch = gitdir / name
        try:
            if scratch.stat().st_mtime_ns < since_ns:
                scratch.unlink()
                removed.append(scratch)
        except OSError:
            pass
    return removed + sweep_objects(common_dir / "objects", since_ns)


def sweep_placed(memory: Path | None, placed: Iterable[str], since_ns: int,
                 temp: Iterable[str] | None = None) -> None:
    """Temp files a killed sync left where projection writes: the memory folder (all of it)
    and the folders of the other files it ``placed``. Only okfgit's own pattern, only files
    older than this sync's lock (``fsutil.sweep_temp``). ``temp``: the temp files in the
    memory folder (relative to it) a scan at the start of this sync found there (none is
    made after it but this sync's own, which are never left)."""
    folders = {os.path.dirname(p) for p in placed}  # strings: one per memory file
    if memory is None:
        fsutil.sweep_temp([Path(f) for f in folders], since_ns)
        return
    inside = str(memory).rstrip(os.sep) + os.sep
    fsutil.sweep_temp([Path(f) for f in folders if not (f + os.sep).startswith(inside)], since_ns)
    if temp is None:
        fsutil.sweep_temp([memory], since_ns, recursive=True)
        return
    for rel in temp:
        fsutil.sweep_temp([(memory / rel).parent], since_ns)


_SWEPT: set[str] = set()  # okf folders this process has looked at (``sweep_okf_dir``)


def sweep_okf_dir(common_dir: Path) -> list[Path]:
    """Temp files a killed okfgit left in ``<git common dir>/okf/`` (a cache or a stamp it
    was writing when it died), for a process about to write a cache there outside any
    commit: a tier read after the kill may never be written again. Once per folder and
    process, only when a temp file is there (one listing), and only holding the write lock,
    taken without waiting: a writer that holds it sweeps the folder itself (``sweep``)."""
    key = os.path.abspath(common_dir)
    if key in _SWEPT:
        return []
    _SWEPT.add(key)
    folder = paths.okf_dir(common_dir)
    try:
        if not any(fsutil.is_temp_name(name) for name in os.listdir(folder)):
            return []
    except OSError:
        return []
    from okfgit.local import lock

    held = lock.acquire(paths.lock(common_dir), 0)
    if held is None:
        return []
    with held:
        return fsutil.sweep_temp([folder], held.since_ns)


def sweep_objects(objects: Path, since_ns: int) -> list[Path]:
    """Remove libgit2's ``tmp_object_git2_*`` files in ``objects`` older than ``since_ns``, when
    the caller took the repository's write lock: okfgit writes objects only holding that
    lock, and a write killed while libgit2 wrote one left it (a live writer's is younger)."""
    try:
        entries = list(os.scandir(objects))
    except OSError:
        return []
    removed: list[Path] = []
    for entry in entries:
        try:
            if (entry.name.startswith("tmp_object_git2_") and entry.is_file(follow_symlinks=False)
                    and entry.stat(follow_symlinks=False).st_mtime_ns < since_ns):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def crash_point(environ: Mapping[str, str], name: str) -> None:
    """For the crash tests only (``OKFGIT_TEST_CRASH_AT=<name>``): die at a named step of a
    write, as a kill -9 would. Nothing else reads the variable."""
    if environ.get(CRASH_ENV) == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def clear(file: Path) -> None:
    try:
        file.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise UnwritableError(f"cannot remove the write journal {file}: {exc.strerror or exc}") from exc
