"""The outside world, passed in: environment, home folders, clock, working folder, and
who is told of the progress of long work.

Library code takes a ``Context`` instead of reading ``os.environ`` or the clock, so
tests pin them and commit ids are reproducible (STYLE.md habit 6).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from okfgit.progress import Progress, silent


class Context(NamedTuple):
    environ: Mapping[str, str]
    cwd: Path
    clock: Callable[[], float] = time.time
    progress: Progress = silent  # told of long loops (see ``okfgit.progress``)
    actor: str | None = None  # who acts, when the front end knows it (an MCP client); format/actors.py

    @classmethod
    def from_process(cls) -> "Context":
        return cls(environ=dict(os.environ), cwd=Path.cwd())

    @property
    def home(self) -> Path:
        value = self.environ.get("HOME")
        return Path(value) if value else Path.home()

    @property
    def xdg_data_home(self) -> Path:
        value = self.environ.get("XDG_DATA_HOME")
        return Path(value) if value else self.home / ".local" / "share"

    @property
    def xdg_state_home(self) -> Path:
        value = self.environ.get("XDG_STATE_HOME")
        return Path(value) if value else self.home / ".local" / "state"

    @property
    def global_dir(self) -> Path:
        """Where the global tier repository lives."""
        return self.xdg_data_home / "okf"

    def now(self) -> int:
        """Seconds since the epoch, honouring ``SOURCE_DATE_EPOCH`` for reproducible output."""
        pinned = self.environ.get("SOURCE_DATE_EPOCH")
        if pinned and pinned.isdigit():
            return int(pinned)
        return int(self.clock())

    def today(self) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(self.now()))

    def iso_now(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now()))
