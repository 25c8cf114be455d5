"""Sync's own no-op stamp: a digest of the memory folder's listing after the last sync.

The projection fast path (``fastpath.py``) already proves that the tiers and every file
projection owns are as it left them. Capture also needs to know that no agent added or
edited a memory file in place (an in-place edit does not change the folder's mtime), so
sync records ``(path, size, mtime_ns)`` of every file in the memory folder as one digest.
Standard library only: this runs on every git checkout.
"""

from __future__ import annotations

import hashlib
import json
import os

STAMP = "sync.json"


def digest(memory_dir: str) -> str:
    """A digest of every file's path, size and mtime under ``memory_dir`` (absent: ``absent``)."""
    if not os.path.isdir(memory_dir):
        return "absent"
    h = hashlib.sha1()
    for folder, dirs, files in os.walk(memory_dir):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            rel = os.path.relpath(full, memory_dir)
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def path(common_dir: str) -> str:
    return os.path.join(common_dir, "okf", STAMP)


def matches(common_dir: str) -> bool:
    """True when the memory folder recorded by the last sync still has the same listing."""
    try:
        with open(path(common_dir), encoding="utf-8") as fh:
            data = json.load(fh)
        return isinstance(data, dict) and digest(str(data["memory_dir"])) == data["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def record(common_dir: str, memory_dir: str) -> bytes:
    """The stamp bytes for ``memory_dir`` as it is now (the caller writes them atomically)."""
    return json.dumps({"memory_dir": memory_dir, "digest": digest(memory_dir)}).encode("utf-8") + b"\n"
