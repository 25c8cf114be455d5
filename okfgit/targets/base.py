"""The one interface every projection target implements, and what it is given.

A target turns the merged knowledge (a ``View``) into ``Item``s: one per file it owns or
manages, each saying what should happen to that file and why. It reads the disk to
decide (is the file there, is it ours, is it a symlink) but never writes: projection turns
the items into a plan, and ``plan.apply`` is the only writer. A new agent format is one
new module with one class that has ``name``, ``group`` and ``plan``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from okfgit.format import blocks
from okfgit.knowledge.cards import TierCard
from okfgit.context import Context
from okfgit import fsutil
from okfgit.git.objects import blob_oid
from okfgit.local.state import Held, MemoryFiles, State
from okfgit.knowledge.tiers import Tier

WRITE = "write"
REMOVE = "remove"
UNCHANGED = "unchanged"
SKIP = "skip"
FAIL = "fail"
TOUCH = "touch"  # the bytes stay; only the modification time is set (Claude's recall order)


class TierInfo(NamedTuple):
    """One tier that takes part in the projection: it exists and has a KB at HEAD."""

    tier: Tier
    commit: str
    tree: str

    @property
    def label(self) -> str:
        return self.tier.label

    @property
    def root_index(self) -> Path:
        """The tier's root index in its working tree (where an agent can open it)."""
        return self.tier.root / "index.md"


class Merged(NamedTuple):
    """Every concept to project, most specific tier first, then by KB path."""

    concepts: list[TierCard]
    warnings: list[str]
    skipped: list[str] = []  # "<tier>:<path>" of concepts not projected (unreadable, no valid okf_id)
    needs_merge: list[str] = []  # "<tier>:<path>" of every needs-merge sibling, tier by tier, by path


@dataclass(slots=True)
class View:
    """What targets are given: the tiers in precedence order, where the repo is, the state."""

    ctx: Context
    tiers: list[TierInfo]
    worktree: Path | None  # the project repo's working tree (a linked worktree's own)
    main_root: Path | None  # the canonical repo root (a linked worktree maps to the main one)
    state: State
    merge: Callable[[], Merged]
    read: Callable[[str], bytes]  # a blob's bytes by OID, from whichever tier holds it
    nav_protocol: str
    # The bytes okfgit wrote to a file outside the tiers, by the blob OID the ownership
    # record holds (kept in the project repository's object database), or None.
    wrote: Callable[[str], bytes | None] = lambda oid: None
    # The concepts modified in place since the inputs the state records, as (old, new) card
    # pairs, or None when anything else changed there (added, removed, renamed, unreadable).
    changed: Callable[[], list[tuple[TierCard, TierCard]] | None] = lambda: None
    # The global tier's concepts (its cards, visible or not in the merge): the home-level blocks' facts.
    global_cards: Callable[[], list[TierCard]] = lambda: []
    # How many concept files the memory folder holds, what said so, and why a setting was not
    # used (``capture_policy.memory_files``); and the (tier, path) of the concepts added or
    # changed since the inputs the state records (None: not known).
    budget: Callable[[], tuple[int, str, str | None]] = lambda: (10_000, "the default", None)
    fresh: Callable[[], set[tuple[str, str]] | None] = lambda: None
    _merged: Merged | None = None

    def tier(self, name: str) -> TierInfo | None:
        return next((t for t in self.tiers if t.tier.name == name), None)

    def merged(self) -> Merged:
        """The merged concepts (computed on first use: block targets never need them)."""
        if self._merged is None:
            self._merged = self.merge()
        return self._merged


class Item(NamedTuple):
    """What should happen to one file, and why.

    ``oid`` is the blob OID of ``data`` (write) or of the file's bytes (unchanged).
    ``memory_name`` and ``concept`` are set for projected memory files; ``keep_record``
    says whether okfgit still owns the file afterwards when it is left alone.
    """

    path: Path
    action: str
    reason: str
    data: bytes | None = None
    old: bytes | None = None
    fsync: bool = False
    oid: str | None = None
    memory_name: str | None = None
    concept: TierCard | None = None
    keep_record: bool = True
    via: Path | None = None  # the symlink ``path`` was reached through (a home-level block file)
    mtime_ns: int | None = None  # the modification time the file gets (write, touch)
    held: bool = False  # a memory file an agent deleted, not written back (spec/okf-capture-sync.md §7)


class Save(NamedTuple):
    """A person's words a target keeps before it regenerates the file they were in: written
    (fsynced) first, and when that fails the file at ``before`` is not written."""

    path: Path  # where they are kept
    data: bytes
    before: Path  # the file regenerated once they are safe
    reason: str


@dataclass(slots=True)
class TargetPlan:
    items: list[Item] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    memory_dir: Path | None = None  # set by the memory target: the folder it projected into
    watched: list[str] = field(default_factory=list)  # files whose change may change this plan (the fast path)
    rendered: list[str] = field(default_factory=list)  # index files rendered from every concept (State.rendered)
    # Memory files (names in memory_dir) left exactly as recorded: no item each, since a
    # one-change run over 10,000 concepts must not build 10,000 objects.
    kept: list[str] = field(default_factory=list)
    # ... and, set when only a few files were planned, every other recorded file: the record's
    # names but ``kept_but`` (the planned ones), not listed unless a report asks for them.
    kept_rest: MemoryFiles | None = None
    kept_but: frozenset[str] = frozenset()
    # Set by the memory target: the top files' time anchor and the folder's generation
    # (targets/recall.py), and the recall order it chose (file names, first first).
    recall_top_s: int | None = None
    generation: int | None = None
    recall_order: list[str] = field(default_factory=list)
    # Set by the memory target when it planned: how many files lead the recall order as what
    # changed last, the concepts not projected and the warnings that come from the concepts
    # (recorded in the state, so that a run where only bodies changed can repeat them).
    fresh: int | None = None
    skipped: list[str] | None = None
    notes: list[str] | None = None
    needs_merge: list[str] | None = None
    held: Held | None = None  # what the memory folder's budget held (set with ``notes``)
    saves: list[Save] = field(default_factory=list)  # written before every item



def folder_problem(folder: Path) -> str | None:
    """Why files cannot be written into ``folder`` (created on demand), or None."""
    probe = folder
    while True:
        try:
            os.stat(probe)
        except FileNotFoundError:
            if probe.parent == probe:
                return "no part of its path exists"
            probe = probe.parent
            continue
        except NotADirectoryError:
            return "cannot write into it: a folder on its path is a file"
        except OSError as exc:
            return f"cannot write into it: {exc.strerror or exc}"
        break
    if not os.path.isdir(probe):
        return f"cannot write into it: {probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"cannot write into it: {probe} is not writable"
    return None


class Target(Protocol):
    """A projection target: a kind of file some coding agent reads."""

    name: str  # shown in reports: claude-memory, claude-md, agents-md, codex-agents
    group: str  # what --target selects it by: claude or agents

    def plan(self, view: View) -> TargetPlan:
        """Items for every file this target manages; reads the disk, writes nothing."""
        ...


def plan_block(path: Path, scope: str, content: str, why: str, *, follow_link: bool = False,
               owned: State | None = None, wrote: Callable[[str], bytes | None] | None = None) -> TargetPlan:
    """The item for a managed block in the person's file at ``path``.

    The file holds a person's bytes: outside the block nothing changes; a folder or a file
    that is not UTF-8 is refused (``fail``) and left untouched. A symlink is refused too,
    unless ``follow_link`` (home-level files, often links into a dotfiles folder): then
    the block is updated in the file the link resolves to, which must be a regular file
    the user can write, and the link itself stays as it is. ``owned``: the ownership record,
    which says what okfgit last wrote at ``path`` (its blob OID), and ``wrote`` gives those
    bytes back when it can: a block that lost its end marker is then recognised
    (``blocks.upsert_block``'s ``wrote`` and ``known``).
    """
    out = TargetPlan()
    via: Path | None = None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        out.items.append(Item(path, FAIL, "cannot write it: a folder on its path is a file (nothing was changed)"))
        return out
    except OSError as exc:
        out.items.append(Item(path, FAIL, f"cannot read it: {exc.strerror or exc}"))
        return out
    old: bytes | None = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            if not follow_link:
                out.items.append(Item(path, FAIL, "is a symlink; okfgit does not replace links (nothing was changed)"))
                return out
            target, problem = link_target(path)
            if problem is not None:
                out.items.append(Item(path, FAIL, f"{problem}; nothing was changed"))
                return out
            path, via = target, path
        elif not stat.S_ISREG(st.st_mode):
            out.items.append(Item(path, FAIL, "is not a regular file (nothing was changed)"))
            return out
        problem = fsutil.read_only(path)
        if problem is not None:
            out.items.append(Item(path, FAIL, problem, via=via))
            return out
        try:
            old = path.read_bytes()
        except OSError as exc:
            out.items.append(Item(path, FAIL, f"cannot read it: {exc.strerror or exc}", via=via))
            return out
    try:
        text = old.decode("utf-8") if old is not None else None
    except UnicodeDecodeError as exc:
        out.items.append(Item(path, FAIL, f"is not UTF-8 (byte {exc.start}); nothing was changed", via=via))
        return out
    # What okfgit last wrote here (the ownership record's blob OID): a block that lost its end
    # marker is then recognised as okfgit's text and replaced, not kept as a person's.
    record = owned.record(os.path.abspath(path)) if owned is not None else None
    same = (lambda whole: blob_oid(whole.encode("utf-8")) == record.oid) if record is not None else None
    known: tuple[str, ...] = ()
    last = wrote(record.oid) if record is not None and wrote is not None else None
    if last is not None:
        try:
            previous = blocks.read_block(last.decode("utf-8"), scope)
        except UnicodeDecodeError:
            previous = None
        known = (previous,) if previous else ()
    result = blocks.upsert_block(text, scope, content, str(path), same, known)
    out.warnings.extend(result.warnings)
    new = result.text.encode("utf-8")
    through = f", through the symlink {via}" if via is not None else ""
    if old is not None and new == old:
        out.items.append(Item(path, UNCHANGED, why + through, oid=blob_oid(old), via=via))
    else:
        reason = f"{why} (file created)" if old is None else f"{why} (block id={scope} updated{through})"
        out.items.append(Item(path, WRITE, reason, data=new, old=old, fsync=True, oid=blob_oid(new), via=via))
    return out


def link_target(link: Path) -> tuple[Path, str | None]:
    """The regular file the symlink ``link`` resolves to, or why okfgit will not write there.

    The block is then written with a temp file and a rename in the target's folder, so both
    the file and its folder must be writable.
    """
    try:
        shown = os.readlink(link)
    except OSError as exc:  # gone or replaced since it was looked at
        return link, f"is a symlink okfgit cannot read ({exc.strerror or exc})"
    try:
        target = Path(os.path.realpath(link, strict=True))
        st = os.stat(target)
    except FileNotFoundError:
        where = Path(os.path.normpath(link.parent / shown))
        return link, f"is a symlink to {where}, which does not exist"
    except OSError as exc:
        return link, f"is a symlink okfgit cannot follow ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return link, f"is a symlink to {target}, which is not a regular file"
    if not os.access(target, os.W_OK) or not st.st_mode & stat.S_IWUSR:
        return link, (f"is a symlink to {target}, which is read-only; okfgit does not replace a read-only file. "
                      f"To let it: chmod u+w {target}")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        return link, f"is a symlink to {target}, whose folder you cannot write (okfgit replaces the file there)"
    return target, None
