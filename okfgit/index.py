"""``index.md`` files: generate them from the tree, check them, keep a hand-written intro.

An index is the hand-written intro (everything above the first entry line, with a
heading added if it has none) followed by one generated list: the folder's concepts by
filename, then its subfolders, each ``- [Title](path) — one sentence``.
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
    lines = text.splitlines()
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
    return sentence or f"Concepts under {name}/."


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

    concept_paths = sorted(p for p in paths if okf.is_concept_path(p))
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
            if not text and folder == "":
                text = ROOT_FRONTMATTER
            intros[folder] = split_intro(text)
        return intros[folder]

    out: dict[str, bytes] = {}
    for folder in sorted(wanted):
        items: dict[str, Item] = {}
        for name, path in by_folder[folder].items():
            data = read(path)
            items[name] = item_of(data or b"", path)
        subfolders = {
            sub.rsplit("/", 1)[-1]: describe_folder(intro_of(sub), sub.rsplit("/", 1)[-1]) for sub in subs[folder]
        }
        text = render(folder, intro_of(folder), items, subfolders)
        if read(index_path(folder)) != text:
            out[index_path(folder)] = text
    return out


def affected_folders(paths: Iterable[str]) -> set[str]:
    """Folders whose index must be refreshed when ``paths`` change: each one's folder and ancestors."""
    return folders_of(paths)
