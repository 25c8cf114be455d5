"""Merging two histories of one tier by concept, never by a text merge of the whole tree.

Each file (a concept is one file) is compared at the merge base, here (local) and there
(the other side, e.g. the global remote):

| here | there | the merge takes |
|---|---|---|
| as at the base | changed, added or deleted | there's |
| changed, added or deleted | as at the base | here's |
| the same bytes | the same bytes | that |
| changed | changed differently (or added twice) | the concept merged key by key (``format.merge.concept``, the merge git's driver uses) when the two changed different keys and not the body both; else here's as the master, and there's in its needs-merge sibling (capture's naming; added to the sibling when there is one); but when only there's is protected (``lifecycle.protected_by``: a person verified it, or a Decision), there's stays the master and here's goes to the sibling: no merge replaces it |
| deleted | changed | there's: a change is never lost to a deletion |
| changed | deleted | here's |

A concept has one needs-merge sibling: a later conflict on it adds its variant to that
sibling (``format/needs_merge.py``), and a variant the master or a sibling already holds is
not added again, so two machines merging each other's merges converge, and a concept that
keeps conflicting keeps one sibling instead of growing sibling after sibling. ``index.md`` files take the side that changed them (here's when
both did), then every index is regenerated from the merged tree (``index.regenerate``, the
``index`` verb's generator).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from okfgit.errors import OkfError
from okfgit.format import concept as okf
from okfgit.format import index_md as index
from okfgit.format import merge as by_meaning
from okfgit.format import lifecycle, names, needs_merge
from okfgit.git.objects import Entry, blob_oid
from okfgit.knowledge.snapshot import Snapshot


@dataclass(slots=True)
class Merged:
    """The merge as changes to ``here``'s tree, and what a person should know."""

    changes: dict[str, bytes | None] = field(default_factory=dict)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (master, sibling with there's bytes)
    kept: list[str] = field(default_factory=list)  # deleted on one side, changed on the other: kept
    taken: list[str] = field(default_factory=list)  # paths that took there's version
    merged: list[str] = field(default_factory=list)  # concepts both sides changed, in different keys: merged by key
    guarded: dict[str, str] = field(default_factory=dict)  # master -> why there's (protected) version stayed it


def _key(entry: Entry | None) -> tuple[str, int] | None:
    return (entry.oid, entry.mode) if entry is not None else None


def _is_index(path: str) -> bool:
    return path == "index.md" or path.endswith("/index.md")


def merge(base: Mapping[str, Entry], here: Snapshot, there: Snapshot, source: str = "the other side") -> Merged:
    """Merge ``there`` into ``here`` (both snapshots of the same tier), from ``base``'s entries
    (empty for unrelated histories); ``source`` names ``there`` in a sibling's variant marker."""
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

    def now(path: str) -> bytes:  # a path's bytes in the merge so far
        data = out.changes.get(path)
        return data if data is not None else here.blob(path)

    for path in both_changed:
        master = names.needs_merge_master(path) if names.is_needs_merge(path) else path
        variant = read_there(path)
        if any(needs_merge.holds(now(p), variant) for p in result if p == master or _sibling_of(p, master)):
            continue  # already in the merged tree: nothing would be lost, nothing to add
        by_key = _by_key(base.get(path), here, there, path)
        if by_key is not None:
            out.changes[path] = by_key
            result[path] = blob_oid(by_key)
            out.merged.append(path)
            continue
        sibling = names.needs_merge_path(master)
        label, why = source, lifecycle.protected_in(variant, path) if path == master else ""
        if why and not lifecycle.protected_in(now(path), path):  # no merge replaces what a person verified, or a Decision
            out.changes[path], variant, label = variant, now(path), "this side"
            result[path] = there.entries[path].oid
            out.guarded[path] = why
        data = needs_merge.add(now(sibling), variant, label) if sibling in result else variant
        out.changes[sibling] = data
        result[sibling] = blob_oid(data)
        out.conflicts.append((master, sibling))
    out.changes.update(index.regenerate(here, out.changes))
    return out


def _by_key(base: Entry | None, here: Snapshot, there: Snapshot, path: str) -> bytes | None:
    """The concept both sides changed, merged key by key, when that leaves no conflict (no
    text merge of the body here: a body both changed keeps the sibling rule); else None."""
    if names.is_needs_merge(path) or not okf.is_concept_path(path):
        return None
    try:
        merged = by_meaning.concept(here.object(base.oid) if base is not None else None, here.blob(path),
                                    there.blob(path), path)
    except OkfError:
        return None
    return None if merged.conflicts else merged.data


def _sibling_of(path: str, master: str) -> bool:
    return names.is_needs_merge(path) and names.needs_merge_master(path) == master
