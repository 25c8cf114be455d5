"""Managed blocks: the part of a person's file that okfgit owns.

A block is the lines from ``<!-- okf:begin id=<scope> -->`` to ``<!-- okf:end -->``, each
marker alone on its line. Everything outside our block is a person's bytes and is never
changed; the only lines okfgit ever removes outside a well-formed block are marker lines
that close or open nothing (stray markers), so a damaged file is repaired without losing a
hand-written line. Blocks of other scopes (``id=global`` beside ``id=project``) are left
alone.

Which text is okfgit's: markers pair in order (a begin closes at the next end, unless
another begin comes first), so the content of an innermost well-formed block is okfgit's, and
the first one for the scope is replaced. With nested begins (``begin, a, begin, b, end``),
``b`` lies between a begin and an end for the scope under every reading of the markers and
is replaced; ``a`` may be a person's and is kept.

okfgit's own text is also recognised where a marker was damaged, so a block is never doubled:
text that is, line for line, the content being written or one okfgit wrote before (``known``;
or the file okfgit last wrote, ``wrote``) right after a begin that lost its end, right before
an end that lost its begin, inside a second block for the scope (pasted twice; or the same
text as the first block), inside a block whose id is none of okfgit's (a mangled id), or with
no marker at all (both lost, or pasted without them; three lines of text or more). The first such text
is replaced by the block, every other copy removed; any other text is kept.

Pure functions: text in, text out. Writing the file is the caller's job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from okfgit.errors import UsageError, ValidationError

END_MARKER = "<!-- okf:end -->"
SCOPES = ("global", "project", "job")  # the ids okfgit writes: a block with another id holding its text was mangled
_BEGIN = re.compile(r"<!-- okf:begin id=(\S+) -->")
_SCOPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def begin_marker(scope: str) -> str:
    """The begin sentinel for ``scope`` (no line ending)."""
    _check_scope(scope)
    return f"<!-- okf:begin id={scope} -->"


@dataclass(frozen=True, slots=True)
class BlockResult:
    """New file text, whether it differs from the old text, and what had to be repaired."""

    text: str
    changed: bool
    warnings: tuple[str, ...] = ()


def render_block(scope: str, content: str) -> str:
    """The block for ``scope`` holding ``content``, LF line endings, ending in a newline.

    Content ends with exactly one newline inside the block (an empty content gives a block
    with nothing between its markers). A content line that is itself a marker would make the
    block unreadable, so it is refused.
    """
    body = content.replace("\r\n", "\n").rstrip("\r\n")
    for line in body.split("\n"):
        if _marker_of(line) is not None:
            raise ValidationError(
                f"content for block id={scope} contains a managed-block marker line: {line!r}"
            )
    inner = body + "\n" if body else ""
    return f"{begin_marker(scope)}\n{inner}{END_MARKER}\n"


def read_block(existing: str, scope: str) -> str | None:
    """Content of the block for ``scope`` (LF line endings), or None.

    None when there is no block or when the markers for ``scope`` are broken (an unclosed
    begin, or more than one block): a damaged block has no trustworthy content.
    """
    _check_scope(scope)
    lines = _split_lines(existing)
    scan = _scan(lines)
    ours = scan.blocks_for(scope)
    if len(ours) != 1 or scan.orphans_for(scope):
        return None
    begin, end = ours[0]
    return "".join(_body(line) + "\n" for line in lines[begin + 1 : end])


def upsert_block(existing: str | None, scope: str, content: str, filename: str,
                 wrote: Callable[[str], bool] | None = None, known: Sequence[str] = ()) -> BlockResult:
    """``existing`` with the block for ``scope`` set to ``content``.

    One well-formed block: only its lines are replaced. No block: the block is appended after
    one blank line. Broken markers: the stray marker lines are removed (the text around them
    is kept), one fresh block goes where the first begin marker for ``scope`` was, and each
    repair is reported in ``warnings`` naming ``filename``. The block takes the file's line
    ending (CRLF when the file's first line ends in CRLF).

    A begin marker whose end marker is gone is followed by text okfgit itself wrote, which
    must be replaced, not kept as hand text (the file would carry it twice). It is
    recognised (``_recognise``) when putting an end marker back after it gives exactly the
    file okfgit last wrote (``wrote``: the caller checks the text against the blob OID it
    recorded), or when it is, line for line, ``content`` or one of the ``known`` contents.
    """
    block = render_block(scope, content)
    if not existing:
        return BlockResult(block, changed=existing != block)
    newline = _newline_of(existing)
    block_lines = _split_lines(block.replace("\n", newline))
    lines = _split_lines(existing)
    plan = _plan(lines, scope, filename, _Recognise(wrote, (content, *known), newline))

    out: list[str] = []
    for index, line in enumerate(lines):
        if index == plan.insert_at:
            out.extend(block_lines)
        if index not in plan.removed:
            out.append(line)
    if plan.insert_at is None:
        text = "".join(out)
        if text:
            if not text.endswith("\n"):
                text += newline
            text += newline
        text += "".join(block_lines)
    else:
        if plan.chosen == (plan.insert_at, len(lines) - 1) and not lines[-1].endswith("\n"):
            # The old block ended the file without a final newline; keep it that way so an
            # unchanged block stays byte-identical.
            out[-1] = _body(out[-1])
        text = "".join(out)
    return BlockResult(text, changed=text != existing, warnings=plan.warnings)


def remove_block(existing: str, scope: str, filename: str) -> BlockResult:
    """``existing`` without the block for ``scope`` and without stray markers.

    When the block is the last thing in the file, the one blank line before it (the
    separator ``upsert_block`` adds when appending) goes too. Text between broken markers is
    kept, as in ``upsert_block``.
    """
    _check_scope(scope)
    lines = _split_lines(existing)
    plan = _plan(lines, scope, filename)
    removed = set(plan.removed)
    if plan.chosen is not None:
        begin, end = plan.chosen
        after = [i for i in range(end + 1, len(lines)) if i not in removed]
        before = begin - 1
        if not after and before >= 0 and before not in removed and _body(lines[before]) == "":
            removed.add(before)
    text = "".join(line for index, line in enumerate(lines) if index not in removed)
    return BlockResult(text, changed=text != existing, warnings=plan.warnings)


@dataclass(slots=True)
class _Scan:
    """Every marker in a file, paired in order: a begin closes at the next end."""

    blocks: list[tuple[str, int, int]] = field(default_factory=list)
    # (scope, line index, index of the begin that interrupted it or None at end of file)
    orphans: list[tuple[str, int, int | None]] = field(default_factory=list)
    stray_ends: list[int] = field(default_factory=list)

    def blocks_for(self, scope: str) -> list[tuple[int, int]]:
        return [(b, e) for s, b, e in self.blocks if s == scope]

    def orphans_for(self, scope: str) -> list[tuple[int, int | None]]:
        return [(i, by) for s, i, by in self.orphans if s == scope]


@dataclass(frozen=True, slots=True)
class _Plan:
    """Which lines go, where the new block goes (None: append), and the repair notes."""

    removed: frozenset[int]
    insert_at: int | None
    chosen: tuple[int, int] | None
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Recognise:
    """How to tell okfgit's own text after a begin marker that lost its end marker."""

    wrote: Callable[[str], bool] | None
    contents: tuple[str, ...]
    newline: str

    def ours(self, body: list[str]) -> bool:
        """``body`` (lines without their ends) is, line for line, one of the known contents."""
        return bool(body) and any(body == want for want in self._wants())

    def start(self, lines: list[str], end: int, lower: int, marker: str) -> int | None:
        """The index where okfgit's text before ``end`` (an end marker whose begin is gone)
        starts, not before ``lower``, or None."""
        if self.wrote is not None:
            for at in range(lower, end):
                if self.wrote("".join(lines[:at]) + marker + self.newline + "".join(lines[at:])):
                    return at
        for want in self._wants():
            got = [_body(line) for line in lines[max(end - len(want), 0):end]]
            if end - len(want) >= lower and got == want:
                return end - len(want)
        return None

    def _wants(self) -> list[list[str]]:
        bodies = (c.replace("\r\n", "\n").rstrip("\r\n") for c in sorted(set(self.contents), key=len, reverse=True))
        return [body.split("\n") for body in bodies if body]

    def unmarked(self, lines: list[str], taken: set[int]) -> list[tuple[int, int]]:
        """Each run of lines outside ``taken`` that is, line for line, one of the known
        contents with three lines of text or more (fewer could be a person's own words), as
        ``(start, stop)``, in file order."""
        found: list[tuple[int, int]] = []
        used = set(taken)
        bodies = [_body(line) for line in lines]
        for want in (w for w in self._wants() if sum(1 for line in w if line.strip()) >= 3):
            at = 0
            while at + len(want) <= len(bodies):
                span = range(at, at + len(want))
                if bodies[at] == want[0] and bodies[span.start:span.stop] == want and used.isdisjoint(span):
                    found.append((span.start, span.stop))
                    used.update(span)
                    at = span.stop
                else:
                    at += 1
        return sorted(found)

    def end(self, lines: list[str], begin: int, limit: int) -> int | None:
        """The index just past okfgit's text after ``begin`` (up to ``limit``), or None."""
        if self.wrote is not None:
            for at in range(begin + 1, limit + 1):
                if self.wrote("".join(lines[:at]) + END_MARKER + self.newline + "".join(lines[at:])):
                    return at
        for content in sorted(set(self.contents), key=len, reverse=True):
            body = content.replace("\r\n", "\n").rstrip("\r\n")
            want = body.split("\n") if body else []
            got = [_body(line) for line in lines[begin + 1 : begin + 1 + len(want)]]
            if want and got == want and begin + len(want) <= limit:
                return begin + 1 + len(want)
        return None


def _plan(lines: list[str], scope: str, filename: str, recognise: _Recognise | None = None) -> _Plan:
    scan = _scan(lines)
    blocks = scan.blocks_for(scope)
    orphans = scan.orphans_for(scope)
    removed: set[int] = set()
    warnings: list[str] = []
    marker = begin_marker(scope)

    ends_lost_begin: list[int] = []
    for index in scan.stray_ends:
        removed.add(index)
        lower = next((i + 1 for i in range(index - 1, -1, -1) if _marker_of(_body(lines[i])) is not None), 0)
        start = recognise.start(lines, index, lower, marker) if recognise is not None else None
        if start is not None:
            removed.update(range(start, index))
            ends_lost_begin.append(start)
            warnings.append(f"{filename}: line {index + 1}: the block id={scope} had lost its begin marker; "
                            f"the text okfgit wrote there (lines {start + 1}-{index}) was recognised and "
                            "replaced, the text before it was kept")
            continue
        warnings.append(
            f"{filename}: line {index + 1}: removed a stray '{END_MARKER}' that closed no block"
        )

    # The first well-formed block is ours: its content is okfgit's and gets replaced. Any
    # other marker for this scope is stray, and the text it enclosed may be a person's,
    # unless it is okfgit's own text again (``_Recognise``).
    chosen = blocks[0] if blocks else None
    begins = [b for b, _ in blocks] + [i for i, _ in orphans]
    if chosen is not None:
        removed.update(range(chosen[0], chosen[1] + 1))
    first = [_body(line) for line in lines[chosen[0] + 1:chosen[1]]] if chosen is not None else None
    for begin, end in blocks[1:]:
        body = [_body(line) for line in lines[begin + 1:end]]
        if recognise is not None and (body == first or recognise.ours(body)):
            removed.update(range(begin, end + 1))
            warnings.append(f"{filename}: lines {begin + 1}-{end + 1}: removed a second copy of the block "
                            f"id={scope} (okfgit's own text)")
            continue
        removed.update((begin, end))
        warnings.append(
            f"{filename}: lines {begin + 1}-{end + 1}: removed the markers of a duplicate "
            f"block id={scope}; the text between them was kept"
        )
    for other, begin, end in scan.blocks:
        if other == scope or other in SCOPES or recognise is None:
            continue
        if recognise.ours([_body(line) for line in lines[begin + 1:end]]):
            removed.update(range(begin, end + 1))
            if chosen is None:
                chosen = (begin, end)
                begins.append(begin)
            warnings.append(f"{filename}: lines {begin + 1}-{end + 1}: a block with the id {other!r} holds "
                            f"okfgit's text for id={scope} (a mangled id); replaced")
    for index, interrupted_by in orphans:
        removed.add(index)
        limit = interrupted_by if interrupted_by is not None else len(lines)
        ends = recognise.end(lines, index, limit) if recognise is not None else None
        if ends is not None:
            # okfgit's own text from last time: replaced by the new block, like a well-formed one.
            what = "replaced" if chosen is None else "removed (the block is elsewhere)"
            chosen = chosen or (index, ends - 1)
            removed.update(range(index, ends))
            warnings.append(f"{filename}: line {index + 1}: the block id={scope} had lost its "
                            f"'{END_MARKER}'; the text okfgit wrote there (lines {index + 2}-{ends}) was "
                            f"recognised and {what}, the text after it was kept")
            continue
        kept = "the text after it, up to the next marker, was kept"
        if interrupted_by is None:
            why = "no end marker follows it"
        elif _marker_of(_body(lines[interrupted_by])) == scope:
            why = (
                f"nested: another begin for id={scope} at line {interrupted_by + 1} "
                "comes before any end"
            )
            if chosen is not None and chosen[0] == interrupted_by:
                # The one ambiguous case: say which text was taken as okfgit's.
                kept = (
                    "the text between them was kept as hand-written, and the block at lines "
                    f"{chosen[0] + 1}-{chosen[1] + 1} was taken as okfgit's and its content replaced"
                )
        else:
            why = f"another begin marker at line {interrupted_by + 1} comes before any end"
        warnings.append(f"{filename}: line {index + 1}: removed an unclosed '{marker}' ({why}); {kept}")

    for start in ends_lost_begin:  # okfgit's text before an end that lost its begin
        if chosen is None:
            chosen = (start, next(e for e in scan.stray_ends if e >= start))
        begins.append(start)
    # okfgit's text with both markers lost, or pasted without them: outside every block
    inside = removed | {i for _, begin, end in scan.blocks for i in range(begin, end + 1)}
    for start, stop in recognise.unmarked(lines, inside) if recognise is not None else ():
        what = "replaced" if chosen is None else "removed (the block is elsewhere)"
        if chosen is None:
            chosen = (start, stop - 1)
            begins.append(start)
        removed.update(range(start, stop))
        warnings.append(f"{filename}: lines {start + 1}-{stop}: okfgit's text for id={scope} without its markers "
                        f"was recognised and {what}")
    insert_at = min(begins) if begins else None
    return _Plan(frozenset(removed), insert_at, chosen, tuple(warnings))


def _scan(lines: list[str]) -> _Scan:
    scan = _Scan()
    open_begin: tuple[str, int] | None = None
    for index, line in enumerate(lines):
        kind = _marker_of(_body(line))
        if kind is None:
            continue
        if kind == END_MARKER:
            if open_begin is None:
                scan.stray_ends.append(index)
            else:
                scan.blocks.append((open_begin[0], open_begin[1], index))
                open_begin = None
        else:
            if open_begin is not None:
                scan.orphans.append((open_begin[0], open_begin[1], index))
            open_begin = (kind, index)
    if open_begin is not None:
        scan.orphans.append((open_begin[0], open_begin[1], None))
    return scan


def _marker_of(body: str) -> str | None:
    """The scope a begin line opens, END_MARKER for an end line, None for any other line."""
    if body == END_MARKER:
        return END_MARKER
    match = _BEGIN.fullmatch(body)
    return match.group(1) if match else None


def _split_lines(text: str) -> list[str]:
    # Only "\n" ends a line: str.splitlines would also split on \x0b, \u2028 and friends,
    # which no editor or agent treats as a line break in Markdown.
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _body(line: str) -> str:
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    return line


def _newline_of(text: str) -> str:
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _check_scope(scope: str) -> None:
    if not _SCOPE.fullmatch(scope):
        raise UsageError(
            f"invalid managed-block id {scope!r}: use letters, digits, '.', '_' or '-'"
        )
