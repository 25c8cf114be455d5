"""Gemini CLI's private memory folder of the project: its notes back, and okfgit's index.

Gemini CLI 0.61.0 loads ``<runtime>/tmp/<short id>/memory/MEMORY.md`` into every session
and reads the sibling ``*.md`` notes it points to on demand (``gemini_home``); its agent
edits both directly, writing brief facts straight into ``MEMORY.md``. So:

- **notes**: every concept captured from a note of this folder (``okf_source: gemini-cli``,
  ``okf_origin: <short id>/<name>``) is projected back to ``<name>``, its blob verbatim, so
  one fact stays one file. A note is overwritten or removed only when it holds what okfgit
  last wrote or adopted there (its blob OID in the ownership record) or already holds the
  bytes wanted; any other file is the agent's, left for capture;
- **MEMORY.md**: a managed block (``<!-- okf:begin id=knowledge -->``) indexing the knowledge
  the way Claude's ``MEMORY.md`` does: one line per concept, most specific tier first,
  linking to the note in this folder or to the concept's file in its tier, within
  ``MAX_LINES`` lines and ``MAX_BYTES`` bytes, then pointers to the tier indexes. Gemini CLI
  loads the file whole; the block takes at most half of Claude Code's 200-line, 25,000-byte
  index budget, so the agent's own entries around it keep their room. Every byte outside
  the block is the agent's and stays.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from okfgit.format import agent_memory, lifecycle
from okfgit.knowledge.cards import TierCard
from okfgit.git.objects import blob_oid
from okfgit.local.state import TierInput
from okfgit.targets import claude_memory, gemini_home, memory_index
from okfgit.targets.base import REMOVE, SKIP, UNCHANGED, WRITE, Item, TargetPlan, View, folder_problem, plan_block

SCOPE = "knowledge"
INDEX = gemini_home.MEMORY_INDEX
MAX_LINES = memory_index.MAX_LINES // 2
MAX_BYTES = memory_index.MAX_BYTES // 2


class GeminiMemory:
    name = "gemini-memory"
    group = "gemini"

    def plan(self, view: View) -> TargetPlan:
        if view.worktree is None or not view.tiers:
            return TargetPlan()
        found = gemini_home.memory_folder(view.worktree, view.ctx.environ, view.ctx.home)
        watched = [str(found.registry)] if found.registry is not None else []
        if found.path is None or found.short_id is None:
            return TargetPlan(watched=watched)
        folder = Path(os.path.abspath(found.path))  # made on demand, as Claude Code's: Gemini CLI runs here
        problem = folder_problem(folder)
        if problem is not None:
            return TargetPlan(items=[Item(folder, "fail", f"{problem} (nothing was changed there)")], watched=watched)
        kept = _as_left(view, folder)
        if kept is not None:
            return TargetPlan(items=kept, watched=[*watched, str(folder)], rendered=[str(folder / INDEX)])
        merged = view.merged()
        indexes = gemini_home.memory_indexes(view.worktree, view.ctx.environ, view.ctx.home)
        notes = _notes(merged.concepts, found.short_id, indexes)
        out = TargetPlan(watched=[*watched, str(folder)])
        for name, concept in sorted(notes.items()):
            out.items.append(_note(view, folder / name, concept))
        for path in _recorded_in(view, folder):
            if os.path.relpath(path, folder) not in notes and os.path.basename(path) != INDEX:
                out.items.extend(_removal(view, Path(path)))
        legacy = _legacy_memory(folder, indexes)
        if legacy is not None:
            out.warnings.append(f"{folder / INDEX}: not created: Gemini CLI reads {legacy} as this project's memory "
                                f"while MEMORY.md is missing, and a new MEMORY.md would hide it; create "
                                f"{folder / INDEX} to give Gemini CLI okfgit's index")
            out.watched.append(str(folder / INDEX))
            return out
        index = plan_block(folder / INDEX, SCOPE, _index(view, folder, notes, merged.concepts),
                           "index of the knowledge for Gemini CLI", owned=view.state, wrote=view.wrote)
        out.items.extend(index.items)
        out.warnings.extend(index.warnings)
        out.rendered.append(str(folder / INDEX))
        return out


def _legacy_memory(folder: Path, indexes: tuple[str, ...]) -> Path | None:
    """The file Gemini CLI reads as the project's memory while ``MEMORY.md`` is missing (the
    older layout, ``gemini_home.memory_indexes``), when there is one; None when MEMORY.md is
    there or nothing else is."""
    if os.path.lexists(folder / INDEX):
        return None
    return next((folder / name for name in indexes[1:] if os.path.lexists(folder / name)), None)


def _as_left(view: View, folder: Path) -> list[Item] | None:
    """Every file of the folder unchanged, without reading every concept: the index was
    rendered from these very tier inputs, or from the ones the last projection recorded when
    only concepts' bodies changed since, none of them a Gemini CLI note and none in what an
    index line shows (``claude_memory.SAME``); no concept went stale since; and the index and
    every note are as okfgit left them. None when the full plan must decide."""
    state = view.state
    index = folder / INDEX
    now = {t.label: TierInput(str(t.tier.repo_path), t.commit, t.tree) for t in view.tiers}
    rendered = state.rendered.get(str(index))
    if rendered is None or (state.stale_at is not None and view.ctx.now() >= state.stale_at):
        return None
    if rendered != now:
        changed = view.changed() if rendered == state.inputs else None
        if changed is None or any(
                agent_memory.GEMINI in (old.card.source, new.card.source)
                or any(getattr(old.card, k) != getattr(new.card, k) for k in claude_memory.SAME)
                for old, new in changed):
            return None
    items: list[Item] = []
    for path in [str(index), *(p for p in _recorded_in(view, folder) if p != str(index))]:
        record = state.targets.get(path)
        try:
            unchanged = record is not None and record.matches(os.lstat(path))
        except OSError:
            unchanged = False
        if not unchanged:
            return None
        assert record is not None
        why = "index of the knowledge for Gemini CLI" if path == str(index) else "a note okfgit wrote, as it left it"
        items.append(Item(Path(path), UNCHANGED, why, oid=record.oid))
    return items


def _notes(concepts: list[TierCard], short_id: str, indexes: tuple[str, ...]) -> dict[str, TierCard]:
    """The notes of this folder the knowledge holds, by name (the first in order keeps a name).
    A note sits directly in the folder, as Gemini CLI keeps them: an origin with a subfolder
    is no note here (a link on the way could lead anywhere on the disk)."""
    prefix = f"{short_id}/"
    out: dict[str, TierCard] = {}
    for concept in concepts:
        origin = concept.card.origin
        if concept.card.source != agent_memory.GEMINI or not origin or not origin.startswith(prefix):
            continue
        name = origin[len(prefix):]
        if not name.endswith(".md") or name in indexes or "/" in name or "\\" in name or name.startswith(".") \
                or any(ord(c) < 32 for c in name):
            continue
        out.setdefault(name, concept)
    return out


def _recorded_in(view: View, folder: Path) -> list[str]:
    """Files okfgit wrote (or adopted) in ``folder``: the ownership record's block files there."""
    inside = str(folder) + os.sep
    return sorted(p for p in view.state.targets if p.startswith(inside))


def _note(view: View, path: Path, concept: TierCard) -> Item:
    data = view.read(concept.card.oid)
    why = f"holds {concept.citation}"
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return Item(path, WRITE, f"{why} (new)", data=data, oid=concept.card.oid)
    if not stat.S_ISREG(st.st_mode):
        return Item(path, SKIP, "is a symlink or a folder, not a file okfgit wrote; left alone")
    current = path.read_bytes()
    oid = blob_oid(current)
    if oid == concept.card.oid:
        return Item(path, UNCHANGED, why, oid=oid)
    record = view.state.record(path)
    if record is not None and record.oid == oid:
        return Item(path, WRITE, f"{why} (updated)", data=data, old=current, oid=concept.card.oid)
    return Item(path, SKIP, f"was not written by okfgit (or was edited since); left for capture, so "
                f"{concept.citation} is not projected there")


def _removal(view: View, path: Path) -> list[Item]:
    record = view.state.record(path)
    try:
        current = path.read_bytes() if not path.is_symlink() else None
    except OSError:
        return []
    if current is None or record is None or blob_oid(current) != record.oid:
        return []  # gone, or the agent's since: capture's
    return [Item(path, REMOVE, "held a concept no longer in the knowledge base", old=current)]


def _index(view: View, folder: Path, notes: dict[str, TierCard], concepts: list[TierCard]) -> str:
    """The block: a line per current concept, the note in this folder or the tier's file."""
    here = {c.key: name for name, c in notes.items()}
    roots = {t.label: t.tier.root for t in view.tiers}
    live = [c for c in concepts if c.card.status != lifecycle.DEPRECATED]
    total: dict[str, int] = {}
    for c in live:
        total[c.tier] = total.get(c.tier, 0) + 1
    now = lifecycle.instant_of(view.ctx.now())
    entries = (memory_index.Entry(here.get(c.key) or str(roots[c.tier] / c.path), c.title,
                                  memory_index.hook(c.card, now), c.tier) for c in live)
    pointers = [memory_index.Pointer(t.label, t.root_index) for t in view.tiers]
    rendered = memory_index.render([], entries, pointers, total, max_lines=MAX_LINES, max_bytes=MAX_BYTES)
    return rendered.data.decode("utf-8")
