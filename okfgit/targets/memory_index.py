"""``MEMORY.md``: Claude Code's index of its memory folder, regenerated wholesale.

Claude Code loads only the first 200 lines and 25,000 bytes of it, and lines should stay
under about 150 characters. So every entry is one line ``- [Title](file.md) — hook``
with the hook (then the title) cut with an ellipsis to fit, entries go most specific tier
first, and when not all fit, the last lines point to each tier's own index for the rest.

Lines an agent added that link to memory files okfgit does not manage are kept (first:
they are the most specific knowledge there is, and capture has not taken them yet).
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote, unquote

from okfgit.format import lifecycle
from okfgit.knowledge.cards import Card

MAX_LINES = 200
MAX_BYTES = 25_000
MAX_LINE_CHARS = 149  # "under 150"
DASH = "\u2014"
ELLIPSIS = "\u2026"
_LINK = re.compile(r"^\s*[-*+]\s+\[[^\]]*\]\(<?([^)\s>]+)>?\)")
# okfgit's line pointing to a tier's root index (``pointer_line``)
_POINTER = re.compile(r"^- \[[^\]]+ knowledge index\]\([^)\s]+\) \u2014 (?:no concepts yet; okfgit adds what is "
                      r"learned here|[\d,]+ more concepts?, not listed here)$")


class Entry(NamedTuple):
    """One concept line to be: its file name in the folder, title, hook and tier label."""

    name: str
    title: str
    hook: str
    tier: str


class Pointer(NamedTuple):
    """Where the rest of a tier's knowledge is listed."""

    tier: str
    root_index: Path


class Rendered(NamedTuple):
    data: bytes
    listed: int
    left_out: dict[str, int]  # tier label -> entries not listed


def line(title: str, target: str, hook: str) -> str:
    """``- [title](target) — hook``, cut to fit MAX_LINE_CHARS (the link is never cut)."""
    title = title.replace("[", "(").replace("]", ")")
    head = f"- [{title}]({target})"
    if hook:
        full = f"{head} {DASH} {hook}"
        if len(full) <= MAX_LINE_CHARS:
            return full
        room = MAX_LINE_CHARS - len(head) - 3
        if room >= 8:
            return f"{head} {DASH} {hook[: room - 1].rstrip()}{ELLIPSIS}"
    if len(head) <= MAX_LINE_CHARS:
        return head
    keep = len(title) - (len(head) - MAX_LINE_CHARS) - 1
    if keep >= 1:
        return f"- [{title[:keep].rstrip()}{ELLIPSIS}]({target})"
    return head  # only the link itself is longer than a line: a broken link would be worse


def link_target(name: str) -> str:
    """A memory file name as a link target (spaces and the like percent-encoded)."""
    return quote(name, safe="/._-~")


def linked_name(text_line: str) -> str | None:
    """The memory-folder-relative file a list line links to, or None."""
    match = _LINK.match(text_line)
    if match is None:
        return None
    target = unquote(match.group(1).split("#", 1)[0])
    if not target or "://" in target or target.startswith("/"):
        return None
    norm = posixpath.normpath(target)
    if norm.startswith("../") or norm in (".", ".."):
        return None
    return norm


def kept_lines(old: bytes | None, managed: set[str], exists: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """Lines of the old MEMORY.md to keep in it, and the other lines okfgit did not write.

    Kept: list lines linking to a file that ``exists`` in the folder and is not in
    ``managed`` (okfgit's own files). okfgit's own: lines linking to a managed file, and its
    pointers to the tier indexes. Every other non-blank line is someone's words, which the
    caller saves before the file is regenerated.
    """
    if not old:
        return [], []
    kept: list[str] = []
    others: list[str] = []
    for raw in old.decode("utf-8", errors="replace").split("\n"):
        text = raw.rstrip("\r")
        if not text.strip() or _POINTER.match(text):
            continue
        name = linked_name(text)
        if name is not None and name not in managed and name != "MEMORY.md" and exists(name):
            kept.append(text)
        elif name is None or name not in managed:
            others.append(text)
    return kept, others


def hook(fact: Card, now: dt.datetime) -> str:
    """A line's hook; a stale concept's says so first, where no cut can drop it."""
    stale = lifecycle.parse_instant(fact.stale_after) if fact.stale_after else None
    if stale is not None and now >= stale:
        return f"(stale since {fact.stale_after}) {fact.hook}".rstrip()
    return fact.hook


def render(kept: Sequence[str], entries: Iterable[Entry], pointers: Sequence[Pointer], total: dict[str, int], *,
           max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Rendered:
    """MEMORY.md: kept lines, then entries in order, within the budget (Claude Code's, unless
    ``max_lines`` and ``max_bytes`` say another); pointers when cut.

    ``entries`` may be a lazy iterable (only what fits is consumed); ``total`` gives each
    tier's entry count so the pointer lines can say how many were left out.
    """
    lines: list[str] = []
    size = 0
    # Room for every pointer line, in case we cut.
    spare = [pointer_line(p, 10**9) for p in pointers]
    reserve_lines = len(spare)
    reserve_bytes = sum(len(s.encode("utf-8")) + 1 for s in spare)
    listed: dict[str, int] = {}
    cut = False
    for text in kept:
        cost = len(text.encode("utf-8")) + 1
        if len(lines) + 1 > max_lines - reserve_lines or size + cost > max_bytes - reserve_bytes:
            cut = True
            break
        lines.append(text)
        size += cost
    if not cut:
        for entry in entries:
            text = line(entry.title, link_target(entry.name), entry.hook)
            cost = len(text.encode("utf-8")) + 1
            if len(lines) + 1 > max_lines - reserve_lines or size + cost > max_bytes - reserve_bytes:
                cut = True
                break
            lines.append(text)
            size += cost
            listed[entry.tier] = listed.get(entry.tier, 0) + 1
    left_out = {t: n - listed.get(t, 0) for t, n in total.items() if n - listed.get(t, 0) > 0}
    if cut or left_out:
        for pointer in pointers:
            if left_out.get(pointer.tier):
                lines.append(pointer_line(pointer, left_out[pointer.tier]))
    if not lines:
        # No concept yet: Claude still learns where the knowledge bases are (and a first run
        # shows okfgit at work in the memory folder too).
        lines = [pointer_line(p, 0) for p in pointers]
    text = "\n".join(lines) + "\n" if lines else ""
    return Rendered(text.encode("utf-8"), sum(listed.values()), left_out)


def pointer_line(pointer: Pointer, count: int) -> str:
    noun = "concept" if count == 1 else "concepts"
    label = pointer.tier[:1].upper() + pointer.tier[1:]
    target = link_target(pointer.root_index.as_posix())
    if count == 0:
        return f"- [{label} knowledge index]({target}) {DASH} no concepts yet; okfgit adds what is learned here"
    return f"- [{label} knowledge index]({target}) {DASH} {count:,} more {noun}, not listed here"
