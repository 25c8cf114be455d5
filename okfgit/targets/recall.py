"""What Claude Code can recall from its memory folder, and okfgit's choice of it.

Claude Code 2.1.332 (read from its shipped code) builds its recall candidates like this: every
``*.md`` under the memory folder, recursively and through symlinks, ``MEMORY.md`` aside at any
depth, its reserved subtrees (``team/<store>/``, ``logs/``...) aside; only the first 30 lines
of each are read (for the frontmatter ``description`` and ``type``); sorted by modification
time, newest first; the first 200 kept. So with more than 200 files, file times decide what
Claude can ever recall. okfgit therefore ranks every projected concept by one rule
(``rank``; spec/okf-projection.md, "What Claude can recall") and sets each file's
modification time from its rank (``mtimes``), so that the 200 newest files are exactly
okfgit's top 200, and makes sure the keys Claude reads sit within the first 30 lines
(``within_scan``).

Pure functions: bytes and records in, data out; projection applies the result.
"""

from __future__ import annotations

import heapq
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from okfgit.format import agent_memory
from okfgit.format import concept as okf

RECALL_LIMIT = 200  # recall candidates Claude Code keeps, newest first
SCAN_LINES = 30  # lines of each memory file it reads
FRESH_LIMIT = 100  # at most this many slots go to what changed last, so churn cannot evict the rest
SCAN_KEYS = okf.SUMMARY_KEYS  # name, description, type
REST_AGE_S = 86_400  # files below the top 200 are this much older than the oldest of it
_PRIORITY_TYPES = frozenset({"decision", "playbook", "lesson"})


class Candidate(NamedTuple):
    """One projected memory file as the ranking sees it."""

    name: str  # the file's name in the memory folder
    tier_rank: int  # 0 for the most specific tier in the projection
    path: str  # the concept's KB path
    captured: bool  # okf_source: claude-memory (an agent wrote it first)
    verified: bool  # human-verified (a `verified` entry by a human: actor)
    type: str
    deprecated: bool  # status: deprecated
    since: int  # the projection generation in which okfgit first wrote this blob there (0: the first)


def rank(candidates: Iterable[Candidate], baseline: int = 0) -> list[str]:
    """File names, the one Claude should recall first first.

    1. What changed last: memories captured from an agent, and concepts whose current
       blob okfgit first projected after ``baseline`` (the folder's first projection),
       newest first, at most ``FRESH_LIMIT`` of them;
    2. human-verified concepts;
    3. Decisions, Playbooks and Lessons;
    4. everything else;
    5. deprecated concepts, always last.
    Ties: most specific tier first, then KB path, then file name.
    """
    fresh, rest = split(candidates, baseline)
    return fresh + rest


def split(candidates: Iterable[Candidate], baseline: int = 0) -> tuple[list[str], list[str]]:
    """``rank`` in its two parts: what changed last (at most ``FRESH_LIMIT``), then the rest."""
    fresh, rest = _split(list(candidates), baseline)
    return [c.name for c in fresh], [c.name for c in rest]


def _split(items: list[Candidate], baseline: int = 0) -> tuple[list[Candidate], list[Candidate]]:
    fresh = sorted((c for c in items if not c.deprecated and (c.captured or c.since > baseline)),
                   key=lambda c: (-c.since, c.tier_rank, c.path, c.name))[:FRESH_LIMIT]
    chosen = {id(c) for c in fresh}
    return fresh, sorted((c for c in items if id(c) not in chosen), key=rest_key)


def budgeted(candidates: list[Candidate], limit: int) -> list[bool]:
    """Whether a memory folder of ``limit`` files holds each candidate: the first ``limit`` in
    the recall order (``rank``), and every human-verified one besides (a person's word is never
    dropped)."""
    fresh, rest = _split(candidates)
    kept = {id(c) for c in (fresh + rest)[:limit]}
    return [c.verified or id(c) in kept for c in candidates]


def rest_key(c: Candidate) -> tuple[int, int, str, str]:
    """Where a file not among what changed last goes: verified, then Decisions, Playbooks and
    Lessons, then everything else, then deprecated; ties by tier, KB path, file name."""
    if c.deprecated:
        group = 4
    elif c.verified:
        group = 1
    elif c.type.casefold() in _PRIORITY_TYPES:
        group = 2
    else:
        group = 3
    return group, c.tier_rank, c.path, c.name


def mtimes(order: Sequence[str], top_anchor_s: int, recorded: Mapping[str, int] | None = None) -> dict[str, int]:
    """Modification time (ns) for each name: the top ``RECALL_LIMIT`` one second apart up to
    ``top_anchor_s``, every other file at one time a day older than the last of them.

    The rest share one time on purpose: their order is never seen by Claude, and a change
    among them then moves no file's time. A file of the rest whose ``recorded`` time is
    already at or before that time keeps it: it is older than the top either way, so when
    the anchor moves (the order changed) only the files that left the top are touched, not
    every file in the folder.
    """
    out: dict[str, int] = {}
    rest = (top_anchor_s - RECALL_LIMIT - REST_AGE_S) * 1_000_000_000
    had = recorded or {}
    for i, name in enumerate(order):
        if i < RECALL_LIMIT:
            out[name] = (top_anchor_s - i) * 1_000_000_000
            continue
        before = had.get(name)
        out[name] = before if before is not None and before <= rest else rest
    return out


def needs_restamp(order: Sequence[str], recorded: dict[str, int], top_anchor_s: int) -> bool:
    """The recorded modification times do not already realise ``order`` from this anchor."""
    wanted = mtimes(order, top_anchor_s, recorded)
    return any(recorded.get(name) != ns for name, ns in wanted.items())


# -- the 30-line read ---------------------------------------------------------------------


def within_scan(data: bytes) -> bytes | None:
    """``data`` with the keys Claude reads moved to the top of its frontmatter, or None when
    they already sit within the first ``SCAN_LINES`` lines (or cannot be moved safely)."""
    return okf.keys_first(data, SCAN_KEYS, SCAN_LINES)


# -- Claude Code's own listing (for --explain and the tests) ---------------------------------


def claude_candidates(folder: Path, seen: Mapping[str, tuple[int, int, int, bool, bool]] | None = None) -> list[Path]:
    """The recall candidates exactly as Claude Code 2.1.332 lists them: every ``*.md`` below
    ``folder``, following symlinks (to folders too), ``MEMORY.md`` excluded at any depth and
    Claude Code's reserved subtrees left out (``agent_memory.recall_candidate``), newest
    modification time first, the first 200. ``seen``: the folder's entries as a scan just
    found them (``stamps.scan(keep=True)``), so the folder is not walked again."""
    if seen is not None:
        return [Path(folder, rel) for rel in candidate_names(folder, seen)]
    return [Path(folder, rel) for rel in _walked(folder)]


def _walked(folder: Path) -> list[str]:
    found: list[tuple[int, str]] = []
    top = str(folder)
    try:
        visited = {os.path.realpath(top)}
    except OSError:
        return []
    stack = [("", top)]
    while stack:
        rel, where = stack.pop()
        try:
            with os.scandir(where) as entries:
                listed = list(entries)
        except OSError:
            continue
        for entry in listed:
            name = f"{rel}{entry.name}"
            try:
                if entry.is_dir():  # a link to a folder too: Claude Code follows it
                    real = os.path.realpath(entry.path)
                    if real not in visited and not agent_memory.reserved(name):
                        visited.add(real)
                        stack.append((f"{name}/", entry.path))
                    continue
                if name.endswith(".md"):
                    found.append((-entry.stat().st_mtime_ns, name))
            except OSError:
                continue
    return _newest(found)


def candidate_names(folder: Path, seen: Mapping[str, tuple[int, int, int, bool, bool]]) -> list[str]:
    """``claude_candidates`` from a scan, as names relative to ``folder`` (the scan enters no
    linked folder: when there is one, the folder is walked the way Claude Code walks it)."""
    top = str(folder)
    found = [(-entry[2], rel) for rel, entry in seen.items() if not entry[3] and not entry[4]]
    for rel in [rel for rel, entry in seen.items() if entry[4]]:  # Claude follows a link for its time
        try:
            st = os.stat(os.path.join(top, rel))
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            return _walked(folder)
        found.append((-st.st_mtime_ns, rel))
    return _newest(found)


def _newest(found: list[tuple[int, str]]) -> list[str]:
    """The first ``RECALL_LIMIT`` recall candidates of ``found`` (-mtime, name) pairs, newest
    first, then by name: only as many taken from a heap as it takes to find them."""
    heapq.heapify(found)
    out: list[str] = []
    while found and len(out) < RECALL_LIMIT:
        rel = heapq.heappop(found)[1]
        if agent_memory.recall_candidate(rel):
            out.append(rel)
    return out
