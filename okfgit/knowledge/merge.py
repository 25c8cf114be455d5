"""Merging two histories of one tier by concept, never by a text merge of the whole tree.

Each file (a concept is one file) is compared at the merge base, here (local) and there
(the other side, e.g. the global remote):

| here | there | the merge takes |
|---|---|---|
| as at the base | changed, added or deleted | there's |
| changed, added or deleted | as at the base | here's |
| the same bytes | the same bytes | that |
| changed | changed differently (or added twice) | here's as the master, and there's committed beside it as its needs-merge sibling (the naming capture uses) |
| deleted | changed | there's: a change is never lost to a deletion |
| changed | deleted | here's |

A variant that already sits in the merged tree at the master or one of its siblings is
not added again, so two machines merging each other's merges converge instead of growing
sibling after sibling. ``index.md`` files take the side that changed them (here's when
both did), then every index is regenerated from the merged tree (``index.regenerate``, the
``index`` verb's generator).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from okfgit.records import field, record
from okfgit.format import index_md as index
from okfgit.plumbing import Entry
from okfgit.knowledge.snapshot import Snapshot


@record
class Merged:
    """The merge as changes to ``here``'s tree, and what a person should know."""

    changes: dict[str, bytes | None] = field(default_factory=dict)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (master, sibling with there's bytes)
    kept: list[str] = field(default_factory=list)  # deleted on one side, changed on the other: kept
    taken: list[str] = field(default_factory=list)  # paths that took there's version


def _key(entry: Entry | None) -> tuple[str, int] | None:
    return (entry.oid, entry.mode) if entry is not None else None


def _is_index(path: str) -> bool:
    return path == "index.md" or path.endswith("/index.md")


def merge(base: Mapping[str, Entry], here: Snapshot, there: Snapshot) -> Merged:
    """Merge ``there`` into ``here`` (both snapshots of the same tier), from ``base``'s entries
    (empty for unrelated histories)."""
    out = Merged()
    read_there: Callable[[str], bytes] = there.blob
    result: dict[str, str] = {p: e.oid for p, e in here.entries.items()}
    both_changed: list[str] = []
    for path in sorted(set(base) | set(here.entries) | set(there.entries)):
        b, h, t = _key(base.get(path)), _key(here.entries.get(path)), _key(there.entries.get(path))
        if h == t or t == b:
            continue  # the same on both sides, or changed here only
        if h != b and _is_index(path):
            continue  # both changed an index: here's intro stays, the entries are regenerated below
        if h == b or h is None:  # changed there only; or deleted here and changed there
            if h != b:
                out.kept.append(path)
            out.taken.append(path)
            if t is None:
                out.changes[path] = None
                result.pop(path, None)
            else:
                out.changes[path] = read_there(path)
                result[path] = there.entries[path].oid
        elif t is None:
            out.kept.append(path)  # changed here, deleted there
        else:
            both_changed.append(path)
    for path in both_changed:
        master = index.needs_merge_master(path) if index.is_needs_merge(path) else path
        variant = there.entries[path].oid
        if any(oid == variant for p, oid in result.items() if p == master or _sibling_of(p, master)):
            continue  # already in the merged tree: nothing would be lost, nothing to add
        sibling = index.free_path(index.needs_merge_path(master), result)
        out.changes[sibling] = read_there(path)
        result[sibling] = variant
        out.conflicts.append((master, sibling))
    out.changes.update(index.regenerate(here, out.changes))
    return out


def _sibling_of(path: str, master: str) -> bool:
    return index.is_needs_merge(path) and index.needs_merge_master(path) == master
