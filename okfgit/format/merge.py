"""Three-way merges of one tier file by what it means: bytes in, bytes out.

git merges text line by line, so two branches that each add an entry beside the same line of
an ``index.md`` conflict although nothing contradicts. These merges take the three versions of
one file (the merge base, ours and theirs) and merge its parts:

- ``index_page``: entries by what they link to (the union; a removal on either side is
  honoured, a change is never lost to a removal), in okfgit's order when both sides are
  okfgit's own pages (``index_md.own_form``), else where each side put them; intro and outro
  as text.
- ``log_page``: the date groups, newest first, each with every entry either side has.
- ``concept``: the frontmatter key by key, the body as text; but a ``verified`` one side
  changed vouches for that side's words only, so it is never merged with the other side's
  changes (the whole file conflicts).

What only one side added (an entry, a key, a log item) goes after what it follows on that side
(``_slots``, the one placing rule; a log reads it from the end, as it grows at the top).
Where both sides changed one thing two ways, that part alone gets git's conflict markers and
``Merged.conflicts`` names it. Text that both sides changed (an intro, a body) is merged by
the caller's ``TextMerge`` (the merge driver passes git's own ``git merge-file``). A file this
module cannot read as its kind raises ``ValidationError``: the caller falls back to git's
merge of the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from okfgit.errors import ValidationError
from okfgit.format import concept as okf
from okfgit.format import index_md as index
from okfgit.format import lifecycle, log_md
from okfgit.format import markdown as links
from okfgit.format.names import MERGE_DRIVER

ATTRIBUTES = ".gitattributes"  # in the tier's root: ``.okf/.gitattributes`` for the project tier
ATTRIBUTES_LINE = f"*.md merge={MERGE_DRIVER}"
_ATTRIBUTES_TEXT = (
    "# okfgit: git merges this tier's index.md, log.md and concepts with okfgit's merge driver,\n"
    "# which `okfgit hooks install` sets up in each clone. A clone without it merges them as text.\n"
    f"{ATTRIBUTES_LINE}\n"
)
TextMerge = Callable[[bytes, bytes, bytes], tuple[bytes, bool]]  # (base, ours, theirs) -> (merged, conflicted)
T = TypeVar("T")
Key = tuple[tuple[int, str], int]  # an index entry: (its place in okfgit's order, which occurrence of it)


class Merged(NamedTuple):
    """The merged bytes, and each part both sides changed two ways (empty: a clean merge)."""

    data: bytes
    conflicts: list[str]


class Markers(NamedTuple):
    """git's conflict markers: ``size`` characters each (git's ``%L``), and the sides' labels."""

    size: int = 7
    ours: str = "ours"
    theirs: str = "theirs"

    def block(self, ours: str, theirs: str, newline: str, what: str = "") -> str:
        """``ours`` and ``theirs`` (each whole lines) between markers; ``what`` names the part."""
        label = f" ({what})" if what else ""
        return (f"{'<' * self.size} {self.ours}{label}{newline}{_ended(ours, newline)}{'=' * self.size}{newline}"
                f"{_ended(theirs, newline)}{'>' * self.size} {self.theirs}{label}{newline}")


class _Conflict(NamedTuple):
    ours: Any
    theirs: Any


def pick(base: T | None, ours: T | None, theirs: T | None) -> T | None | _Conflict:
    """The three-way rule for one part (None: absent): the side that changed it wins; a change
    wins over a removal; two different changes are a conflict."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if ours is None or theirs is None:
        return ours if theirs is None else theirs
    return _Conflict(ours, theirs)


def _slots(ours: Sequence[T], theirs: Sequence[T]) -> dict[int, list[T]]:
    """Where each element of ``theirs`` that ``ours`` lacks goes: after the element of ``ours``
    it follows in ``theirs`` (by its index in ``ours``; -1: before the first), in ``theirs``'
    order. Counted: an element a side holds twice is there twice. The one rule for placing
    what only one side added, for entries, keys and log items alike."""
    where: dict[T, list[int]] = {}
    for n, item in enumerate(ours):
        where.setdefault(item, []).append(n)
    slots: dict[int, list[T]] = {}
    previous = -1
    for item in theirs:
        found = where.get(item)
        if found:
            previous = found.pop(0)
        else:
            slots.setdefault(previous, []).append(item)
    return slots


def _weave(ours: Sequence[T], theirs: Sequence[T]) -> list[T]:
    """``ours`` in its order with what only ``theirs`` has placed by ``_slots``."""
    slots = _slots(ours, theirs)
    out = list(slots.get(-1, []))
    for n, item in enumerate(ours):
        out.append(item)
        out.extend(slots.get(n, []))
    return out


def _ended(text: str, newline: str) -> str:
    return text if not text or text.endswith("\n") else text + newline


def _text_part(base: str, ours: str, theirs: str, what: str, text: TextMerge | None, markers: Markers,
               newline: str, conflicts: list[str]) -> str:
    """A run of text both sides may have changed (an intro, a body): the changed side's, else
    ``text``'s merge of the three, else the two between markers."""
    chosen = pick(base, ours, theirs)
    if not isinstance(chosen, _Conflict):
        return chosen or ""
    if text is not None:
        merged, conflicted = text(*(part.encode("utf-8", "surrogateescape") for part in (base, ours, theirs)))
        if conflicted:
            conflicts.append(what)
        return merged.decode("utf-8", "surrogateescape")
    conflicts.append(what)
    return markers.block(ours, theirs, newline, what)


# -- index.md -----------------------------------------------------------------------------


class _Page(NamedTuple):
    page: index.Page
    lines: list[str]  # the text (after any BOM) with line endings
    at: dict[int, Key]  # 0-based line -> the key of the entry on it
    entries: dict[Key, str]  # key -> the entry line as written (no ending), in page order
    own: bool  # okfgit's own page (``index_md.own_form``)


def _index_page(data: bytes, path: str, places: dict[str, tuple[int, str] | None]) -> _Page:
    """One version of the index; ``places`` remembers each target's ``order_key`` across the
    three (they share most of their entries)."""
    okf.check_text(data, path)
    page = index.read_page(data, path, frozenset())
    text = data.decode("utf-8")
    lines = index._split_lines(text[len(page.bom):])
    folder = index.parent(path)
    at: dict[int, Key] = {}
    entries: dict[Key, str] = {}
    ordered = []
    for line in page.entries:
        target = line.target or ""
        if target not in places:
            places[target] = index.order_key(folder, target)
        ordered.append(places[target])
    for line, place in zip(page.entries, ordered):
        target = line.target or ""
        kind = place or (2, links.resolve(path, target).path or target)
        key, n = (kind, 0), 0
        while key in entries:  # the same target listed twice: each occurrence is its own entry
            n += 1
            key = (kind, n)
        at[line.number - 1] = key
        entries[key] = line.text
    return _Page(page, lines, at, entries, index.own_form(page, folder, keys=ordered))


def index_page(base: bytes | None, ours: bytes, theirs: bytes, path: str, markers: Markers = Markers(),
               text: TextMerge | None = None) -> Merged:
    """Merge three versions of the index ``path`` (KB-relative): every entry either side has,
    less those one side removed; the same entry changed two ways is a conflict on that line."""
    places: dict[str, tuple[int, str] | None] = {}
    o, a, b = (_index_page(data or b"", path, places) for data in (base, ours, theirs))
    conflicts: list[str] = []
    merged: dict[Key, str | _Conflict] = {}
    for key in {**a.entries, **b.entries}:
        chosen = pick(o.entries.get(key), a.entries.get(key), b.entries.get(key))
        if chosen is not None:
            merged[key] = chosen
    newline = a.page.newline
    rendered = {key: _entry_text(value, markers, newline, conflicts) for key, value in merged.items()}
    folder = index.parent(path)
    if a.own and b.own and all(k[0][0] < 2 for k in merged):
        intro = _text_part(o.page.intro, a.page.intro, b.page.intro, "the text above the entries", text, markers,
                           newline, conflicts)
        outro = _text_part(o.page.outro, a.page.outro, b.page.outro, "the text below the entries", text, markers,
                           newline, conflicts)
        entries = [rendered[key].rstrip("\r\n") for key in sorted(rendered, key=lambda k: k[0])]
        return Merged(a.page.bom.encode() + index.layout(folder, intro, entries, outro=outro, newline=newline),
                      conflicts)
    return Merged(a.page.bom.encode() + _onto_skeleton(o, a, b, rendered, newline).encode("utf-8", "surrogateescape"),
                  conflicts)


def _entry_text(value: str | _Conflict, markers: Markers, newline: str, conflicts: list[str]) -> str:
    """One merged entry, ending with ``newline``: the line, or both lines between markers."""
    if isinstance(value, _Conflict):
        conflicts.append(f"the entry {value.ours.strip()!r} changed two ways")
        return markers.block(value.ours + newline, value.theirs + newline, newline)
    return value + newline


def _onto_skeleton(o: _Page, a: _Page, b: _Page, rendered: Mapping[Key, str], newline: str) -> str:
    """An index in a bundle's own form: the text of the side whose words around the entries are
    the newest (ours, unless only theirs changed them), its entries replaced by the merged ones,
    and the entries only the other side has placed after the entry that precedes them there."""
    def words(page: _Page) -> list[str]:
        return [line for n, line in enumerate(page.lines) if n not in page.at]

    if words(a) == words(o) and words(b) != words(o):
        skeleton, other = b, a
    elif words(b) in (words(o), words(a)):
        skeleton, other = a, b
    else:
        raise ValidationError("both sides changed the words around the entries: merged as text")
    keys = list(skeleton.entries)
    after: dict[Key | None, list[Key]] = {
        keys[n] if n >= 0 else None: [k for k in added if k in rendered]
        for n, added in _slots(keys, list(other.entries)).items()}
    first = min(skeleton.at, default=None)
    out: list[str] = []
    for number, line in enumerate(skeleton.lines):
        here = skeleton.at.get(number)
        if number == first:  # what comes first on the other side goes before the first entry here
            out.extend(rendered[k] for k in after.pop(None, []))
        if here is None:
            out.append(line)
            continue
        if here in rendered:
            ending = line[len(line.rstrip("\r\n")):] or newline
            out.append(rendered[here][:-len(newline)] + ending)
        out.extend(rendered[k] for k in after.pop(here, []))
    rest = [rendered[k] for keys in after.values() for k in keys]
    if rest and out and not out[-1].endswith("\n"):
        out[-1] += newline
    return "".join(out + rest)


# -- log.md -------------------------------------------------------------------------------


def log_page(base: bytes | None, ours: bytes, theirs: bytes, path: str, markers: Markers = Markers(),
             text: TextMerge | None = None) -> Merged:
    """Merge three versions of a ``log.md``: every date group either side has, newest first,
    each holding every entry either side has (entries are never edited, so nothing is
    dropped and nothing conflicts); the text above the first group as text."""
    o, a, b = (log_md.read(data or b"", path) for data in (base, ours, theirs))
    for log in (o, a, b):
        if log.problems:
            raise ValidationError(f"{log.problems[0]}: merged as text")
    newline = "\r\n" if b"\r\n" in ours else "\n"
    conflicts: list[str] = []
    out = [_text_part(o.preamble, a.preamble, b.preamble, "the text above the first date", text, markers,
                      newline, conflicts)]
    ours_by_date = {group.date: group for group in a.groups}
    theirs_by_date = {group.date: group for group in b.groups}
    dates = sorted({**ours_by_date, **theirs_by_date}, reverse=True)
    last_tail = a.groups[-1].tail if a.groups else ""
    out[0] = _ended(out[0], newline)
    for n, date in enumerate(dates):
        mine, yours = ours_by_date.get(date), theirs_by_date.get(date)
        first = mine or yours
        assert first is not None
        items = _union(mine.items if mine else [], yours.items if yours else [])
        items = [_ended(item, newline) for item in items]
        tail = last_tail if n == len(dates) - 1 else (first.tail or newline)
        out.append(_ended(first.heading, newline) + "".join(items) + tail)
    return Merged("".join(out).encode("utf-8"), conflicts)


def _union(ours: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """Every item of ``ours`` in its order, and each of ``theirs`` it lacks placed before the
    item that follows it in ``theirs``: ``_weave`` read from the end, as a log (newest first)
    grows at the top of a group."""
    return _weave(ours[::-1], theirs[::-1])[::-1]


# -- concept files ------------------------------------------------------------------------


_KEY = re.compile(r"""^(?:"([^"]+)"|'([^']+)'|([^\s#'"?:\-\[\]{},&*!|>%@`][^:#]*?))[ \t]*:(?:[ \t]|$)""")
_END = "\0end"  # the comments below the last key
_ABSENT = object()


def _chunks(fm: str, keys: Mapping[str, Any], path: str) -> dict[str, str]:
    """The frontmatter's text cut into top-level entries, by key, in order: an entry is its key
    line and every following line that is indented, a list item or blank; a comment line above
    a key goes with that key, those below the last key are ``_END``."""
    out: dict[str, str] = {}
    pending = ""
    current: str | None = None
    for line in fm.splitlines(keepends=True):
        if current is not None and (line[:1] in (" ", "\t") or not line.strip()
                                    or line.startswith("- ") or line.rstrip("\r\n") == "-"):
            out[current] += line
            continue
        if line.startswith("#"):
            pending += line
            current = None
            continue
        found = _KEY.match(line)
        if found is None:
            raise ValidationError(f"{path}: frontmatter line {line.strip()!r} is not a plain key: merged as text")
        current = next(g for g in found.groups() if g is not None).strip()
        if current in out:
            raise ValidationError(f"{path}: frontmatter key {current!r} appears twice: merged as text")
        out[current] = pending + line
        pending = ""
    if pending:
        out[_END] = pending
    if set(out) - {_END} != set(keys):
        raise ValidationError(f"{path}: frontmatter keys not read line by line: merged as text")
    return out


class _Concept(NamedTuple):
    parsed: okf.Parsed
    chunks: dict[str, str]
    data: bytes


def _concept(data: bytes, path: str) -> _Concept:
    parsed = okf.split(data, path)
    if not parsed.has_frontmatter:
        raise ValidationError(f"{path}: no frontmatter: merged as text")
    fm = data[parsed.fm_start:parsed.fm_end].decode("utf-8")
    return _Concept(parsed, _chunks(fm, parsed.meta, path), data)


def concept(base: bytes | None, ours: bytes, theirs: bytes, path: str, markers: Markers = Markers(),
            text: TextMerge | None = None) -> Merged:
    """Merge three versions of the concept ``path``: each frontmatter key takes the side that
    changed it (by value: a key only re-formatted is not a change of meaning), the body as
    text. One key changed two ways is a conflict on that key's lines alone. The same path
    added on both sides with two different ``okf_id`` is two concepts: both whole, between
    markers, for a person to move one of them."""
    a, b = _concept(ours, path), _concept(theirs, path)
    o = _concept(base, path) if base else None
    newline = a.parsed.newline
    ids = (a.parsed.meta.get("okf_id"), b.parsed.meta.get("okf_id"))
    if o is None and ids[0] != ids[1]:
        what = (f"two concepts were added at {path} (okf_id {ids[0]} and {ids[1]}): keep one here, "
                "move the other to a new name")
        whole = markers.block(ours.decode("utf-8"), theirs.decode("utf-8"), newline, "two concepts")
        return Merged(whole.encode("utf-8"), [what])
    vouched = _vouched_apart(o, a, b)
    if vouched:
        whole = markers.block(ours.decode("utf-8"), theirs.decode("utf-8"), newline, "verified")
        return Merged(whole.encode("utf-8"), [vouched])
    conflicts: list[str] = []
    base_meta: Mapping[str, Any] = o.parsed.meta if o is not None else {}
    base_chunks: Mapping[str, str] = o.chunks if o is not None else {}
    expected: dict[str, Any] = {}
    texts: dict[str, str] = {}
    for key in {**a.chunks, **b.chunks}:
        chosen = pick(base_chunks.get(key), a.chunks.get(key), b.chunks.get(key))
        if isinstance(chosen, _Conflict) and key != _END:  # by text; by value, one side may only re-format
            was, mine, yours = (m.get(key, _ABSENT) for m in (base_meta, a.parsed.meta, b.parsed.meta))
            if mine == yours or yours == was:
                chosen = a.chunks[key]
            elif mine == was:
                chosen = b.chunks[key]
        if isinstance(chosen, _Conflict):
            conflicts.append(f"frontmatter key {key!r} changed two ways" if key != _END else
                             "the comments below the frontmatter keys")
            texts[key] = markers.block(chosen.ours, chosen.theirs, newline, key if key != _END else "comments")
        elif chosen is not None:
            texts[key] = chosen
            if key != _END:
                expected[key] = (a if chosen == a.chunks.get(key) else b).parsed.meta[key]
    order = _merged_order(list(a.chunks), list(b.chunks), texts)
    fm = "".join(texts[key] for key in order)
    bodies = [part.decode("utf-8", "surrogateescape") for part in (o.parsed.body if o else b"", a.parsed.body,
                                                                    b.parsed.body)]
    body = _text_part(bodies[0], bodies[1], bodies[2], "the body", text, markers, newline, conflicts)
    fence = ours[a.parsed.fm_end:len(ours) - len(a.parsed.body)]
    data = ours[:a.parsed.fm_start] + fm.encode("utf-8") + fence + body.encode("utf-8", "surrogateescape")
    if not conflicts:
        check = okf.split(data, path)
        if check.meta != expected or check.body.decode("utf-8", "surrogateescape") != body:
            raise ValidationError(f"{path}: the merged frontmatter does not read back as merged: merged as text")
    return Merged(data, conflicts)


def _vouched_apart(o: _Concept | None, a: _Concept, b: _Concept) -> str:
    """Why the two sides cannot be merged key by key ("" when they can): one changed
    ``verified`` (a person vouching for the words as that side has them) and the other
    changed something that side does not have."""
    was, was_body = (o.parsed.meta, o.parsed.body) if o is not None else ({}, b"")

    def changed(side: okf.Parsed, other: okf.Parsed) -> set[str]:  # what ``side`` changed that ``other`` lacks
        keys = {k for k in {*side.meta, *was} if side.meta.get(k, _ABSENT) not in (was.get(k, _ABSENT),
                                                                                    other.meta.get(k, _ABSENT))}
        return keys | ({"the body"} if side.body not in (was_body, other.body) else set())
    for x, y in ((a.parsed, b.parsed), (b.parsed, a.parsed)):
        if "verified" in changed(x, y) and changed(y, x):
            who = ", ".join(lifecycle.verifiers(x.meta)) or "nobody"
            return (f"one side changed verified (now {who}) and the other changed {', '.join(sorted(changed(y, x)))}: "
                    "a verification vouches only for the words it was given with")
    return ""


def _merged_order(ours: list[str], theirs: list[str], kept: Mapping[str, str]) -> list[str]:
    """Keys in ours' order, each one only theirs has placed after the key it follows there;
    the comments below the last key stay last."""
    woven = _weave([k for k in ours if k != _END], [k for k in theirs if k != _END])
    return [k for k in woven if k in kept] + ([_END] if _END in kept else [])


# -- which merge a path takes ------------------------------------------------------------


def attributes(current: bytes | None) -> bytes | None:
    """The tier's ``.gitattributes`` sending its ``.md`` files to the driver: ``current`` with
    okfgit's line added (every other byte kept), a new file when there is none, or None when
    the line is there already."""
    if current is None:
        return _ATTRIBUTES_TEXT.encode()
    if ATTRIBUTES_LINE.encode() in (line.strip() for line in current.splitlines()):
        return None
    return current + (b"" if not current or current.endswith(b"\n") else b"\n") + ATTRIBUTES_LINE.encode() + b"\n"



def merge_file(base: bytes | None, ours: bytes, theirs: bytes, path: str, markers: Markers = Markers(),
               text: TextMerge | None = None) -> Merged:
    """The merge for ``path`` (KB-relative) by its name: an index, a log or a concept; any
    other file is no file of okfgit's (ValidationError: merged as text)."""
    name = path.rsplit("/", 1)[-1]
    if name == "index.md":
        return index_page(base, ours, theirs, path, markers, text)
    if name == log_md.NAME:
        return log_page(base, ours, theirs, path, markers, text)
    if okf.is_concept_path(path):
        return concept(base, ours, theirs, path, markers, text)
    raise ValidationError(f"{path}: not a file okfgit merges: merged as text")
