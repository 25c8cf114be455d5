"""Sync's own no-op stamp: a digest of the memory folder's listing after the last sync.

The projection fast path (``fastpath.py``) already proves that the tiers and every file
projection owns are as it left them. Capture also needs to know that no agent added or
edited a memory file in place (an in-place edit does not change the folder's mtime), so
sync records ``(path, size, mtime_ns)`` of every file in the memory folder as one digest,
and the file-system time at which it started (``since``: the mtime of the lock file it
had just written). A file whose mtime is at or after ``since`` may have been written by
an agent while that sync was running, after capture had read the folder: then the stamp
is not trusted and the next sync does the full work (which writes a fresh stamp).
Standard library only: this runs on every git checkout.
"""

from __future__ import annotations

import hashlib
import json
import os

STAMP = "sync.json"
ABSENT = "absent"


def scan(memory_dir: str) -> tuple[str, int]:
    """(digest of every file's path, size and mtime under ``memory_dir``, newest mtime_ns).

    A missing folder gives ``("absent", 0)``.
    """
    if not os.path.isdir(memory_dir):
        return ABSENT, 0
    h = hashlib.sha1()
    newest = 0
    for folder, dirs, files in os.walk(memory_dir):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            newest = max(newest, st.st_mtime_ns)
            rel = os.path.relpath(full, memory_dir)
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest(), newest


def digest(memory_dir: str) -> str:
    """The digest part of ``scan``."""
    return scan(memory_dir)[0]


def path(common_dir: str) -> str:
    return os.path.join(common_dir, "okf", STAMP)


def matches(common_dir: str) -> bool:
    """True when the memory folder recorded by the last sync still has the same listing,
    and nothing in it is as new as that sync's start."""
    try:
        with open(path(common_dir), encoding="utf-8") as fh:
            data = json.load(fh)
        found, newest = scan(str(data["memory_dir"]))
        return found == data["digest"] and newest < int(data["since"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def record(common_dir: str, memory_dir: str, since: int) -> bytes:
    """The stamp bytes for ``memory_dir`` as it is now, for a sync that started at file-system
    time ``since`` (ns); the caller writes them atomically."""
    found, _ = scan(memory_dir)
    return json.dumps({"memory_dir": memory_dir, "digest": found, "since": since}).encode("utf-8") + b"\n"
