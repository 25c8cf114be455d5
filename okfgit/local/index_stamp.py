"""The last index found in step with HEAD, so that ``status`` asks git only when it changed.

A record in the repository's store (``local/store.py``), one per working tree (by its git
dir), holds the last check (``plan.index_behind``) that found no path okfgit committed whose
index entry differs from HEAD: the tier's KB prefix, HEAD, and the index file's stat (inode,
size, mtime, ctime) taken before git read it. The answer depends on nothing else (HEAD names
its history too).

git replaces an index by renaming a new file over it, so a new index has a new inode while
the old one still exists, and an inode reused later comes with a later mtime, unless the
new index was written in the clock tick of the recorded one. So a record is kept only when
the store's write of it is later than that index's mtime (git's racy rule: the file system's
clock at the write is the database file's mtime); otherwise git is asked again next time.
Only a cache: a failed write is ignored. Standard library only.
"""

from __future__ import annotations

import os

from okfgit.local.store import Store

Token = tuple[int, int, int, int]


def token(gitdir: str) -> Token | None:
    """The index file's stat (None when there is none)."""
    try:
        st = os.stat(os.path.join(gitdir, "index"))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _name(gitdir: str) -> str:
    return f"index-in-step {gitdir}"


def in_step(store: Store, gitdir: str, prefix: str, head: str) -> bool:
    """The index is the one the record found in step with this HEAD."""
    now = token(gitdir)
    data = store.record(_name(gitdir))
    return now is not None and data == {"prefix": prefix, "head": head, "index": list(now)}


def save(store: Store, gitdir: str, prefix: str, head: str, seen: Token) -> None:
    """Record that the index whose stat was ``seen`` (before the check) is in step with
    ``head``; written at once, and taken back when the write fell in the index's clock tick."""
    name = _name(gitdir)
    store.stage_record(name, {"prefix": prefix, "head": head, "index": list(seen)})
    if not store.save():
        return
    written = store.mtime_ns()
    if written is None or written <= seen[2]:
        store.stage_record(name, None)
        store.save()
