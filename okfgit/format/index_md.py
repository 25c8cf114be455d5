"""``index.md`` files: generate them from the tree, check them, keep what a person wrote.

An index is three parts. The *intro* is everything above the first entry line (a heading
is added if it has none). The *entry list* is generated: the folder's concepts by
filename, then its subfolders, each ``- [Title](path) — one sentence``. The *outro* is
everything after the first entry line that is not an entry for a KB path (a concept or a
folder): other sections, prose, entries for URLs or other files; it follows the list
byte for byte. A concept's entry comes from its frontmatter; a subfolder's entry keeps
the description it already has (folders have no frontmatter, so that sentence may be a
person's), else the first sentence of the subfolder index's intro.
``<stem>.needs-merge.md`` siblings are unresolved conflicts, never listed. The root
index always declares ``okf_version``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from okfgit.format import markdown as links
from okfgit.format import concept as okf
from okfgit.format.names import (NEEDS_MERGE_SUFFIX, index_path, is_needs_merge, needs_merge_master,  # noqa: F401
                                 needs_merge_path, parent)
from okfgit.errors import OkfError

ENTRY = re.compile(r"^\s*[-*+]\s+\[([^\]]*)\]\(([^)\s]*)\)(.*)$")
HEADING = re.compile(r"^#{1,6}\s+\S")
ROOT_FRONTMATTER = '---\nokf_version: "0.2"\n---\n\n'
DASH = "\u2014"

# Any top-level list item, and one that starts with a standard markdown link (OKF §8).
_ITEM = re.compile(r"^ ?(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_LINK_ITEM = re.compile(
    r"^ ?(?:[-*+]|\d{1,9}[.)])[ \t]+\[((?:[^\[\]]|\[[^\]]*\])*)\]"
    r"\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)(.*)$"
)
# okfgit's own entry shape, exactly: "- [Title](path) — one sentence" (or no sentence).
_STRICT = re.compile(r"^- \[([^\[\]]*)\]\(([^()\s]+)\)(?: \u2014 (\S(?:.*\S)?))?$")

_SEPARATOR = re.compile(r"^\s*(?:\u2014|\u2013|-|:)?\s*")
SEPARATORS = (" - ", f" {DASH} ", " \u2013 ", ": ")
_BULLET = re.compile(r"^ ?([-*+]|\d{1,9}[.)])[ \t]")


class _Entry(Protocol):
    @property
    def is_link(self) -> bool: ...


class Tree(Protocol):
    """What ``regenerate`` reads: a KB's paths and their blobs (a ``knowledge.snapshot.Snapshot``
    is one; ``format/`` itself knows no git)."""

    @property
    def entries(self) -> Mapping[str, _Entry]: ...

    def blob(self, path: str) -> bytes: ...


class Line(NamedTuple):
    """One top-level list item of an index's entry list, as written.

    ``target`` is None when the item does not start with a markdown link; ``strict`` is
    True when it has okfgit's exact shape.
    """

    number: int
    text: str
    title: str | None
    target: str | None
    description: str
    strict: bool
    bullet: str = "-"  # the list marker as written ("-", "*", "+", "1.")
    separator: str = ""  # what joins the link and the description as written (" - ", " \u2014 ")

    @property
    def conforming(self) -> bool:
        """An OKF §8 entry in a form a person or the reference implementation writes:
        ``-``/``*``/``+`` bullet, the link, then nothing or `` - ``/`` \u2014 ``/`` \u2013 ``/``: ``
        and a description."""
        if self.target is None or self.bullet not in ("-", "*", "+"):
            return False
        return self.strict or (self.separator in SEPARATORS if self.description else self.separator == "")


def entry_lines(text: str) -> list[Line]:
    """The entry list of an index: every top-level list item from the first one that
    starts with a link (markdown or ``[[name]]``) on; items above it belong to the intro."""
    out: list[Line] = []
    started = False
    for number, line in links.outside_code(text):
        item = _ITEM.match(line)
        if item is None or (not started and not item.group(1).startswith("[")):
            continue
        started = True
        out.append(_line(number, line))
    return out


def _line(number: int, line: str) -> Line:
    strict = _STRICT.match(line)
    if strict:
        description = strict.group(3) or ""
        return Line(number, line, strict.group(1), strict.group(2), description, True, "-",
                    f" {DASH} " if description else "")
    bullet = _BULLET.match(line)
    marker = bullet.group(1) if bullet else ""
    link = _LINK_ITEM.match(line)
    if link:
        tail = link.group(3)
        separator = _SEPARATOR.match(tail)
        joint = separator.group(0) if separator else ""
        description = tail[len(joint):].strip()
        return Line(number, line, link.group(1), link.group(2), description, False, marker,
                    joint if description else tail)
    return Line(number, line, None, None, "", False, marker)


def expected_entry(title: str, target: str, description: str) -> str:
    """The exact entry line okfgit writes for a concept."""
    return _entry(escape_title(title), target, description)


class Item(NamedTuple):
    """What an index needs to know about a concept."""

    title: str
    description: str
    type: str = ""


def folders_of(paths: Iterable[str]) -> set[str]:
    """Every folder holding one of ``paths``, and all their ancestors, root included."""
    out = {""}
    for path in paths:
        folder = parent(path)
        while folder and folder not in out:
            out.add(folder)
            folder = parent(folder)
    return out


def item_of(data: bytes, path: str) -> Item:
    try:
        meta = okf.split(data, path).meta
    except OkfError:
        meta = {}
    return item_from(meta, path)


def item_from(meta: Mapping[str, Any], path: str) -> Item:
    """A concept's index entry from its frontmatter (``item_of`` for a file already split)."""
    title = okf.one_line(meta.get("title")) or okf.title_from_path(path)
    return Item(escape_title(title), okf.one_line(meta.get("description")), okf.one_line(meta.get("type")))


def escape_title(title: str) -> str:
    return title.replace("[", "(").replace("]", ")")


@dataclass(frozen=True, slots=True)
class Page:
    """An index file in its three parts; ``intro`` and ``outro`` hold the file's own
    characters (undecodable bytes as surrogate escapes, line endings as written)."""

    bom: str
    intro: str  # the lines above the first entry line, less trailing blank lines
    entries: list[Line]  # the generated part as written: entries for KB paths
    outro: str  # after the first entry line, without those entries ("" when only blank lines)
    newline: str  # "\r\n" when the file's first line ends so, else "\n"


def kb_target(resolved: str, folders: Container[str] = frozenset()) -> bool:
    """Whether an entry linking to ``resolved`` (a KB path) belongs to the generated list:
    a concept path (present or not), a folder's ``index.md``, or a folder in ``folders``."""
    name = resolved.rsplit("/", 1)[-1]
    if resolved == "" or name == "index.md":
        return True
    if resolved.endswith(".md"):
        return name not in okf.RESERVED
    return resolved in folders


def is_generated(source: str, line: Line, folders: Container[str]) -> bool:
    """An entry line of index ``source`` that regeneration owns (its target is a KB path)."""
    if line.target is None:
        return False
    target = links.resolve(source, line.target)
    return target.path is not None and not target.external and not target.escapes and kb_target(target.path, folders)


def read_page(data: bytes, source: str, folders: Container[str]) -> Page:
    """Split index ``source`` into intro, generated entries and outro.

    ``folders`` are the KB's folders, so that an entry linking to ``sub`` (no slash) counts as
    a folder entry.
    """
    text = data.decode("utf-8", errors="surrogateescape")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines = _split_lines(text[len(bom):])
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    first: int | None = None
    generated: dict[int, Line] = {}
    headings: set[int] = set()
    fenced = _fenced(lines)
    for number, raw in enumerate(lines):
        if number in fenced:
            continue
        line = _content(raw)
        if HEADING.match(line):
            headings.add(number)
            continue
        item = _ITEM.match(line)
        if item is None or not item.group(1).startswith("["):
            continue
        first = number if first is None else first
        parsed = _line(number + 1, line)
        if is_generated(source, parsed, folders):
            generated[number] = parsed
    if first is None:
        return Page(bom, _trim_blank_tail(lines), [], "", newline)
    outro = _outro(lines, first, generated, headings)
    return Page(bom, _trim_blank_tail(lines[:first]), list(generated.values()), outro, newline)


def _split_lines(text: str) -> list[str]:
    """Lines with their endings; only ``\n`` ends a line (as in markdown)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def _fenced(lines: list[str]) -> set[int]:
    """Numbers (0-based) of the lines inside fenced code, fences included, by the one walker:
    a fence never closed is code to the end, as for every other reader of the file."""
    out: set[int] = set()
    if not any("```" in raw or "~~~" in raw for raw in lines):
        return out  # no line can open a fence
    for item in links.walk(_content(raw) for raw in lines):
        if isinstance(item, links.Fenced):
            out.update(range(item.first - 1, item.last))
    return out


def _content(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line.rstrip("\n")


def _blank(line: str) -> bool:
    return not line.strip()


def _trim_blank_tail(lines: list[str]) -> str:
    end = len(lines)
    while end and _blank(lines[end - 1]):
        end -= 1
    return "".join(lines[:end])


def _outro(lines: list[str], first: int, generated: Mapping[int, Line], headings: set[int]) -> str:
    """What follows the first entry line, less the generated entries.

    A section (a heading and its lines up to the next heading) holding nothing but
    generated entries and blank lines is generated as a whole; removing an entry never
    leaves two blank lines where there was one.
    """
    dropped = set(generated)
    starts = sorted(h for h in headings if h > first)
    for at, start in enumerate(starts):
        stop = starts[at + 1] if at + 1 < len(starts) else len(lines)
        body = range(start + 1, stop)
        if any(n in generated for n in body) and all(n in generated or _blank(lines[n]) for n in body):
            dropped.update(range(start, stop))
    kept: list[str] = []
    removed = False
    for number in range(first, len(lines)):
        if number in dropped:
            removed = True
            continue
        if removed and kept and _blank(kept[-1]) and _blank(lines[number]):
            continue
        kept.append(lines[number])
        removed = False
    return "" if all(_blank(line) for line in kept) else "".join(kept)


def split_intro(text: str) -> str:
    """The intro of an index's text (line endings as ``\n``): every line above the first entry."""
    page = read_page(text.encode("utf-8", errors="surrogateescape"), "index.md", frozenset())
    return _without_final_breaks(page.intro).replace("\r\n", "\n")


def render(folder: str, intro: str, concepts: Mapping[str, Item], subfolders: Mapping[str, str], *,
           outro: str = "", newline: str = "\n") -> bytes:
    """The index text for ``folder``; ``concepts`` and ``subfolders`` keyed by name.

    ``intro`` and ``outro`` are kept as they are; ``newline`` ends the lines okfgit adds.
    """
    entries = [_entry(concepts[name].title, name, concepts[name].description) for name in sorted(concepts)]
    entries += [_entry(name, f"{name}/index.md", subfolders[name]) for name in sorted(subfolders)]
    return layout(folder, intro, entries, outro=outro, newline=newline)


def layout(folder: str, intro: str, entries: list[str], *, outro: str = "", newline: str = "\n") -> bytes:
    """An index page from its parts: the intro (given a heading, and the root's frontmatter,
    when it lacks them), the entry lines as given, then the outro."""
    head = _without_final_breaks(intro)
    rest = intro[len(head):]  # the intro's own last line ending, if it has one
    ending = "\r\n" if rest.startswith("\r\n") else "\n" if rest else newline
    if not any(HEADING.match(line) for line in _body_lines(head)):
        heading = f"# {okf.title_from_path(folder.rsplit('/', 1)[-1]) if folder else 'Knowledge base'}"
        head = _insert_heading(head, heading, newline)
    if folder == "" and not _frontmatter_end(head):
        head = ROOT_FRONTMATTER.replace("\n", newline) + head
    head += ending
    left_open = links.open_fence(head)
    if left_open is not None:  # else the entries would be code, the list no reader finds
        head += left_open + ending
    text = head + (newline + newline.join(entries) + newline if entries else "")
    if outro:
        text += outro if entries else newline + outro
    return text.encode("utf-8", errors="surrogateescape")


def rebuild(folder: str, page: Page, concepts: Mapping[str, Item], subfolders: Mapping[str, str]) -> bytes:
    """``page`` with its entry list regenerated: intro and outro kept, byte for byte."""
    body = render(folder, page.intro, concepts, subfolders, outro=page.outro, newline=page.newline)
    return page.bom.encode("utf-8") + body


def _without_final_breaks(text: str) -> str:
    while text.endswith("\n"):
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text


def _frontmatter_end(text: str) -> int:
    """Where the body of an index's text starts: after its frontmatter's closing fence line
    (``okf.fences``, the rule every reader applies), 0 when it has none."""
    data = text.encode("utf-8", errors="surrogateescape")
    found = okf.fences(data)
    return len(data[:found.body].decode("utf-8", errors="surrogateescape")) if found is not None else 0


def _body_lines(text: str) -> list[str]:
    return text[_frontmatter_end(text):].replace("\r\n", "\n").splitlines()


def _insert_heading(head: str, heading: str, newline: str = "\n") -> str:
    blank = newline + newline
    end = _frontmatter_end(head)
    if end:
        fm = _without_final_breaks(head[:end])  # through the closing fence, without its line break
        rest = _without_final_breaks(head[end:])
        while rest.startswith(("\r\n", "\n")):  # line breaks only: a lone CR is the line's own byte
            rest = rest[2:] if rest.startswith("\r\n") else rest[1:]
        return fm + blank + heading + (blank + rest if rest else "")
    return heading + (blank + head if head.strip() else "")


def _entry(title: str, target: str, description: str) -> str:
    return OKFGIT_FORM.entry(title, target, description)


# -- an index in another form: kept as it is written ---------------------------------------


@dataclass(frozen=True, slots=True)
class Form:
    """How a folder's index writes its entries: the bullet and the separator."""

    bullet: str
    separator: str

    def entry(self, title: str, target: str, description: str) -> str:
        link = f"{self.bullet} [{title}]({links.link_target(target)})"
        return f"{link}{self.separator}{description}" if description else link


OKFGIT_FORM = Form("-", f" {DASH} ")
SUBFOLDERS_HEADING = "Subdirectories"  # the reference implementation's group for folders


def form_of(lines: Iterable[Line]) -> Form:
    """The form most of ``lines`` use (okfgit's when they use none)."""
    bullets: dict[str, int] = {}
    separators: dict[str, int] = {}
    for line in lines:
        if line.target is None:
            continue
        if line.bullet in ("-", "*", "+"):
            bullets[line.bullet] = bullets.get(line.bullet, 0) + 1
        if line.description and line.separator in SEPARATORS:
            separators[line.separator] = separators.get(line.separator, 0) + 1
    bullet = max(bullets, key=lambda b: (bullets[b], b == "-")) if bullets else OKFGIT_FORM.bullet
    separator = max(separators, key=lambda s: (separators[s], s == OKFGIT_FORM.separator)) if separators \
        else OKFGIT_FORM.separator
    return Form(bullet, separator)


def own_form(page: Page, folder: str, exists: Callable[[str], bool] | None = None,
             keys: Sequence[tuple[int, str] | None] | None = None) -> bool:
    """The page is okfgit's own (or has no entry yet), so okfgit rebuilds it: entries in
    okfgit's exact shape, for the folder's own concepts and subfolders only, those that
    exist (all, without ``exists``) in okfgit's order (concepts by file name, then subfolders
    by name). Anything else (another bullet or separator, entries for files elsewhere,
    another order) is the bundle's or a person's, kept as written. ``keys``: each entry's
    ``order_key``, when the caller has worked them out."""
    placed = []
    for n, line in enumerate(page.entries):
        if not line.strict or line.target is None:
            return False
        key = keys[n] if keys is not None else order_key(folder, line.target)
        if key is None:
            return False
        if exists is None:
            placed.append(key)
            continue
        target = links.resolve(index_path(folder), line.target)
        if target.path is not None and exists(target.path):
            placed.append(key)
    return placed == sorted(placed)


def order_key(folder: str, target: str) -> tuple[int, str] | None:
    """Where an entry linking ``target`` stands in okfgit's order for ``folder``'s index: the
    folder's concepts by file name, then its subfolders by name; None for any other target."""
    sub = _subfolder_name(folder, target)
    if sub is not None:
        return (1, sub)
    resolved = links.resolve(index_path(folder), target)
    if resolved.path is not None and parent(resolved.path) == folder:
        return (0, resolved.path.rsplit("/", 1)[-1])
    return None


def _heading_text(line: str) -> str:
    return line.strip().lstrip("#").strip().rstrip("#").strip()


def keep_form(folder: str, data: bytes, source: str, kb_folders: Container[str], concepts: Mapping[str, Item],
              subfolders: Mapping[str, str], exists: Callable[[str], bool]) -> bytes:
    """Index ``source`` as written, completed in its own form.

    The entries are the bundle's words (OKF §8 only recommends the frontmatter's
    description), so none is rewritten; entries whose target no longer exists are dropped;
    concepts and subfolders not listed are added in the form most entries use: under the heading naming their type (``Subdirectories`` for folders) when the
    entries are grouped that way, a new section of that name when there is none, else
    after the last entry. Every other byte stays.
    """
    text = data.decode("utf-8", errors="surrogateescape")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines = _split_lines(text[len(bom):])
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    fenced = _fenced(lines)
    headings: dict[int, str] = {}
    entries: dict[int, Line] = {}
    for number, raw in enumerate(lines):
        if number in fenced:
            continue
        content = _content(raw)
        if HEADING.match(content):
            headings[number] = content
            continue
        item = _ITEM.match(content)
        if item is None or not item.group(1).startswith("["):
            continue
        parsed = _line(number + 1, content)
        if is_generated(source, parsed, kb_folders):
            entries[number] = parsed
    form = form_of(entries.values())
    replaced: dict[int, str | None] = {}
    listed_concepts: set[str] = set()
    listed_subs: dict[str, str] = {}
    group_of: dict[int, str] = {}  # entry line -> the group (type) its target belongs to
    for number, line in entries.items():
        target = links.resolve(source, line.target or "")
        path = target.path or "index.md"
        name = path.rsplit("/", 1)[-1]
        sub = _subfolder_name(folder, line.target or "")
        if parent(path) == folder and name in concepts:
            listed_concepts.add(name)
            group_of[number] = concepts[name].type
        elif sub is not None and sub in subfolders:
            listed_subs[sub] = line.target or ""
            group_of[number] = SUBFOLDERS_HEADING
        elif not exists(path):
            replaced[number] = None
    missing = [(concepts[n].type, concepts[n].title, n, concepts[n].description) for n in sorted(concepts)
               if n not in listed_concepts]
    sub_target = "{}/" if listed_subs and all(t.endswith("/") for t in listed_subs.values()) else "{}/index.md"
    missing += [(SUBFOLDERS_HEADING, n, sub_target.format(n), subfolders[n]) for n in sorted(subfolders)
                if n not in listed_subs]
    section_of = _sections(lines, headings)
    grouped = any(_heading_text(headings[section_of[n]]).casefold() == group.casefold()
                  for n, group in group_of.items() if group and section_of.get(n) is not None)
    inserts: dict[int, list[str]] = {}
    appended: dict[str, list[str]] = {}
    for group, title, link, description in missing:
        new = form.entry(title, link, description)
        if grouped:
            heading = next((h for h in sorted(headings) if _heading_text(headings[h]).casefold()
                            == (group or "Other").casefold()), None)
            if heading is None:
                appended.setdefault(group or "Other", []).append(new)
                continue
            members = [n for n in sorted(entries) if section_of.get(n) == heading]
            after = _section_end(lines, headings, heading) if not members else None
        else:
            members = sorted(group_of) or sorted(entries)  # beside the folder's own entries, if any
            after = None
        at = _insert_at(members, entries, title, after)
        inserts.setdefault(at, []).append(new)
    out: list[str] = []
    removed = _emptied_sections(lines, headings, section_of, replaced)
    for number, raw in enumerate(lines):
        out.extend(added + newline for added in inserts.get(number, []))
        if number in removed or (number in replaced and replaced[number] is None):
            continue
        if out and _blank(out[-1]) and _blank(raw) and (number - 1 in removed or replaced.get(number - 1, "") is None):
            continue
        out.append(replaced.get(number) or raw)
    tail = inserts.get(len(lines), [])
    if tail or appended:
        if out and not out[-1].endswith("\n"):
            out[-1] += newline
    out.extend(added + newline for added in tail)
    level = _group_level(headings, section_of, group_of)
    for group in sorted(appended):
        if out and not _blank(out[-1]):
            out.append(newline)
        out.append(f"{'#' * level} {group}{newline}{newline}")
        out.extend(added + newline for added in appended[group])
    return (bom + "".join(out)).encode("utf-8", errors="surrogateescape")


def _sections(lines: list[str], headings: Mapping[int, str]) -> dict[int, int]:
    """Line number -> the heading line above it (lines above the first heading are left out)."""
    out: dict[int, int] = {}
    current: int | None = None
    for number in range(len(lines)):
        if number in headings:
            current = number
        elif current is not None:
            out[number] = current
    return out


def _section_end(lines: list[str], headings: Mapping[int, str], heading: int) -> int:
    """Where an entry goes in a section with no entries: after its last non-blank line."""
    stop = min((h for h in headings if h > heading), default=len(lines))
    last = heading
    for number in range(heading + 1, stop):
        if not _blank(lines[number]):
            last = number
    return last


def _insert_at(members: list[int], entries: Mapping[int, Line], title: str, after: int | None) -> int:
    """The line a new entry goes before: in title order when the entries are, else after the last."""
    if not members:
        return after + 1 if after is not None else 0
    titles = [(entries[n].title or "").casefold() for n in members]
    if titles == sorted(titles):
        for n in members:
            if (entries[n].title or "").casefold() > title.casefold():
                return n
    return members[-1] + 1


def _emptied_sections(lines: list[str], headings: Mapping[int, str], section_of: Mapping[int, int],
                      replaced: Mapping[int, str | None]) -> set[int]:
    """Headings (and their blank lines) whose every entry was dropped and nothing else written."""
    out: set[int] = set()
    for heading in headings:
        body = [n for n, h in section_of.items() if h == heading]
        dropped = [n for n in body if n in replaced and replaced[n] is None]
        if dropped and all(n in dropped or _blank(lines[n]) for n in body):
            out.add(heading)
            out.update(body)
    return out


def _group_level(headings: Mapping[int, str], section_of: Mapping[int, int], group_of: Mapping[int, str]) -> int:
    for number in group_of:
        heading = section_of.get(number)
        if heading is not None:
            return len(headings[heading].strip()) - len(headings[heading].strip().lstrip("#"))
    return 1


def describe_folder(intro: str, name: str) -> str:
    """One sentence for a subfolder's entry: its index intro's first sentence, else a stock one."""
    intro = intro.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
    sentence = okf.first_sentence("\n".join(_body_lines(intro)))
    return sentence or _stock_sentence(name)


def _stock_sentence(name: str) -> str:
    return f"Concepts under {name}/."


def _subfolder_name(folder: str, target: str) -> str | None:
    """The direct subfolder of ``folder`` an entry links to (``sub/``, ``sub/index.md``), or None."""
    target = target.split("#", 1)[0]
    for suffix in ("/index.md", "/"):
        if target.endswith(suffix):
            name = target[: -len(suffix)]
            if name.startswith("./"):
                name = name[2:]
            return name if name and "/" not in name and name not in (".", "..") else None
    return None


# -- what regeneration needs of an index, from its blob alone ----------------------------


class Summary(NamedTuple):
    """What ``regenerate`` needs to know of one index file, a pure function of its path and
    blob (so a cache keeps it by blob OID): the sentence its folder's entry in the parent
    index takes from it, and, when the file is exactly what regeneration writes from its
    own entries, those entries. Such a file is current when the tree implies the same
    entries, and regeneration need not read it (``regenerate``'s ``summaries``)."""

    sentence: str  # describe_folder(its intro, its folder's name)
    concepts: str  # fingerprint() of its concept entries; "" when it is not exactly as regeneration writes it
    subfolders: dict[str, str]  # its subfolder entries, name -> description (when ``concepts`` is set)


class _Asked:
    """A container of folders that holds none and remembers whether it was asked."""

    asked = False

    def __contains__(self, item: object) -> bool:
        self.asked = True
        return False


def summarize(data: bytes, path: str) -> Summary:
    """The ``Summary`` of index ``path`` holding ``data``."""
    folder = parent(path)
    asked = _Asked()
    page = read_page(data, path, asked)
    sentence = describe_folder(page.intro, folder.rsplit("/", 1)[-1])
    # An entry whose kind depends on the KB's folders (a link to ``sub`` with no slash) or a
    # page in another form: regeneration must read it each time.
    if asked.asked or not page.entries or not own_form(page, folder):
        return Summary(sentence, "", {})
    concepts: dict[str, Item] = {}
    subfolders: dict[str, str] = {}
    for line in page.entries:
        target = line.target or ""
        sub = _subfolder_name(folder, target)
        if sub is not None:
            subfolders.setdefault(sub, line.description)
        else:
            name = (links.resolve(path, target).path or "").rsplit("/", 1)[-1]  # own_form: a concept of the folder
            concepts.setdefault(name, Item(line.title or "", line.description))
    if rebuild(folder, page, concepts, subfolders) != data:
        return Summary(sentence, "", {})
    return Summary(sentence, fingerprint(concepts), subfolders)


def fingerprint(concepts: Mapping[str, Item]) -> str:
    """One digest of a folder's concept entries as an index writes them: name, title and
    description, by name (SHA-1, the trust git's own object names rest on)."""
    rows = [[name, concepts[name].title, concepts[name].description] for name in sorted(concepts)]
    import hashlib  # only when an index is checked: loading OpenSSL is for runs that need it

    return hashlib.sha1(json.dumps(rows).encode("ascii")).hexdigest()


def regenerate(
    snapshot: Tree,
    changes: Mapping[str, bytes | None] | None = None,
    folders: Iterable[str] | None = None,
    items: Callable[[str], Item | None] | None = None,
    summaries: Callable[[str], Summary | None] | None = None,
    changed_items: Mapping[str, Item] | None = None,
) -> dict[str, bytes]:
    """Index files (path -> bytes) that differ from the tree once ``changes`` are applied.

    ``folders`` limits the work to those folders (default: every folder in the KB).
    ``items`` gives a concept's entry without reading its blob when it knows it (a cache
    keyed by blob OID); a path it answers None for is read. ``summaries`` gives an index
    file's ``Summary`` the same way: an index whose summary says it is what regeneration
    would write is neither read nor rebuilt. ``changed_items`` are the entries of paths in
    ``changes`` when the caller has split their new bytes already (capture).
    """
    changes = dict(changes or {})
    paths = set(snapshot.entries) | set(changes)
    paths = {p for p in paths if changes.get(p, b"") is not None}
    blobs: dict[str, bytes | None] = {}

    def read(path: str) -> bytes | None:
        if path in changes:
            return changes[path]
        if path not in blobs:
            blobs[path] = None
            if path in snapshot.entries:
                try:
                    blobs[path] = snapshot.blob(path)
                except OkfError:
                    pass
        return blobs[path]

    def summary(path: str) -> Summary | None:
        return summaries(path) if summaries is not None and path in snapshot.entries and path not in changes else None

    def listable(path: str) -> bool:
        if not okf.is_concept_path(path) or is_needs_merge(path):
            return False
        entry = snapshot.entries.get(path)
        return path in changes or entry is None or not entry.is_link  # a symlink is never followed

    concept_paths = sorted(p for p in paths if listable(p))
    all_folders = folders_of(concept_paths)
    wanted = set(folders) & all_folders if folders is not None else all_folders
    if folders is not None:
        wanted |= {f for f in folders if f == ""}
    by_folder: dict[str, dict[str, str]] = {f: {} for f in all_folders}
    for path in concept_paths:
        by_folder[parent(path)][path.rsplit("/", 1)[-1]] = path
    subs: dict[str, list[str]] = {f: [] for f in all_folders}
    for folder in all_folders:
        if folder:
            subs[parent(folder)].append(folder)

    kb_folders = folders_of(paths)
    pages: dict[str, Page] = {}

    def page_of(folder: str) -> Page:
        if folder not in pages:
            path = index_path(folder)
            pages[folder] = read_page(read(path) or b"", path, kb_folders)
        return pages[folder]

    def kept_descriptions(folder: str, known: Summary | None) -> dict[str, str]:
        out: dict[str, str] = {}
        if known is not None:  # the page's subfolder entries, as summarised
            return {name: text for name, text in known.subfolders.items() if text and text != _stock_sentence(name)}
        for line in page_of(folder).entries:
            name = _subfolder_name(folder, line.target) if line.target else None
            if name and line.description and line.description != _stock_sentence(name):
                out.setdefault(name, line.description)
        return out

    def sentence(sub: str) -> str:
        known = summary(index_path(sub))
        return known.sentence if known is not None else describe_folder(page_of(sub).intro, sub.rsplit("/", 1)[-1])

    lookup = items
    out: dict[str, bytes] = {}
    for folder in sorted(wanted):
        entries: dict[str, Item] = {}
        for name, path in by_folder[folder].items():
            if path in changes:
                known = changed_items.get(path) if changed_items is not None else None
            else:
                known = lookup(path) if lookup is not None else None
            entries[name] = known if known is not None else item_of(read(path) or b"", path)
        own = summary(index_path(folder))
        exact = own if own is not None and own.concepts else None
        kept = kept_descriptions(folder, exact) if subs[folder] else {}
        subfolders = {}
        for sub in subs[folder]:
            name = sub.rsplit("/", 1)[-1]
            subfolders[name] = kept.get(name) or sentence(sub)
        if exact is not None and exact.subfolders == subfolders and exact.concepts == fingerprint(entries):
            continue  # the file is what rebuilding it from these entries writes
        page = page_of(folder)
        existing = read(index_path(folder))
        if existing is not None and not own_form(page, folder, lambda path: links.exists(path, paths)):
            text = keep_form(folder, existing, index_path(folder), kb_folders, entries, subfolders,
                             lambda path: links.exists(path, paths))
        else:
            text = rebuild(folder, page, entries, subfolders)
        if read(index_path(folder)) != text:
            out[index_path(folder)] = text
    return out


def emptied(snapshot: Tree, changes: Mapping[str, bytes | None] | None = None,
            folders: Iterable[str] | None = None) -> dict[str, bytes | None]:
    """Index files of folders left with no concept once ``changes`` apply (``folders``:
    only these; default every folder of the tree). One holding nothing but okfgit's own
    heading and entries goes with its folder (None); one with a person's intro or outro keeps
    them and loses its entries. The root index always stays."""
    changes = changes or {}
    paths = set(snapshot.entries) | set(changes)
    live = folders_of(p for p in paths if changes.get(p, b"") is not None and okf.is_concept_path(p))
    if folders is None:
        folders = {parent(p) for p in snapshot.entries if p.rsplit("/", 1)[-1] == "index.md"}
    kb_folders = folders_of(paths)
    out: dict[str, bytes | None] = {}
    for folder in sorted(set(folders) - live - {""}):
        path = index_path(folder)
        if path in changes or path not in snapshot.entries:
            continue
        data = snapshot.blob(path)
        page = read_page(data, path, kb_folders)
        if not page.outro and render(folder, page.intro, {}, {}) == render(folder, "", {}, {}):
            out[path] = None
        elif (text := rebuild(folder, page, {}, {})) != data:
            out[path] = text
    return out


def affected_folders(paths: Iterable[str]) -> set[str]:
    """Folders whose index must be refreshed when ``paths`` change: each one's folder and ancestors."""
    return folders_of(paths)
