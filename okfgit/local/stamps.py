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
  tuples (order-independent: no sort and no string work per file).

Two checks: **shallow** (the folders only: cost independent of the number of files; git
hooks use it, since an in-place edit of a memory file does not change what git did) and
**deep** (every entry: what ``okfgit sync`` itself and the agents' session hooks use, so an
in-place edit is captured). Standard library only: this runs on every git checkout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import NamedTuple

from okfgit.local import paths

ABSENT = "absent"
_MASK = (1 << 64) - 1


class Scan(NamedTuple):
    """What ``scan`` saw: the digest, the newest mtime, each folder's (inode, mtime), and
    whether every file at or after the ``since`` it was given is one okfgit wrote."""

    digest: str
    newest: int
    dirs: dict[str, list[int]]
    vouched: bool = True


def scan(memory_dir: str, since: int | None = None,
         okfgit_wrote: Callable[[str, int, int], bool] | None = None) -> Scan:
    """Every entry under ``memory_dir`` (a missing folder gives digest ``absent``). With
    ``since`` and ``okfgit_wrote``, the same walk also says whether every file with an
    mtime at or after ``since`` is one okfgit wrote (``record``)."""
    try:
        root = os.lstat(memory_dir)
    except OSError:
        return Scan(ABSENT, 0, {})
    newest = root.st_mtime_ns
    dirs = {".": [root.st_ino, root.st_mtime_ns]}
    total = hash((root.st_ino, root.st_size, root.st_mtime_ns))
    count = 0
    vouched = True
    check = since is not None and okfgit_wrote is not None
    after = since if since is not None else 0
    stack = [("", memory_dir)]
    while stack:
        rel, folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                mtime = st.st_mtime_ns
                if mtime > newest:  # noqa: PLR1730 - cheaper than max() on 10,000 files
                    newest = mtime
                total += hash((st.st_ino, st.st_size, mtime))
                count += 1
                if entry.is_dir(follow_symlinks=False):
                    dirs[rel + entry.name] = [st.st_ino, mtime]
                    stack.append((f"{rel}{entry.name}/", entry.path))
                elif check and vouched and mtime >= after:
                    assert okfgit_wrote is not None
                    vouched = okfgit_wrote(entry.path, st.st_size, mtime)
    return Scan(f"{count}:{total & _MASK:016x}", newest, dirs, vouched)


def path(common_dir: str) -> str:
    return paths.sync_stamp(common_dir)


def matches(common_dir: str, *, deep: bool = True) -> bool:
    """True when the memory folder is as the last sync left it (see the module docstring)."""
    try:
        with open(path(common_dir), encoding="utf-8") as fh:
            data = json.load(fh)
        since = int(data["since"])
        memory_dir = str(data["memory_dir"])
        if deep:
            seen = scan(memory_dir)
            return seen.digest == data["digest"] and seen.newest < since
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


def vouches(common_dir: str) -> bool:
    """The memory folder is as the last sync left it (a deep ``matches``) and that sync's
    capture left nothing waiting (``clean``): a capture now would find nothing to take."""
    try:
        with open(path(common_dir), encoding="utf-8") as fh:
            if json.load(fh).get("clean") is not True:
                return False
    except (OSError, ValueError, AttributeError):
        return False
    return matches(common_dir, deep=True)


def save(common_dir: str, memory_dir: str, since: int,
         okfgit_wrote: Callable[[str, int, int], bool] | None = None, clean: bool = False) -> None:
    """Write the stamp for ``memory_dir`` as it is now (``record``); only a cache, so a
    failed write is ignored (the next sync does the full work). With ``okfgit_wrote`` the
    stamp's ``since`` moves past the files okfgit wrote while the sync ran (``record``);
    ``clean``: the capture took every file it could and left none skipped or waiting."""
    from pathlib import Path

    from okfgit import fsutil  # not on the no-op path
    from okfgit.errors import OkfError

    try:
        fsutil.atomic_write(Path(path(common_dir)), record(memory_dir, since, okfgit_wrote, clean), fsync=False)
    except (OkfError, OSError):
        pass


def record(memory_dir: str, since: int, okfgit_wrote: Callable[[str, int, int], bool] | None = None,
           clean: bool = False) -> bytes:
    """The stamp bytes for ``memory_dir`` as it is now, for a sync that started at file-system
    time ``since`` (ns); the caller writes them atomically.

    Files newer than ``since`` were written while the sync ran. When every one of them is a
    file okfgit itself wrote in that time (``okfgit_wrote(path, size, mtime_ns)``: the
    projection state records exactly that size and mtime), nothing an agent wrote can hide
    among them, so the stamp vouches for them (its ``since`` moves past the newest) and the
    next sync is a no-op; otherwise ``since`` stays, and the next sync looks again. One walk
    of the folder gives both this and the digest."""
    seen = scan(memory_dir, since, okfgit_wrote)
    if okfgit_wrote is not None and seen.vouched and seen.digest != ABSENT:
        since = max(since, seen.newest) + 1
    data = {"memory_dir": memory_dir, "since": since, "digest": seen.digest, "dirs": seen.dirs, "clean": clean}
    return json.dumps(data, separators=(",", ":")).encode("utf-8") + b"\n"
