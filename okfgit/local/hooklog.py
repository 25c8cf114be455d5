"""The git hooks' error log, ``<git common dir>/okf/hook.log``.

The hook scripts append to it in shell (they cannot start Python to log that Python
failed); okfgit only reads it, for ``hooks status`` and ``status``. An entry is a header
line (when, which hook, exit status) followed by indented lines of okfgit's output.
"""

from __future__ import annotations

import os

from okfgit.local import paths


def last_error(common_dir: paths.StrPath) -> str | None:
    """The last entry in the hook log on one line: its header and okfgit's last word on it;
    None when there is no log or it is empty."""
    try:
        lines = paths.hook_log(common_dir).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    starts = [i for i, line in enumerate(lines) if line and not line.startswith(" ")]
    if not starts:
        return None
    details = [line.strip() for line in lines[starts[-1] + 1:] if line.strip()]
    return lines[starts[-1]] + (f" | {details[-1]}" if details else "")


def error_since_last_sync(common_dir: paths.StrPath) -> str | None:
    """``last_error``, unless a sync succeeded after it was logged (the sync stamp is newer
    than the log): an error a later sync already got past is history, not news."""
    error = last_error(common_dir)
    if error is None:
        return None
    try:
        logged = paths.hook_log(common_dir).stat().st_mtime_ns
        synced = os.stat(paths.sync_stamp(common_dir)).st_mtime_ns
    except OSError:
        return error
    return None if synced >= logged else error
