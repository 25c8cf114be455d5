"""``index.md`` files: generate them from the tree, check them, keep a hand-written intro.

An index is the hand-written intro (everything above the first entry line, with a
heading added if it has none) followed by one generated list: the folder's concepts by
filename, then its subfolders, each ``- [Title](path) — one sentence``. A concept's
entry comes from its frontmatter; a subfolder's entry keeps the description it already
has (folders have no frontmatter, so that sentence may be a person's), else the first
sentence of the subfolder index's intro. ``<stem>.needs-merge.md`` siblings are
unresolved conflicts, never listed. The root index always declares ``okf_version``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from okfgit import okf
from okfgit.errors import OkfError
from okfgit.kb import Snapshot

ENTRY = re.compile(r"^\s*[-*+]\s+\[([^\]]*)\]\(([^)\s]*)\)(.*)$")
HEADING = re.compile(r"^#{1,6}\s+\S")
ROOT_FRONTMATTER = '---\nokf_version: "0.2"\n---\n\n'
DASH = "\u2014"
NEEDS_MERGE_SUFFIX = ".needs-merge.md"

# Any top-level list item, and one that starts with a standard markdown link (OKF §8).
_ITEM = re.compile(r"^ ?(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_LINK_ITEM = re.compile(
    r"^ ?(?:[-*+]|\d{1,9}[.)])[ \t]+\[((?:[^\[\]]|\[[^\]]*\])*)\]"
    r"\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)(.*)$"
)
# okfgit's own entry shape, exactly: "- [Title](path) — one sentence" (or no sentence).
_STRICT = re.compile(r"^- \[([^\[\]]*)\]\(([^()\s]+)\)(?: \u2014 (\S(?:.*\S)?))?$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_SEPARATOR = re.compile(r"^\s*(?:\u2014|\u2013|-|:)?\s*")


_NEEDS_MERGE = re.compile(r"\.needs-merge(?:-[1-9][0-9]*)?\.md$")


def is_needs_merge(path: str) -> bool:
    """``<stem>.needs-merge.md`` (or ``<stem>.needs-merge-<n>.md`` when that was taken): an
    agent's variant of ``<stem>.md`` kept for a person to merge."""
    return ".needs-merge" in path and _NEEDS_MERGE.search(path) is not None


def needs_merge_master(path: str) -> str:
    """The concept a needs-merge sibling belongs to (``a/b.needs-merge-2.md`` -> ``a/b.md``)."""
    return _NEEDS_MERGE.sub(".md", path)


def needs_merge_path(path: str) -> str:
    """The needs-merge sibling of concept ``path`` (``a/b.md`` -> ``a/b.needs-merge.md``)."""
    return path[:-3] + NEEDS_MERGE_SUFFIX if path.endswith(".md") else path + NEEDS_MERGE_SUFFIX


@dataclass(frozen=True)
class Line:
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


def entry_lines(text: str) -> list[Line]:
    """The entry list of an index: every top-level list item from the first one that
    starts with a link (markdown or ``[[name]]``) on; items above it belong to the intro."""
    out: list[Line] = []
    started = False
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1) == fence:
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        item = _ITEM.match(line)
        if item is None:
            continue
        if not started and not item.group(1).startswith("["):
            continue
        started = True
        out.append(_line(number, line))
    return out


def _line(number: int, line: str) -> Line:
    strict = _STRICT.match(line)
    if strict:
        return Line(number, line, strict.group(1), strict.group(2), strict.group(3) or "", True)
    link = _LINK_ITEM.match(line)
    if link:
        description = _SEPARATOR.sub("", link.group(3), count=1).strip()
        return Line(number, line, link.group(1), link.group(2), description, False)
    return Line(number, line, None, None, "", False)


def expected_entry(title: str, target: str, description: str) -> str:
    """The exact entry line okfgit writes for a concept."""
    return _entry(_escape_title(title), target, description)


@dataclass(frozen=True)
class Item:
    """What an index needs to know about a concept."""

    title: str
    description: str


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def index_path(folder: str) -> str:
    return f"{folder}/index.md" if folder else "index.md"


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
    title = okf.one_line(meta.get("title")) or okf.title_from_path(path)
    return Item(_escape_title(title), okf.one_line(meta.get("description")))


def _escape_title(title: str) -> str:
    return title.replace("[", "(").replace("]", ")")


def split_intro(text: str) -> str:
    """The hand-written part of an index: every line above the first entry line."""
    lines = text.lstrip("\ufeff").splitlines()
    intro: list[str] = []
    for line in lines:
        if ENTRY.match(line):
            break
        intro.append(line)
    while intro and not intro[-1].strip():
        intro.pop()
    return "\n".join(intro)


def render(folder: str, intro: str, concepts: Mapping[str, Item], subfolders: Mapping[str, str]) -> bytes:
    """The index text for ``folder``; ``concepts`` and ``subfolders`` keyed by name."""
    head = intro.replace("\r\n", "\n").rstrip("\n")
    if not any(HEADING.match(line) for line in _body_lines(head)):
        heading = f"# {okf.title_from_path(folder.rsplit('/', 1)[-1]) if folder else 'Knowledge base'}"
        head = _insert_heading(head, heading)
    lines = [head, ""]
    for name in sorted(concepts):
        item = concepts[name]
        lines.append(_entry(item.title, name, item.description))
    for name in sorted(subfolders):
        lines.append(_entry(name, f"{name}/index.md", subfolders[name]))
    return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8")


def _body_lines(text: str) -> list[str]:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4:].splitlines()
    return text.splitlines()


def _insert_heading(head: str, heading: str) -> str:
    if head.startswith("---\n"):
        end = head.find("\n---", 4)
        if end != -1:
            fm = head[: end + 4]
            rest = head[end + 4:].strip("\n")
            return fm + "\n\n" + heading + ("\n\n" + rest if rest else "")
    return heading + ("\n\n" + head if head.strip() else "")


def _entry(title: str, target: str, description: str) -> str:
    return f"- [{title}]({target}) {DASH} {description}" if description else f"- [{title}]({target})"


def describe_folder(intro: str, name: str) -> str:
    """One sentence for a subfolder's entry: its index intro's first sentence, else a stock one."""
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


def regenerate(
    snapshot: Snapshot,
    changes: Mapping[str, bytes | None] | None = None,
    folders: Iterable[str] | None = None,
) -> dict[str, bytes]:
    """Index files (path -> bytes) that differ from the tree once ``changes`` are applied.

    ``folders`` limits the work to those folders (default: every folder in the KB).
    """
    changes = dict(changes or {})
    paths = set(snapshot.entries) | set(changes)
    paths = {p for p in paths if changes.get(p, b"") is not None}

    def read(path: str) -> bytes | None:
        if path in changes:
            return changes[path]
        if path in snapshot.entries:
            try:
                return snapshot.blob(path)
            except OkfError:
                return None
        return None

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

    intros: dict[str, str] = {}

    def intro_of(folder: str) -> str:
        if folder not in intros:
            raw = read(index_path(folder))
            text = raw.decode("utf-8", errors="replace") if raw else ""
            intro = split_intro(text)
            if folder == "" and not intro.startswith("---\n"):
                intro = ROOT_FRONTMATTER + intro
            intros[folder] = intro
        return intros[folder]

    def kept_descriptions(folder: str) -> dict[str, str]:
        raw = read(index_path(folder))
        if not raw:
            return {}
        out: dict[str, str] = {}
        for line in entry_lines(raw.decode("utf-8", errors="replace")):
            name = _subfolder_name(folder, line.target) if line.target else None
            if name and line.description and line.description != _stock_sentence(name):
                out.setdefault(name, line.description)
        return out

    out: dict[str, bytes] = {}
    for folder in sorted(wanted):
        items: dict[str, Item] = {}
        for name, path in by_folder[folder].items():
            data = read(path)
            items[name] = item_of(data or b"", path)
        kept = kept_descriptions(folder) if subs[folder] else {}
        subfolders = {}
        for sub in subs[folder]:
            name = sub.rsplit("/", 1)[-1]
            subfolders[name] = kept.get(name) or describe_folder(intro_of(sub), name)
        text = render(folder, intro_of(folder), items, subfolders)
        if read(index_path(folder)) != text:
            out[index_path(folder)] = text
    return out


def affected_folders(paths: Iterable[str]) -> set[str]:
    """Folders whose index must be refreshed when ``paths`` change: each one's folder and ancestors."""
    return folders_of(paths)
