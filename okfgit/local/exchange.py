"""The record of the global tier's exchanges with its remote: ``<git common dir>/okf/exchange.json``
in the global tier's repository (``paths.exchange``).

It holds the remote's URL (as shown, without a user part), the time of the last attempt
to reach it, of the last success, the last error, and when the next exchange is due (the
last attempt plus ``okf.fetchInterval``). ``status`` shows it; ``sync`` reads it to fetch at
most once per interval and, after a failure, to stay off the network until the interval
has passed (or ``sync --fetch``). Deleting it is safe: the next sync just fetches.

Standard library only (okfgit.fsutil only to write): ``okfgit sync``'s no-op check reads
``due`` on every call.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from okfgit.errors import OkfError
from okfgit.local import paths


@dataclass(slots=True)
class Record:
    remote: str | None = None
    last_attempt: float | None = None
    last_success: float | None = None
    last_error: str | None = None
    next_due: float | None = None


def path(common_dir: str | os.PathLike[str]) -> Path:
    return Path(paths.exchange(common_dir))


def load(common_dir: str | os.PathLike[str]) -> Record:
    """The record, or an empty one when missing or unreadable."""
    try:
        data = json.loads(path(common_dir).read_bytes())
        return Record(**{k: data.get(k) for k in (f.name for f in fields(Record))})
    except (OSError, ValueError, TypeError, AttributeError):
        return Record()


def dump(record: Record) -> bytes:
    """The record's bytes."""
    return json.dumps(asdict(record), separators=(",", ":")).encode("utf-8") + b"\n"


def save(common_dir: str | os.PathLike[str], record: Record) -> None:
    """Write the record atomically (no fsync: losing it only means an earlier fetch).

    Best effort: a record that cannot be written is left as it was."""
    from okfgit import fsutil  # here, not at the top: the no-op check imports this module

    try:
        fsutil.atomic_write(path(common_dir), dump(record), fsync=False)
    except OkfError:
        pass


def remove(common_dir: str | os.PathLike[str]) -> None:
    """Remove the record (the tier has no remote any more)."""
    try:
        path(common_dir).unlink()
    except OSError:
        pass


def due(global_common_dir: str, now: float) -> bool:
    """An exchange is due: the global tier has a remote and its interval has passed.

    For ``okfgit sync``'s no-op check: one small file read, no git.
    """
    try:
        with open(paths.exchange(global_common_dir), encoding="utf-8") as fh:
            data = json.load(fh)
        return bool(data.get("remote")) and float(data.get("next_due") or 0) <= now
    except (OSError, ValueError, TypeError, AttributeError):
        return False
