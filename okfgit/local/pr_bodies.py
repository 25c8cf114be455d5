"""Pull request bodies kept for ``promote --open-pr``: ``<git common dir>/okf/pr/<branch>.md``.

The body goes to ``gh pr create --body-file`` (a body on the command line overflows the
argument list for a large promotion), and it stays here afterwards, so a push or a ``gh``
that fails loses nothing: the message names the file and the commands that use it.
"""

from __future__ import annotations

import re
from pathlib import Path

from okfgit.fsutil import atomic_write

FOLDER = "pr"


def body_path(common_dir: Path, branch: str, part: int = 0) -> Path:
    """Where the body (``part`` 0) or its ``part``-th continuation of ``branch`` is kept."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", branch)
    suffix = f".part-{part}" if part else ""
    return common_dir / "okf" / FOLDER / f"{name}{suffix}.md"


def keep(common_dir: Path, branch: str, text: str, part: int = 0) -> Path:
    """Write a body (atomically, durably: it may be all that is left of a failed ``gh``); return its path."""
    path = body_path(common_dir, branch, part)
    atomic_write(path, text.encode("utf-8"), fsync=True)
    return path
