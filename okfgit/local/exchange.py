"""The record of the global tier's exchanges with its remote: a record in the global tier's
store (``local/store.py``).

It holds the remote's URL (as shown, without a user part), the time of the last attempt
to reach it, of the last success, the last error, and when the next exchange is due (the
last attempt plus ``okf.fetchInterval``). ``status`` shows it; ``sync`` reads it to fetch at
most once per interval and, after a failure, to stay off the network until the interval
has passed (or ``sync --fetch``). Deleting it is safe: the next sync just fetches.

Standard library only: ``okfgit sync``'s no-op check reads ``due`` on every call that is not
a git hook's.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields

from okfgit.local.store import Store

NAME = "exchange"


@dataclass(slots=True)
class Record:
    remote: str | None = None
    last_attempt: float | None = None
    last_success: float | None = None
    last_error: str | None = None
    next_due: float | None = None


def load(store: Store) -> Record:
    """The record as the run staged or the store holds it, or an empty one."""
    data = store.record(NAME)
    if not isinstance(data, dict):
        return Record()
    try:
        return Record(**{k: data.get(k) for k in (f.name for f in fields(Record))})
    except TypeError:
        return Record()


def save(store: Store, record: Record) -> None:
    """Stage the record (the run saves its store; losing it only means an earlier fetch)."""
    store.stage_record(NAME, asdict(record))


def remove(store: Store) -> None:
    """Stage the record's removal (the tier has no remote any more)."""
    store.stage_record(NAME, None)


def due(global_common_dir: str, now: float) -> bool:
    """An exchange is due: the global tier has a remote and its interval has passed.

    For ``okfgit sync``'s no-op check: one lookup in the store, no git."""
    data = Store(os.path.abspath(global_common_dir)).record(NAME)
    try:
        return isinstance(data, dict) and bool(data.get("remote")) and float(data.get("next_due") or 0) <= now
    except (TypeError, ValueError):
        return False
