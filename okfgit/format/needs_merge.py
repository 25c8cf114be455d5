"""A needs-merge sibling's bytes: one sibling per concept, holding every variant a person has
to merge (spec/okf-format.md §8).

The first variant is the file itself (a concept file like any other). Each later variant, from
another conflict on the same concept, is appended whole (frontmatter and body) in a fenced
block under a marker line, so a concept that keeps conflicting keeps one sibling whose size
grows by what is new, and no variant's words are lost::

    <!-- okf:needs-merge variant: <where it came from> -->
    ````markdown
    <the variant's bytes>
    ````

Links inside the fence are code, not links, so the variants add no dangling-link finding.
"""

from __future__ import annotations

import re

from okfgit.format.markdown import fence_for


def settled_elsewhere(sibling: str, master: str) -> str:
    """What a person does with a sibling (``<tier>:<path>``) whose concept (``<tier>:<path>``)
    is in another tier (a new fact that nearly repeats a wider tier's concept stays in its own
    tier): okfgit moves no tier's words into another, so they merge what matters there
    themselves and drop the sibling."""
    return (f"merge what matters into {master} (the {master.partition(':')[0]} tier) yourself, then "
            f"`okfgit proposal drop {sibling}`")


_MARK = re.compile(rb"^<!-- okf:needs-merge variant(?:: [^\n]*)? -->\r?\n", re.M)


def variants(data: bytes) -> list[bytes]:
    """The variants a sibling holds: the file up to its first appended one, then each appended
    one's bytes. What cannot be read as an appended variant stays part of the one before."""
    parts: list[bytes] = []
    head_end = None
    at = 0
    while True:
        mark = _MARK.search(data, at)
        if mark is None:
            break
        fence_end = data.find(b"\n", mark.end())
        fence = data[mark.end():fence_end].rstrip(b"\r")
        if fence_end < 0 or not fence.startswith(b"```") or not fence.endswith(b"markdown"):
            at = mark.end()
            continue
        ticks = fence[:-len(b"markdown")]
        close = re.compile(rb"^" + re.escape(ticks) + rb"\r?$", re.M).search(data, fence_end + 1)
        if close is None:
            at = mark.end()
            continue
        if head_end is None:
            head_end = mark.start()
        parts.append(data[fence_end + 1:close.start()])
        at = close.end()
    head = data if head_end is None else data[:head_end]
    if head_end is not None and head.endswith(b"\n\n"):
        head = head[:-1]  # the blank line ``add`` put before the first marker
    return [head, *parts]


def holds(sibling: bytes, variant: bytes) -> bool:
    """Every variant ``variant`` holds (it may be a sibling itself) is one ``sibling`` holds."""
    have = {_norm(v) for v in variants(sibling)}
    return all(_norm(v) in have for v in variants(variant))


def add(sibling: bytes, variant: bytes, note: str) -> bytes:
    """``sibling`` with each variant of ``variant`` it does not hold yet appended, under a marker
    naming ``note`` (where the variant came from); ``sibling`` itself when it holds them all."""
    have = {_norm(v) for v in variants(sibling)}
    out = sibling if sibling.endswith(b"\n") else sibling + b"\n"
    for part in variants(variant):
        if _norm(part) in have:
            continue
        have.add(_norm(part))
        text = part.decode("utf-8", errors="replace")
        fence = fence_for(text).encode()
        out += (f"\n<!-- okf:needs-merge variant: {' '.join(note.split())} -->\n".encode() + fence + b"markdown\n"
                + _norm(part) + fence + b"\n")
    return out


def count(sibling: bytes) -> int:
    """How many variants a sibling holds."""
    return len(variants(sibling))


def _norm(part: bytes) -> bytes:
    return part if part.endswith(b"\n") else part + b"\n"
