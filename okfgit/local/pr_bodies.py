"""Pull request bodies kept for ``promote --open-pr`` (where: ``paths.pr_body``).

The body goes to ``gh pr create --body-file`` (a body on the command line overflows the
argument list for a large promotion), and it stays here afterwards, so a push or a ``gh``
that fails loses nothing: the message names the file and the commands that use it.
"""

from __future__ import annotations

from pathlib import Path

from okfgit.fsutil import atomic_write
from okfgit.local import paths


def keep(common_dir: Path, branch: str, text: str, part: int = 0, full: bool = False) -> Path:
    """Write a body (atomically, durably: it may be all that is left of a failed ``gh``); return its path."""
    path = paths.pr_body(common_dir, branch, part, full)
    atomic_write(path, text.encode("utf-8"), fsync=True)
    return path
