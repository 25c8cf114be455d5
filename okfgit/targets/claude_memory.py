"""Claude Code's memory folder: one file per concept, verbatim, and ``MEMORY.md``.

The folder is ``<claude home>/projects/<enc>/memory/`` for the canonical repo root (or
``autoMemoryDirectory``), see ``claude_home``. Each concept that won the merge becomes a
file whose bytes are its blob, so the file's ``git hash-object`` is the tree entry's OID
(the loop guard of DESIGN.md rule 3). Files are flat in the folder, named by the
concept's ``okf_origin`` (the file capture took it from) when that is a safe relative
name, else by its KB file name; when two concepts want one name the first in order keeps
it (concepts with an origin first, then most specific tier first, then by KB path) and
the others get ``<stem>-<first 8 hex of okf_id>.md``. Names are compared case-folded, so
the folder works on case-insensitive file systems too.

Ownership: a file is overwritten or removed only when its current OID is the one okfgit
recorded writing there (or it already holds exactly the bytes wanted); anything else is
left for capture and reported. A name with subfolders is written, read or removed only
when every folder between the memory folder and the file is a real folder or missing
(okfgit creates it): a symlink there could lead anywhere on the disk.
"""

from __future__ import annotations

import bisect
import datetime as dt
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from okfgit.targets import claude_home
from okfgit.format import agent_memory
from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.format.words import plural
from okfgit.git.objects import FILE_MODE, Entry, blob_oid, sha1_hex, shown
from okfgit.errors import OkfError
from okfgit.knowledge.cards import Card, TierCard, card_of
from okfgit.local import paths
from okfgit.local.state import MemoryFile
from okfgit.local.state import State as MemoryState
from okfgit.targets import memory_index, recall
from okfgit.targets.home_agents import used
from okfgit.targets.base import (FAIL, REMOVE, SKIP, TOUCH, UNCHANGED, WRITE, Held, Item, Save, TargetPlan, View,
                                 folder_problem)

INDEX_NAME = "MEMORY.md"
_MAX_COMPONENT = 255
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,200}\.md")


class ClaudeMemory:
    """The memory folder Claude Code reads for this repository."""

    name = "claude-memory"
    group = "claude"

    def plan(self, view: View) -> TargetPlan:
        out = TargetPlan()
        if view.main_root is None:
            return out
        choice = claude_home.memory_dir(view.main_root, view.ctx.environ, view.ctx.home, project_root=view.worktree)
        out.warnings.extend(choice.warnings)
        out.watched.extend(choice.watched)
        folder = Path(os.path.abspath(choice.path))
        if not view.tiers and not view.state.memory_files:
            return out  # nothing projected before, nothing to project now
        home = claude_home.claude_home(view.ctx.environ, view.ctx.home)
        if not view.state.memory_files and not folder.exists() and not used(home / "CLAUDE.md", "claude",
                                                                            view.ctx.environ):
            out.watched.append(str(home))  # Claude Code never ran here: no folder of its own until it does
            return out
        problem = folder_problem(folder)
        if problem is not None:
            # No memory_dir on the plan: the ownership records stay exactly as they were.
            out.items.append(Item(folder, FAIL, f"{problem} (nothing was changed there)"))
            return out
        out.memory_dir = folder
        if _changed_in_place(view, folder, out):
            return out
        merged = view.merged()
        shown, left, out.held, problem = _within_budget(view, folder,
                                                        [c for c in merged.concepts if not _declined(view.state, c)])
        names, warnings = assign_names(shown)
        out.notes = [*merged.warnings, *warnings, *([problem] if problem else [])]
        out.skipped = list(merged.skipped)
        out.needs_merge = list(merged.needs_merge)
        out.warnings.extend(out.notes)
        out.items.extend(_reconcile(view, folder, names, out.kept, left))
        _recall_order(view, folder, names, out)
        index = _index_item(view, folder, names, shown, out)
        if index is not None:
            out.items.append(index)
        old = view.state.memory_dir
        if old is not None and old != folder:
            out.items.extend(_old_index(view, old / INDEX_NAME))
        return out


# -- the budget ---------------------------------------------------------------------------------


def _within_budget(view: View, folder: Path, concepts: list[TierCard],
                   ) -> tuple[list[TierCard], dict[str, set[str]], Held, str | None]:
    """The concepts the memory folder holds, in their order: every one while they fit its
    budget, else the first ``limit`` in Claude's recall order and every human-verified one
    (``recall.budgeted``); the paths of the others by tier; what it held; and why the budget's
    setting was not used. A concept okfgit never projected counts as changed last when it was
    added or changed since the last projection's inputs (``View.fresh``), else as old."""
    limit, source, problem = view.budget()
    if len(concepts) <= limit:
        return concepts, {}, Held(limit, source, len(concepts), len(concepts)), problem
    state = view.state
    records = {(r.tier, r.path): r for r in state.memory_files.values()} if state.memory_dir == folder else {}
    fresh = (view.fresh() or set()) if records else set()
    tier_rank = {t.label: n for n, t in enumerate(view.tiers)}
    candidates = []
    for concept in concepts:
        rec, card = records.get((concept.tier, concept.path)), concept.card
        since = (rec.since if rec.oid == card.oid else state.generation + 1) if rec is not None else \
            (state.generation + 1 if (concept.tier, concept.path) in fresh else 0)
        candidates.append(recall.Candidate(concept.path, tier_rank.get(concept.tier, len(tier_rank)), concept.path,
                                           card.captured, card.verified, card.type,
                                           card.status == lifecycle.DEPRECATED, since))
    inside: list[TierCard] = []
    left: dict[str, set[str]] = {}
    for concept, kept in zip(concepts, recall.budgeted(candidates, limit)):
        if kept:
            inside.append(concept)
        else:
            left.setdefault(concept.tier, set()).add(concept.path)
    return inside, left, Held(limit, source, len(inside), len(concepts)), problem


# -- the folder as okfgit left it ---------------------------------------------------------


def _declined(st: MemoryState, concept: TierCard) -> bool:
    """An agent deleted this concept's memory file and capture took that as its judgement: the
    concept is deprecated now, or still the blob capture proposed deprecating."""
    left = st.declined.get(concept.card.okf_id or "")
    return left is not None and (left == concept.card.oid or concept.card.status == lifecycle.DEPRECATED)


def _folder_unchanged(view: View, folder: Path) -> bool:
    """No file was added, removed or renamed in the folder since okfgit last wrote it."""
    state = view.state
    if state.memory_dir != folder or state.memory_dir_mtime_ns is None:
        return False
    try:
        return os.stat(folder).st_mtime_ns == state.memory_dir_mtime_ns
    except OSError:
        return False


def _as_left(view: View, folder: Path) -> bool:
    """The folder and MEMORY.md are as okfgit left them, and no concept went stale since."""
    state = view.state
    if not _folder_unchanged(view, folder):
        return False
    if state.stale_at is not None and view.ctx.now() >= state.stale_at:
        return False  # a concept went stale since: its MEMORY.md line says so now
    record = state.targets.get(str(folder / INDEX_NAME))
    if record is None:
        return False
    try:
        return record.matches(os.lstat(folder / INDEX_NAME))
    except OSError:
        return False


# -- when only concepts' bodies changed -------------------------------------------------------

_NS = 1_000_000_000
# What a memory file's name, its MEMORY.md line, its rank for recall and the merge depend on:
# a change that keeps all of these moves nothing but the file's bytes and its recall time.
SAME = ("okf_id", "origin", "title", "description", "summary", "type", "status", "stale_after", "source",
         "verified", "flaw")


def _changed_in_place(view: View, folder: Path, out: TargetPlan) -> bool:
    """Plan a run where only concepts' bytes changed (or nothing did), without reading every
    concept: True when it did (``out`` is complete), False when the full plan must decide.

    It applies when the folder and MEMORY.md are as okfgit left them, the previous run
    recorded what the full plan needs to repeat (its warnings, the recall order's fresh
    count), and every changed concept kept everything but its bytes (``SAME``) and is
    projected to a file okfgit wrote. Then the names, MEMORY.md and the merge are unchanged;
    each changed file is rewritten, and the recall order moves the changed concepts to the
    front of what changed last (the rest keeps its order; ``_moved_first``), which the
    recorded times of the top 200 give without ranking 10,000 files. The result is exactly
    the full plan's.
    """
    state = view.state
    top_before = state.recall_top_s
    if state.recall_fresh is None or state.notes is None or state.skipped is None or state.needs_merge is None \
            or top_before is None \
            or state.memory_dir != folder or not _as_left(view, folder):
        return False
    changed = view.changed()
    held = state.held
    if changed is None or held is None or (held.limit, held.source) != view.budget()[:2]:
        return False  # ... or the budget changed: the full plan says what the folder holds now
    keys = {(old.tier, old.path): (old, new) for old, new in changed}
    rest_before = (top_before - recall.RECALL_LIMIT - recall.REST_AGE_S) * _NS
    at: dict[int, str] = {}  # the recall order's top, by position, from the recorded times
    mine: dict[tuple[str, str], str] = {}
    for name, rec in state.memory_files.of_concepts(keys).items():  # the record's rows of these concepts only
        if (rec.tier, rec.path) in mine:
            return False
        mine[(rec.tier, rec.path)] = name
    for name, rec in state.memory_files.newer_than(rest_before).items():  # ... and of the recall order's top
        position, off = divmod(top_before * _NS - rec.mtime_ns, _NS)
        if off or not 0 <= position < recall.RECALL_LIMIT or position in at:
            return False
        at[position] = name
    if sorted(at) != list(range(min(recall.RECALL_LIMIT, len(state.memory_files)))):
        return False
    tier_rank = {t.label: n for n, t in enumerate(view.tiers)}
    order = [at[i] for i in sorted(at)]
    fresh_before = set(order[:state.recall_fresh])  # what changed last leads the order
    writes: dict[str, Item] = {}
    moving: list[tuple[int, str, str]] = []
    newly_fresh = 0
    for (tier, path), (old, new) in keys.items():
        found = mine.get((tier, path))
        if found is None or "/" in found or not okf.is_valid_okf_id(new.card.okf_id):
            return False
        name, rec = found, state.memory_files[found]
        if rec.oid != old.card.oid or rec.okf_id != old.card.okf_id or \
                any(getattr(old.card, k) != getattr(new.card, k) for k in SAME):
            return False
        kind, data = _current(folder / name)
        if kind != "file" or data is None or blob_oid(data) != rec.file_oid:
            return False  # not as okfgit left it: the full plan says what to do with it
        wanted = _Wanted(view, new)
        if wanted.oid == rec.file_oid:
            return False
        writes[name] = Item(folder / name, WRITE, f"holds {new.citation} (updated){wanted.note}", data=wanted.data,
                            old=data, oid=wanted.oid, memory_name=name, concept=new)
        if new.card.status != lifecycle.DEPRECATED:
            moving.append((tier_rank.get(tier, len(tier_rank)), path, name))
            newly_fresh += name not in fresh_before
    if held.held < held.total and state.recall_fresh + newly_fresh > recall.FRESH_LIMIT:
        return False  # one that changed last may leave the budget's first files: the full plan says which
    top = top_before
    if writes:
        top = int(view.ctx.clock())  # written files are never recorded at their new time: the order is set now
        if top < top_before:
            return False
        reordered = _moved_first(view, order, state.recall_fresh, [name for _, _, name in sorted(moving)], tier_rank)
        if reordered is None:
            return False
        order = reordered
    recorded = {n: state.memory_files[n].mtime_ns for n in order if n not in writes}
    wanted_times = recall.mtimes(order, top, recorded)
    rest = (top - recall.RECALL_LIMIT - recall.REST_AGE_S) * _NS
    for name, item in writes.items():  # a changed file below the top (a deprecated one) gets the rest's time
        writes[name] = item._replace(mtime_ns=wanted_times.get(name, rest))
    for name in order:
        if name not in writes and recorded[name] != wanted_times[name]:
            writes[name] = Item(folder / name, TOUCH, f"holds {state.memory_files[name].citation}; time set for "
                                "Claude's recall order", oid=state.memory_files[name].file_oid, memory_name=name,
                                mtime_ns=wanted_times[name])
    out.items.extend(writes[n] for n in sorted(writes))
    out.kept_rest, out.kept_but = state.memory_files, frozenset(writes)
    record = state.targets[str(folder / INDEX_NAME)]
    out.items.append(Item(folder / INDEX_NAME, UNCHANGED, "index of the memory folder", oid=record.oid))
    out.recall_top_s, out.recall_order = top, order[:recall.RECALL_LIMIT]
    out.generation = state.generation + (1 if any(i.action == WRITE for i in writes.values()) else 0)
    out.fresh = min(recall.FRESH_LIMIT, state.recall_fresh + newly_fresh)
    out.notes, out.skipped, out.needs_merge = list(state.notes), list(state.skipped), list(state.needs_merge)
    out.held = state.held
    out.warnings.extend(state.notes)
    return True


def _moved_first(view: View, order: list[str], fresh: int, first: list[str],
                 tier_rank: dict[str, int]) -> list[str] | None:
    """The recall order's top after the changed files ``first`` joined what changed last:
    they lead it, and when the slots for what changed last are all taken, the last of those
    before go where the rest's rule puts them: a binary search of the rest's files in the
    top (already in that order), so only a few of their cards are read. One that goes past
    them all is below the top 200 (it shares the rest's time). None when the top would then
    need files whose order the recorded times do not tell."""
    ahead = set(first)
    leading = first + [n for n in order[:fresh] if n not in ahead]
    rest = [n for n in order[fresh:] if n not in ahead]
    pushed = leading[recall.FRESH_LIMIT:]
    if not pushed:
        return leading + rest
    leading = leading[:recall.FRESH_LIMIT]
    keys: dict[str, tuple[int, int, str, str]] = {}

    def key(name: str) -> tuple[int, int, str, str]:
        if name not in keys:
            rec = view.state.memory_files[name]
            card = card_of(rec.tier, rec.path, Entry(rec.oid, FILE_MODE), view.read(rec.oid))
            keys[name] = recall.rest_key(recall.Candidate(
                name, tier_rank.get(rec.tier, len(tier_rank)), rec.path, card.captured, card.verified, card.type,
                card.status == lifecycle.DEPRECATED, 0))
        return keys[name]

    below = len(view.state.memory_files) > len(order)  # files below the top, in an order no time tells
    merged = list(rest)
    after: list[str] = []  # past the last of the top's rest: somewhere among the files below it
    try:
        for name in pushed:
            if below and (not rest or key(name) > key(rest[-1])):
                after.append(name)
                continue
            merged.insert(bisect.bisect_left(merged, key(name), key=key), name)
    except (OkfError, KeyError, ValueError):
        return None
    if after and len(leading) + len(merged) < recall.RECALL_LIMIT:
        return None  # the top would need files the recorded times do not order
    return leading + merged + after  # ``after`` is below the top either way: the rest's time


# -- names ------------------------------------------------------------------------------------


def assign_names(concepts: list[TierCard]) -> tuple[dict[str, TierCard], list[str]]:
    """File name (relative to the memory folder) for each concept; warnings for bad origins."""
    warnings: list[str] = []
    wanted: list[tuple[str, TierCard]] = []
    for concept in concepts:
        origin = concept.card.origin if concept.card.source != agent_memory.GEMINI else None  # a Gemini note's name
        if origin is not None:
            why = origin_problem(origin)
            if why is None:
                wanted.append((origin, concept))
                continue
            warnings.append(f"{concept.citation}: okf_origin {origin!r} {why}; projected under its own file name")
    with_origin = {id(c) for _, c in wanted}
    for concept in concepts:
        if id(concept) not in with_origin:
            wanted.append((_own_name(concept), concept))
    taken: set[str] = {INDEX_NAME.casefold()}
    out: dict[str, TierCard] = {}
    for name, concept in wanted:
        chosen = name
        if chosen.casefold() in taken:
            chosen = _suffixed(name, _suffix(concept))
            n = 2
            while chosen.casefold() in taken:
                chosen = _suffixed(name, f"{_suffix(concept)}-{n}")
                n += 1
        taken.add(chosen.casefold())
        out[chosen] = concept
    return out, warnings


def origin_problem(origin: str) -> str | None:
    """Why ``origin`` cannot be a file name in the memory folder, or None when it can."""
    if _PLAIN_NAME.fullmatch(origin) and origin.casefold() != "memory.md":
        return None  # the common case, answered without the checks below
    if "\x00" in origin or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in origin):
        return "contains NUL or control characters"
    if shown(origin) != origin:
        return "is not UTF-8"
    if origin.startswith("/") or "\\" in origin:
        return "is not a relative path"
    if len(origin) > 1 and origin[1] == ":":
        return "starts like a Windows drive (X:)"
    parts = origin.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "tries to leave the memory folder"
    if any(p.startswith(".") for p in parts):
        return "names a hidden file or folder"
    if any(len(p.encode("utf-8")) > _MAX_COMPONENT for p in parts):
        return "has a name too long for the file system"
    if not origin.endswith(".md") or len(origin) <= 3:
        return "is not a .md file name"
    if origin.casefold() == INDEX_NAME.casefold():
        return "is MEMORY.md, which is the folder's index"
    if parts[-1] == INDEX_NAME:
        return "is named MEMORY.md, which Claude Code never recalls"
    if agent_memory.reserved(origin):
        return "lies in a folder Claude Code keeps for itself (a team store, logs, sessions, proposals)"
    return None


def _suffixed(name: str, suffix: str) -> str:
    """``<stem>-<suffix>.md``, the stem's last part cut short (at a character) when the name
    would not fit the file system any more."""
    folder, _, base = name[:-3].rpartition("/")
    room = _MAX_COMPONENT - len(f"-{suffix}.md")
    base = base.encode("utf-8")[:room].decode("utf-8", "ignore")
    return f"{folder + '/' if folder else ''}{base}-{suffix}.md"


def _own_name(concept: TierCard) -> str:
    name = concept.path.rsplit("/", 1)[-1]
    if origin_problem(name) is None:
        return name
    return f"concept-{_suffix(concept)}.md"


def _suffix(concept: TierCard) -> str:
    if okf.is_valid_okf_id(concept.card.okf_id):
        return str(concept.card.okf_id).replace("-", "")[:8]
    return sha1_hex(concept.key.encode("utf-8"))[:8]


# -- files ------------------------------------------------------------------------------------


def _current(path: Path) -> tuple[str, bytes | None]:
    """("missing"|"file"|"other", bytes of a regular file): one lstat for a missing file."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return "other", None
        return "file", path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return "missing", None
    except OSError:
        return "other", None


def _as_written(path: str, rec: MemoryFile | None) -> bool:
    """The regular file at ``path`` has the size and modification time okfgit recorded when
    it wrote it (git's rule for an unchanged file), so it holds those bytes without a read."""
    if rec is None:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and rec.record.matches(st)


def _subfolder_problem(folder: Path, name: str, checked: dict[str, str | None]) -> str | None:
    """Why ``folder/name`` cannot be reached through real folders only, or None.

    Each folder between ``folder`` and the file must be a real folder (not a symlink) or
    not exist yet (then okfgit creates it); one lstat per folder, cached in ``checked``.
    """
    if "/" not in name:
        return None
    parent = name.rsplit("/", 1)[0]
    if parent not in checked:
        above = _subfolder_problem(folder, parent, checked)  # the folders above ``parent``
        checked[parent] = above if above is not None else _real_folder_problem(folder / parent)
    return checked[parent]


def _real_folder_problem(path: Path) -> str | None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # missing: okfgit creates it (a file above it was reported already)
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or exc}); left alone"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink; okfgit does not write through links"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder; left alone"
    return None


def _listing(folder: Path) -> set[str] | None:
    """Case-folded names directly in ``folder`` (one scandir instead of a failed lstat per
    new file; case-folded because on a case-insensitive file system ``Foo.md`` is ``foo.md``)."""
    try:
        with os.scandir(folder) as it:
            return {entry.name.casefold() for entry in it}
    except FileNotFoundError:
        return set()
    except OSError:
        return None


def _reconcile(view: View, folder: Path, names: dict[str, TierCard], kept: list[str],
               left: dict[str, set[str]]) -> Iterator[Item]:
    state = view.state
    same_folder = state.memory_dir == folder
    records = state.memory_files if same_folder else {}
    present = _listing(folder)  # listed once: an absent name needs no lstat
    # Every file okfgit recorded there is gone (a new machine, the folder emptied by hand): that
    # is no agent's judgement on each fact, and every file is written again.
    wiped = bool(records) and (present is None or not any(n.split("/", 1)[0].casefold() in present for n in records))
    checked: dict[str, str | None] = {}
    where = str(folder)  # a Path per file only for the files that are not kept
    for name in sorted(names):
        concept = names[name]
        rec = records.get(name)
        wanted = _Wanted(view, concept)
        as_recorded = rec is not None and rec.oid == concept.card.oid and rec.path == concept.path \
            and rec.tier == concept.tier and rec.okf_id == concept.card.okf_id and rec.file_oid == wanted.oid
        problem = _subfolder_problem(folder, name, checked)
        if problem is not None:
            yield Item(folder / name, SKIP, f"{problem}, so {concept.citation} is not projected there",
                       memory_name=name, concept=concept, keep_record=False)
            continue
        missing = present is not None and "/" not in name and name.casefold() not in present
        if as_recorded and not missing and _as_written(os.path.join(where, name), rec):
            kept.append(name)  # as okfgit wrote it (git's stat rule): not read
            continue
        path = folder / name
        why = f"holds {concept.citation}"
        kind, data = ("missing", None) if missing else _current(path)
        if kind == "missing" and as_recorded and not wiped:
            # An agent deleted the file okfgit wrote: its judgement that the fact is stale.
            # Capture proposes deprecating the concept; until then the file is not written back.
            yield Item(path, SKIP, f"was deleted by an agent; {concept.citation} is not written back (capture "
                       "proposes deprecating it)", memory_name=name, concept=concept, held=True)
            continue
        if kind == "missing":
            yield Item(path, WRITE, f"{why} (new){wanted.note}", data=wanted.data, oid=wanted.oid,
                       memory_name=name, concept=concept)
        elif kind == "other":
            yield Item(path, SKIP, "is a symlink or a folder, not a file okfgit wrote; left alone",
                       memory_name=name, concept=concept)
        else:
            assert data is not None
            current = blob_oid(data)
            if current == wanted.oid:
                yield Item(path, UNCHANGED, why, oid=current, memory_name=name, concept=concept)
            elif rec is not None and current == rec.file_oid:
                yield Item(path, WRITE, f"{why} (updated){wanted.note}", data=wanted.data, old=data,
                           oid=wanted.oid, memory_name=name, concept=concept)
            else:
                yield Item(path, SKIP, f"was not written by okfgit (or was edited since); left for capture, "
                           f"so {concept.citation} is not projected there", memory_name=name, concept=concept)
    old_folder = state.memory_dir
    if old_folder is None:
        return
    for name, rec in sorted(state.memory_files.items()):
        if same_folder and name in names:
            continue
        where = ("outside the memory folder's budget" if rec.path in left.get(rec.tier, ()) else
                 "no longer in the knowledge base") if same_folder else "the memory folder moved"
        yield from _removal(old_folder, name, rec, where, checked if same_folder else {})


def _removal(folder: Path, name: str, rec: MemoryFile, where: str, checked: dict[str, str | None]) -> Iterator[Item]:
    path = folder / name
    problem = _subfolder_problem(folder, name, checked)
    if problem is not None:
        yield Item(path, SKIP, f"{problem}; held {rec.citation}, {where}, and is not removed", memory_name=name,
                   keep_record=False)
        return
    kind, data = _current(path)
    if kind == "missing":
        return
    if kind == "file" and data is not None and blob_oid(data) == rec.file_oid:
        yield Item(path, REMOVE, f"held {rec.citation}, {where}", old=data, memory_name=name)
    else:
        yield Item(path, SKIP, f"held {rec.citation}, {where}, but was edited since okfgit wrote it; "
                   "left for capture", memory_name=name, keep_record=False)


class _Wanted:
    """The bytes a concept's memory file should hold: its blob verbatim, or, when a key Claude
    reads sits past the lines it reads, the blob with those keys moved to the top."""

    def __init__(self, view: View, concept: TierCard) -> None:
        self._view = view
        self._oid = concept.card.oid
        self._fixed: bytes | None = None
        if concept.card.summary_line > recall.SCAN_LINES:
            self._fixed = recall.within_scan(view.read(concept.card.oid))

    @property
    def oid(self) -> str:
        return blob_oid(self._fixed) if self._fixed is not None else self._oid

    @property
    def data(self) -> bytes:
        return self._fixed if self._fixed is not None else self._view.read(self._oid)

    @property
    def note(self) -> str:
        return f"; keys {', '.join(recall.SCAN_KEYS)} moved within Claude's {recall.SCAN_LINES}-line read" \
            if self._fixed is not None else ""


# -- Claude's recall order ------------------------------------------------------------------


def _recall_order(view: View, folder: Path, names: dict[str, TierCard], out: TargetPlan) -> None:
    """Rank the projected files (targets/recall.py) and give each the modification time its
    rank needs, so that Claude's newest 200 are okfgit's top 200. Only files whose recorded
    time differs are touched; a run that changes nothing moves no time."""
    state = view.state
    records = state.memory_files if state.memory_dir == folder else {}
    first = not records
    writes = any(i.action == WRITE and i.memory_name for i in out.items)
    generation = 0 if first else state.generation + (1 if writes else 0)
    live = {i.memory_name: i for i in out.items if i.memory_name and i.action in (WRITE, UNCHANGED)}
    projected = [*live, *out.kept]
    tier_rank = {t.label: n for n, t in enumerate(view.tiers)}
    candidates = []
    for name in projected:
        concept = names[name]
        rec = records.get(name)
        since = rec.since if rec is not None and rec.oid == concept.card.oid else generation
        fact = concept.card
        candidates.append(recall.Candidate(name, tier_rank.get(concept.tier, len(tier_rank)), concept.path,
                                           fact.captured, fact.verified, fact.type, fact.status == "deprecated",
                                           since))
    fresh, rest = recall.split(candidates)
    order = fresh + rest
    out.fresh = len(fresh)
    recorded = {n: r.mtime_ns for n, r in records.items() if n not in live or live[n].action != WRITE}
    top = state.recall_top_s
    if top is None or recall.needs_restamp(order, recorded, top):
        top = int(view.ctx.clock())
    wanted = recall.mtimes(order, top, recorded)
    out.recall_top_s, out.generation, out.recall_order = top, generation, order
    for index, item in enumerate(out.items):
        name = item.memory_name or ""
        if name not in wanted:
            continue
        if item.action == WRITE:
            out.items[index] = item._replace(mtime_ns=wanted[name])
        elif item.action == UNCHANGED and recorded.get(name) != wanted[name]:
            out.items[index] = item._replace(action=TOUCH, mtime_ns=wanted[name],
                                             reason=f"{item.reason}; time set for Claude's recall order")
    touched = set()
    for name in out.kept:
        rec = records.get(name)
        if rec is not None and rec.mtime_ns != wanted[name]:
            touched.add(name)
            out.items.append(Item(folder / name, TOUCH, f"holds {names[name].citation}; time set for Claude's "
                                  "recall order", oid=rec.file_oid, memory_name=name, concept=names[name],
                                  mtime_ns=wanted[name]))
    out.kept[:] = [n for n in out.kept if n not in touched]


# -- MEMORY.md --------------------------------------------------------------------------------


def _index_item(view: View, folder: Path, names: dict[str, TierCard], concepts: list[TierCard],
                out: TargetPlan) -> Item | None:
    path = folder / INDEX_NAME
    kind, old = _current(path)
    if kind == "other":
        return Item(path, SKIP, "is a symlink or a folder; MEMORY.md was not regenerated")
    projected = {i.memory_name for i in out.items if i.action in (WRITE, UNCHANGED, TOUCH) and i.memory_name}
    projected.update(out.kept)
    managed = projected | {i.memory_name for i in out.items if i.action == REMOVE and i.memory_name}
    kept, others = memory_index.kept_lines(old, managed, lambda name: (folder / name).is_file())
    record = view.state.targets.get(str(path))
    if old is not None and others and (record is None or record.oid != blob_oid(old)):
        save = _save_lines(view, path, others)
        out.saves.append(save)
        were = "was" if len(others) == 1 else "were"
        links = (f"; {plural(len(kept), 'line')} linking to memory files okfgit does not manage stay in it"
                 if kept else "")
        out.warnings.append(f"{path}: was edited since okfgit wrote it; {plural(len(others), 'line')} okfgit did "
                            f"not write {were} saved to {save.path} before it was regenerated{links}")
    name_of = {c.key: n for n, c in names.items()}
    # Deprecated concepts stay in the folder (reachable through superseded_by) but spend no
    # line of Claude's 200: MEMORY.md is for what is current.
    order = [name_of[c.key] for c in concepts if name_of[c.key] in projected
             and c.card.status != lifecycle.DEPRECATED]
    total: dict[str, int] = {}
    for name in order:
        total[names[name].tier] = total.get(names[name].tier, 0) + 1
    now = lifecycle.instant_of(view.ctx.now())
    entries = (memory_index.Entry(n, names[n].title, memory_index.hook(names[n].card, now), names[n].tier)
               for n in order)
    pointers = [memory_index.Pointer(t.label, t.root_index) for t in view.tiers]
    rendered = memory_index.render(kept, entries, pointers, total)
    if rendered.left_out:
        missing = sum(rendered.left_out.values())
        cut = (f"{path}: listed {rendered.listed} of {rendered.listed + missing} concepts (Claude Code reads only "
               f"the first {memory_index.MAX_LINES} lines and {memory_index.MAX_BYTES:,} bytes); {missing} left "
               "out, reachable through the tier indexes it points to")
        out.warnings.append(cut)
        if out.notes is not None:
            out.notes.append(cut)
    data = rendered.data
    if old == data:
        return Item(path, UNCHANGED, "index of the memory folder", oid=blob_oid(data))
    if not data:  # nothing left to list: an index okfgit wrote goes, nothing is created
        if old is not None and record is not None and record.oid == blob_oid(old):
            return Item(path, REMOVE, "index of the memory folder, which lists nothing now", old=old)
        return None
    return Item(path, WRITE, "index of the memory folder", data=data, old=old, oid=blob_oid(data))


def _save_lines(view: View, path: Path, lines: list[str]) -> Save:
    """Where the lines someone wrote into MEMORY.md are kept (``<git common dir>/okf/drafts/``),
    with where and when they came from. Named by the lines, so saving the same ones again (a
    run that failed before MEMORY.md was written) writes the same file."""
    body = "\n".join(lines) + "\n"
    when = dt.datetime.fromtimestamp(view.ctx.now(), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    head = (f"<!-- okfgit kept these lines from {path} on {when}, before regenerating it: MEMORY.md is okfgit's "
            "index of the memory folder. A lasting fact goes into a memory file of its own (capture takes it) "
            "or `okfgit new`. -->\n")
    name = f"MEMORY-lines-{sha1_hex(body.encode('utf-8'))[:12]}.md"
    target = paths.drafts(view.state.common_dir, view.ctx.home) / name
    return Save(target, (head + body).encode("utf-8"), path, f"lines someone wrote in {path}")


def _old_index(view: View, path: Path) -> Iterator[Item]:
    """MEMORY.md in the folder okfgit projected into before: removed when okfgit wrote it."""
    record = view.state.targets.get(str(path))
    kind, data = _current(path)
    if record is None or kind != "file" or data is None:
        return
    if blob_oid(data) == record.oid:
        yield Item(path, REMOVE, "index of the previous memory folder", old=data)
