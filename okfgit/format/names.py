"""What a path in a knowledge base is, by its name alone: a concept, a reserved file
(``index.md``, ``log.md``), a needs-merge sibling, a folder's index. No git, no disk."""

from __future__ import annotations

import itertools
import re
from collections.abc import Container, Iterator

RESERVED = ("index.md", "log.md")
NEEDS_MERGE_SUFFIX = ".needs-merge.md"
_NEEDS_MERGE = re.compile(r"\.needs-merge(?:-[1-9][0-9]*)?\.md$")

MERGE_DRIVER = "okfgit"  # the merge driver's name: ``merge=okfgit`` in .gitattributes, ``merge.okfgit.*`` in git config


def nfc(text: str) -> str:
    """``text`` in Unicode's NFC, as Claude Code spells paths and okfgit spells slugs (ASCII
    already is: ``unicodedata`` is imported only for the rest)."""
    if text.isascii():
        return text
    import unicodedata

    return unicodedata.normalize("NFC", text)


def is_reserved(path: str) -> bool:
    return path.rsplit("/", 1)[-1] in RESERVED


def is_concept_path(path: str) -> bool:
    return path.endswith(".md") and not is_reserved(path)


def is_needs_merge(path: str) -> bool:
    """``<stem>.needs-merge.md`` (or ``<stem>.needs-merge-<n>.md`` when that was taken): an
    agent's variant of ``<stem>.md`` kept for a person to merge."""
    return ".needs-merge" in path and _NEEDS_MERGE.search(path) is not None


def needs_merge_master(path: str) -> str:
    """The concept a needs-merge sibling belongs to (``a/b.needs-merge-2.md`` -> ``a/b.md``)."""
    return _NEEDS_MERGE.sub(".md", path)


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def index_path(folder: str) -> str:
    return f"{folder}/index.md" if folder else "index.md"


def needs_merge_path(path: str) -> str:
    """The needs-merge sibling of concept ``path`` (``a/b.md`` -> ``a/b.needs-merge.md``)."""
    return path[:-3] + NEEDS_MERGE_SUFFIX if path.endswith(".md") else path + NEEDS_MERGE_SUFFIX


def numbered(path: str) -> Iterator[str]:
    """The names a new file at ``path`` takes, in turn: ``path``, then ``<stem>-2.md``,
    ``-3`` ... (a needs-merge sibling ``a.needs-merge.md``, then ``a.needs-merge-2.md``:
    spec/okf-format.md §8)."""
    yield path
    for n in itertools.count(2):
        yield f"{path[:-3]}-{n}.md"


def free_path(path: str, taken: Container[str]) -> str:
    """The first of ``numbered(path)`` that ``taken`` does not hold."""
    return next(candidate for candidate in numbered(path) if candidate not in taken)
