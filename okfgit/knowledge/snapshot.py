"""A tier's knowledge base as it stands in one tree: entries, concepts, citations.

Reads come from the tree at HEAD (or a given revision). ``worktree_snapshot`` exists
only for ``doctor --worktree``, which checks uncommitted files on purpose.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from okfgit.format import concept as okf
from okfgit.errors import OkfError, UsageError, ValidationError
from okfgit.git.objects import FILE_MODE, LINK_MODE, Entry, blob_oid, text_path
from okfgit.knowledge import cards
from okfgit.git.repository import Repo
from okfgit.knowledge.tiers import Tier

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

_T = TypeVar("_T")
_V = TypeVar("_V")
_NOT_NAMES = ("", ".", "..")  # never a part of a path in a tree


@dataclass(frozen=True, slots=True)
class Concept:
    """One concept file parsed in full: where it is, its blob OID, its frontmatter and body.

    For the verbs that check or rewrite a concept's whole frontmatter (doctor, review,
    promote, capture); its fields are read with the same rules as a ``cards.Card``.
    """

    tier: str
    path: str
    oid: str
    meta: dict[str, Any]
    body: bytes

    @property
    def okf_id(self) -> str | None:
        return cards.okf_id_of(self.meta)

    @property
    def title(self) -> str:
        return cards.title_of(self.meta, self.path)

    @property
    def description(self) -> str:
        return okf.one_line(self.meta.get("description"))

    @property
    def type(self) -> str:
        return okf.one_line(self.meta.get("type"))

    @property
    def tags(self) -> list[str]:
        return cards.tags_of(self.meta)

    @property
    def slug(self) -> str:
        return cards.slug_of(self.path)

    @property
    def citation(self) -> str:
        return f"{self.tier}:{self.path}@{self.oid[:7]}"


@dataclass(slots=True)
class Snapshot:
    """The blobs of one tier at one commit (or in its working tree)."""

    tier: Tier
    commit: str | None
    entries: dict[str, Entry]
    _read: Callable[[str], bytes]
    _concepts: dict[str, Concept] = field(default_factory=dict)
    _problems: dict[str, str] = field(default_factory=dict)

    def blob(self, path: str) -> bytes:
        entry = self.entries.get(path)
        if entry is None:
            raise UsageError(f"{self.tier.label}:{path} does not exist")
        return self._read(entry.oid if self.commit is not None else path)

    def object(self, oid: str) -> bytes:
        """The blob ``oid`` from the tier's repository (any blob, such as a merge base's)."""
        if self.commit is None:
            raise UsageError(f"{self.tier.label}: a working tree is not read by object id")
        return self._read(oid)

    def concept_paths(self) -> list[str]:
        return sorted(p for p in self.entries if okf.is_concept_path(p))

    def concept(self, path: str) -> Concept:
        """The parsed concept at ``path``; ValidationError when it cannot be parsed."""
        if path in self._concepts:
            return self._concepts[path]
        if path in self._problems:
            raise ValidationError(self._problems[path])
        entry = self.entries[path]
        name = f"{self.tier.label}:{path}"
        try:
            parsed = okf.parse_concept(b"" if entry.is_link else self.blob(path), name, is_link=entry.is_link)
        except OkfError as exc:
            self._problems[path] = str(exc)
            raise ValidationError(str(exc)) from exc
        concept = Concept(self.tier.label, path, entry.oid, parsed.meta, parsed.body)
        self._concepts[path] = concept
        return concept

    def concepts(self) -> Iterator[Concept]:
        """Every parseable concept, in path order (unparseable ones are in ``problems``)."""
        for path in self.concept_paths():
            try:
                yield self.concept(path)
            except ValidationError:
                continue

    def problems(self) -> dict[str, str]:
        for _ in self.concepts():
            pass
        return dict(self._problems)


class Lookup(dict[str, _V]):
    """A mapping whose values are found when asked for (``_look``), not listed up front."""

    def _look(self, key: str) -> _V | None:
        raise NotImplementedError

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._look(key) is not None

    def __getitem__(self, key: str) -> _V:
        found = self._look(key)
        if found is None:
            raise KeyError(key)
        return found

    @overload
    def get(self, key: str, default: None = None, /) -> _V | None: ...

    @overload
    def get(self, key: str, default: _V, /) -> _V: ...

    @overload
    def get(self, key: str, default: _T, /) -> _V | _T: ...

    def get(self, key: str, default: Any = None, /) -> Any:
        found = self._look(key)
        return default if found is None else found


class TreeEntries(Lookup[Entry]):
    """The blobs of one KB tree by path, for a snapshot's ``entries``: a path is looked up in
    its folder's listing (each folder read once), and the tree is walked whole only when
    something iterates it (doctor does for a link to a missing file, a ``[[name]]`` link or
    an index the root does not reach)."""

    def __init__(self, repo: Repo, commit: str, prefix: str, tree: str | None) -> None:
        super().__init__()
        self._repo = repo
        self._commit = commit
        self._prefix = prefix
        self._tree = tree
        self._folders: dict[str, dict[str, Entry]] = {}
        self._whole = tree is None

    def _look(self, path: str) -> Entry | None:
        if self._whole or self._tree is None:
            return dict.get(self, path)
        folder, _, name = path.rpartition("/")
        if name in _NOT_NAMES or (folder and any(part in _NOT_NAMES for part in folder.split("/"))):
            return None  # "a//b", "/a", "a/./b": never a path of the tree
        listing = self._folders.get(folder)
        if listing is None:
            listing = self._folders[folder] = self._repo.listing(self._tree, folder)
        entry = listing.get(name)
        return entry if entry is not None and entry.is_blob else None

    def _walk(self) -> None:
        if not self._whole:
            super().update(self._repo.tree_entries(self._commit, self._prefix))
            self._whole = True

    def __iter__(self) -> Iterator[str]:
        self._walk()
        return super().__iter__()

    def __len__(self) -> int:
        self._walk()
        return super().__len__()

    def keys(self) -> dict_keys[str, Entry]:
        self._walk()
        return super().keys()

    def items(self) -> dict_items[str, Entry]:
        self._walk()
        return super().items()

    def values(self) -> dict_values[str, Entry]:
        self._walk()
        return super().values()

    def copy(self) -> dict[str, Entry]:
        self._walk()
        return dict(super().items())


def snapshot(tier: Tier, rev: str | None = None) -> Snapshot:
    """The tier's KB at ``rev`` (default HEAD); empty when the repo or its commits are missing."""
    if not tier.exists():
        return Snapshot(tier, None, {}, _no_read)
    repo = tier.open()
    commit = repo.resolve(rev) if rev else repo.head_commit()
    entries = repo.tree_entries(commit, tier.prefix)
    return Snapshot(tier, commit, entries, repo.read_blob)


def worktree_snapshot(tier: Tier) -> Snapshot:
    """The tier's KB as files on disk (for ``doctor --worktree``); links are never followed."""
    root = tier.root
    entries: dict[str, Entry] = {}
    data: dict[str, bytes] = {}
    if root.is_dir():
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in [d for d in dirs if (Path(folder) / d).is_symlink()]:
                dirs.remove(name)  # never followed; reported like any other symlink
                files.append(name)
            for name in files:
                full = Path(folder) / name
                rel = text_path(full.relative_to(root).as_posix())
                if full.is_symlink():
                    raw = os.readlink(full).encode()
                    entries[rel] = Entry(blob_oid(raw), LINK_MODE)
                elif not full.is_file():
                    continue  # a FIFO, socket or device: never opened (git would not track it either)
                else:
                    raw = full.read_bytes()
                    entries[rel] = Entry(blob_oid(raw), FILE_MODE)
                data[rel] = raw
    return Snapshot(tier, None, entries, lambda path: data[path])


def _no_read(oid: str) -> bytes:
    raise UsageError("the tier has no commits")

