"""Progress of long work, reported by the library through a callback the caller passes in.

The library never prints: a loop over many files calls ``progress(what, done, total)`` (the
``Context`` carries the callback, like the clock). Whether a person sees anything is the
command's decision (``commands/_common.progress_for``): only on a terminal, never in a hook,
under ``--quiet`` or ``--json``.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]  # (what is being done, how many done, how many in all)


def silent(what: str, done: int, total: int) -> None:
    """The default: nobody is watching."""
