"""The sync lock: one sync at a time per repository, and a crashed holder frees it.

The lock is ``fcntl.flock`` on ``<git common dir>/okf/sync.lock``. The kernel releases a
flock when its holder's file is closed, which includes the holder dying (even by
SIGKILL), so a lock never outlives its process and needs no stale-lock detection. The
file also records the holder's pid and start time for ``status``; those bytes are
information, never the lock. The file is never deleted: unlinking a flock file lets two
processes lock two different inodes under one name.

The same lock is every write's lock too (``Repo.commit_paths`` takes it): a flock held
through one open file conflicts with a second open of the same file even in the same
process, so ``acquire`` is re-entrant per process: a process that holds the lock (sync,
which commits its capture inside) gets the held lock back, counted, and only the outermost
``release`` drops it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from okfgit.errors import BusyError, UnwritableError
from okfgit.local import paths

_POLL_S = 0.05
WRITE_WAIT_S = 30.0  # a write waits this long for another okfgit write (a sync) to finish


@dataclass(slots=True)
class Lock:
    """A held lock; release it with ``release()`` or by leaving the ``with`` block."""

    path: Path
    fd: int
    depth: int = 1
    since_ns: int = 0  # when this process took it: anything a killed holder left is older

    def release(self) -> None:
        if self.fd < 0:
            return
        self.depth -= 1
        if self.depth > 0:
            return
        _HELD.pop(_key(self.path), None)
        try:
            os.ftruncate(self.fd, 0)  # no holder recorded any more
        except OSError:
            pass
        os.close(self.fd)  # closing drops the flock
        self.fd = -1

    def __enter__(self) -> "Lock":
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def acquire(path: Path, timeout_s: float, *, now: Callable[[], float] = time.time) -> Lock | None:
    """Take the lock at ``path``, waiting up to ``timeout_s`` seconds; None if another
    process still holds it then. ``now`` stamps the holder record (pass ``ctx.now``).
    Re-entrant: a lock this process already holds is returned at once, one level deeper."""
    mine = _HELD.get(_key(path))
    if mine is not None and mine.fd >= 0:
        mine.depth += 1
        return mine
    fd = _open(path)
    deadline = time.monotonic() + max(timeout_s, 0.0)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(_POLL_S)
    _record(fd, now())
    lock = Lock(path, fd, since_ns=time.time_ns())
    _HELD[_key(path)] = lock
    return lock


_HELD: dict[str, Lock] = {}


def _key(path: Path) -> str:
    return os.path.abspath(path)


def held(path: Path) -> bool:
    """This process holds the lock at ``path``."""
    return _key(path) in _HELD


def _open(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW: the lock is a plain file okfgit created, never a link to elsewhere
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise UnwritableError(f"cannot open the sync lock {path}: {exc.strerror or exc}") from exc


def _record(fd: int, when: float) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
    data = f"pid {os.getpid()}\nsince {stamp}\n".encode()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError:
        pass  # the record is for humans; the flock is what excludes


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds the lock now, as recorded in the lock file."""

    pid: int | None
    since: str | None

    def describe(self) -> str:
        who = f"pid {self.pid}" if self.pid is not None else "an unknown process"
        return f"{who} since {self.since}" if self.since else who


def holder(path: Path) -> Holder | None:
    """The current holder, or None when nobody holds the lock (whatever the file says:
    a crashed holder's record is stale because the kernel already released its lock)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            # a shared probe conflicts only with a holder, not with other probes
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _parse(os.pread(fd, 4096, 0))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _parse(data: bytes) -> Holder:
    fields = dict(line.split(" ", 1) for line in data.decode("ascii", "replace").splitlines() if " " in line)
    pid = fields.get("pid", "")
    return Holder(int(pid) if pid.isdigit() else None, fields.get("since"))


def write_lock(common_dir: Path, where: Path, wait_s: float = WRITE_WAIT_S, now: Callable[[], float] = time.time) -> Lock:
    """The write lock of the repository whose common dir is ``common_dir`` (``where``: its
    working tree, for the message), re-entrant in this process; BusyError when another okfgit
    still holds it after ``wait_s``."""
    path = paths.lock(common_dir)
    held = acquire(path, wait_s, now=now)
    if held is None:
        who = holder(path)
        raise BusyError(
            f"{where}: another okfgit write is running ({who.describe() if who else 'a sync'}) "
            f"and did not finish within {wait_s:g} s; nothing was changed, retry"
        )
    return held
