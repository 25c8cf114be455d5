"""The last index found in step with HEAD, so that ``status`` asks git only when it changed.

``<git common dir>/okf/index.json`` records the last check (``plan.index_behind``) that
found no path okfgit committed whose index entry differs from HEAD: that working tree's git
dir, the tier's KB prefix, HEAD, and the index file's stat (inode, size, mtime, ctime) taken
before git read it. The answer depends on nothing else (HEAD names its history too).

git replaces an index by renaming a new file over it, so a new index has a new inode while
the old one still exists, and an inode reused later comes with a later mtime, unless the
new index was written in the clock tick of the recorded one. So a record is trusted only
when its own mtime is after that index's (git's racy rule); otherwise git is asked again.
Only a cache: a failed write is ignored. Standard library only.
"""

from __future__ import annotations

import json
import os

from okfgit.local import paths

Token = tuple[int, int, int, int]


def token(gitdir: str) -> Token | None:
    """The index file's stat (None when there is none)."""
    try:
        st = os.stat(os.path.join(gitdir, "index"))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def in_step(common_dir: str, gitdir: str, prefix: str, head: str) -> bool:
    """The index is the one the record found in step with this HEAD."""
    now = token(gitdir)
    try:
        with open(paths.index_stamp(common_dir), encoding="utf-8") as fh:
            written = os.fstat(fh.fileno()).st_mtime_ns
            data = json.load(fh)
        return (now is not None and data["gitdir"] == gitdir and data["prefix"] == prefix and data["head"] == head
                and tuple(data["index"]) == now and written > now[2])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def save(common_dir: str, gitdir: str, prefix: str, head: str, seen: Token) -> None:
    """Record that the index whose stat was ``seen`` (before the check) is in step with ``head``."""
    from pathlib import Path

    from okfgit import fsutil
    from okfgit.errors import OkfError

    data = {"gitdir": gitdir, "prefix": prefix, "head": head, "index": list(seen)}
    try:
        fsutil.atomic_write(Path(paths.index_stamp(common_dir)), json.dumps(data).encode("utf-8") + b"\n", fsync=False)
    except (OkfError, OSError):
        pass
