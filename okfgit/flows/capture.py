"""Capture: facts agents wrote into their memory folders become commits.

The folders are Claude Code's memory folder and Gemini CLI's private memory folder of the
project (``Source``). Per memory file (recursively; ``MEMORY.md`` excluded), its frontmatter
read as Claude Code reads it (``format/agent_memory.py``: keys under ``metadata`` unfolded,
Claude's stamps out):
- its blob OID is one okfgit wrote (projection state) -> skipped: the loop guard;
- a native Claude memory (``name``/``description``/``metadata.type`` or older top-level
  ``type``) -> migrated into OKF by *adding* keys (type, title, scope, okf_id, okf_source,
  okf_origin, generated) to the agent's bytes: every key and body byte it wrote is kept;
- an OKF file whose ``okf_id`` the KB has -> an agent edit: the concept is updated when its
  blob at HEAD is still what okfgit last projected; otherwise the master is kept and the
  agent's variant is committed beside it as ``<stem>.needs-merge.md``, with a warning.

One commit per tier touched (operation ``capture``). The agent's file is not touched here:
the projection that follows rewrites it, after the commit landed.
"""

from __future__ import annotations

import datetime as dt
import gc
import os
import posixpath
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from okfgit.format import actors, agent_memory, lifecycle, names, needs_merge
from okfgit.format.trailers import path_field
from okfgit.format import concept as okf
from okfgit.local import journal, state
from okfgit.local.store import Stores
from okfgit.knowledge import capture_policy as switch
from okfgit.knowledge.cards import TierCard, TierCards
from okfgit.targets import gemini_home
from okfgit.targets.claude_home import memory_dir
from okfgit.targets.claude_memory import origin_problem
from okfgit.context import Context
from okfgit.errors import OkfError, UsageError
from okfgit.git.objects import blob_oid, shown
from okfgit.plan import Plan, TierCommit, apply, retry_moved, writing
from okfgit.knowledge.tiers import Tier, Workspace, check_scope

if TYPE_CHECKING:  # index_md is read where a capture writes an index (sync's usual run writes none)
    from okfgit.format import index_md as index
    from okfgit.knowledge import similar
    from okfgit.knowledge.snapshot import Concept, Snapshot  # and these where a capture takes a file

MAX_BYTES = 1024 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
CAPTURE_FOLDER = "memory"
AGENT_ACTOR = actors.CLAUDE_CODE  # whoever runs sync, the words captured are the agent's
GEMINI_ACTOR = actors.GEMINI_CLI
SIBLINGS = ("conflict", "proposal", "duplicate")  # actions committed as a needs-merge sibling
CAPTURING = "capturing memory files"  # what a person watching a long capture is told


@dataclass(frozen=True, slots=True)
class Source:
    """One agent's memory folder that capture reads, and how its files become concepts."""

    name: str  # the concepts' ``okf_source``: claude-memory | gemini-cli
    agent: str  # who wrote the files, for messages
    folder: Path
    actor: str  # ``generated.by`` of a new fact
    prefix: str = ""  # what ``okf_origin`` holds before the file's path in the folder
    personal: bool = False  # its files are the person's own (routed as ``user`` memories, §5)
    indexes: tuple[str, ...] = (agent_memory.INDEX_NAME,)  # the agent's index files, at any depth: no memory

    def label(self, origin: str) -> str:
        """How reports name a file of this folder (Claude Code's files by their bare path)."""
        return origin if self.name == agent_memory.CLAUDE else f"{self.name}:{origin}"

    def recorded(self, st: state.State, origin: str) -> state.MemoryFile | state.FileRecord | None:
        """What okfgit recorded writing (or adopting) at ``origin``."""
        if self.name == agent_memory.CLAUDE:
            return st.memory_files.get(origin)
        return st.record(self.folder / origin)

    def projected(self, st: state.State, origin: str) -> _Projected | None:
        """The concept (``okf_id`` when known) and its blob OID okfgit last wrote at ``origin``."""
        rec = self.recorded(st, origin)
        if isinstance(rec, state.MemoryFile):
            return _Projected(rec.okf_id, rec.oid)
        return _Projected(None, rec.oid) if rec is not None else None


class _Projected(NamedTuple):
    okf_id: str | None  # None: any concept (a file okfgit wrote whole, recorded by its OID only)
    oid: str


def claude_source(folder: Path) -> Source:
    return Source(agent_memory.CLAUDE, "Claude", folder, AGENT_ACTOR)


def gemini_source(folder: Path, short_id: str, indexes: tuple[str, ...]) -> Source:
    # Gemini CLI's prompt calls these notes "personal-to-the-user ... must NOT be committed to
    # the repo": they go where a person's facts go (Routes.route, rule 3).
    return Source(agent_memory.GEMINI, "Gemini CLI", folder, GEMINI_ACTOR, f"{short_id}/", personal=True,
                  indexes=indexes)


@dataclass(frozen=True, slots=True)
class Captured:
    """One memory file that becomes (part of) a commit."""

    action: str  # "new" | "update" | "conflict" | "deprecate" | "proposal" (a protected concept's) | "duplicate"
    origin: str  # path relative to the memory folder
    file_oid: str
    okf_id: str
    tier: Tier
    kb_path: str
    data: bytes
    why: str = ""  # for a conflict: which side changed; for a duplicate: which concept it repeats
    parsed: okf.Parsed | None = field(default=None, repr=False, compare=False)  # ``data`` split
    repeats: tuple[str, float] | None = None  # a duplicate's: "<tier>:<path>" of the concept, and the similarity
    declines: str = ""  # a deleted file's: the concept's blob okfgit no longer writes back once committed
    source: Source | None = field(default=None, repr=False, compare=False)  # None: Claude Code's folder

    @property
    def agent(self) -> str:
        return self.source.name if self.source is not None else agent_memory.CLAUDE

    @property
    def label(self) -> str:
        return self.source.label(self.origin) if self.source is not None else self.origin


@dataclass(slots=True)
class Report:
    enabled: bool
    reason: str
    switch: switch.Decision | None = None
    memory_dir: Path | None = None
    memory_source: str = ""  # what decided the memory folder (claude_home.MemoryDirChoice.source)
    gemini_dir: Path | None = None  # Gemini CLI's private memory folder of the project, when it has one
    captured: list[Captured] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (origin, why): bad input
    held: list[tuple[str, str]] = field(default_factory=list)  # (origin, why): a new fact with no tier yet
    unchanged_seen: list[str] = field(default_factory=list)  # okfgit's own files, found one by one
    # every recorded file, when the folder is as the last sync left it (listed only if asked)
    unchanged_all: state.MemoryFiles | None = field(default=None, repr=False)
    deleted: list[str] = field(default_factory=list)  # projected files an agent removed
    copies: dict[str, str] = field(default_factory=dict)  # origin -> oid: saying what the KB says
    declined: dict[str, str] = field(default_factory=dict)  # okf_id -> blob: deleted by an agent, kept out
    warnings: list[str] = field(default_factory=list)
    plan: Plan = field(default_factory=Plan)
    commits: list[tuple[str, str]] = field(default_factory=list)  # (tier label, commit)

    def to_json(self) -> dict[str, object]:
        """The report as ``capture --json`` (and ``sync --json``) print it."""
        return {
            "enabled": self.enabled,
            "reason": self.reason,
            "memory_dir": str(self.memory_dir) if self.memory_dir else None,
            "memory_source": self.memory_source,
            "gemini_dir": str(self.gemini_dir) if self.gemini_dir else None,
            "captured": [
                {"action": c.action, "origin": c.origin, "source": c.agent, "oid": c.file_oid, "okf_id": c.okf_id,
                 "tier": c.tier.label, "path": c.kb_path}
                for c in self.captured
            ],
            "skipped": [{"origin": o, "reason": r} for o, r in self.skipped],
            "held": [{"origin": o, "reason": r} for o, r in self.held],
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "commits": [{"tier": t, "commit": c} for t, c in self.commits],
            "warnings": self.warnings,
        }

    @property
    def unchanged(self) -> list[str]:
        """okfgit's own files, which capture leaves as they are."""
        if self.unchanged_all is None:
            return self.unchanged_seen
        return sorted(self.unchanged_all) + [o for o in self.unchanged_seen if o not in self.unchanged_all]

    @property
    def conflicts(self) -> list[Captured]:
        """Every file committed as a needs-merge sibling: conflicts and proposals."""
        return [c for c in self.captured if c.action in SIBLINGS]

    @property
    def proposals(self) -> list[Captured]:
        """An agent's version of a protected concept (``lifecycle.protected_by``)."""
        return [c for c in self.captured if c.action == "proposal"]

    @property
    def duplicates(self) -> list[Captured]:
        """New memories that nearly duplicate a concept, committed as proposals beside it."""
        return [c for c in self.captured if c.action == "duplicate"]


NO_PROJECT_TIER = (
    "capture takes nothing here: this repository has no project tier (no .okf/ at HEAD), so its "
    "memories belong to no knowledge base; run `okfgit init --scope project` to start capturing"
)
USER_TYPE = "user"  # Claude Code's memory type for facts about the person


_NARROW = {"job": 0, "project": 1, "global": 2}  # how far a tier's knowledge travels


class Held(Exception):
    """A new fact with nowhere to go yet: left in the memory folder, untouched (the reason)."""


@dataclass(frozen=True, slots=True)
class Routes:
    """Where new facts may land, decided once per capture (spec/okf-capture-sync.md §5).

    Only new facts are routed: an edit of a concept always goes to the concept's tier.
    """

    project: Tier
    job: Tier | None  # the active run's tier, when a run is active
    global_: Tier
    user_memories: str  # "global" | "project" (.okf/okfgit.toml)
    to: Tier | None  # --to: the person's explicit choice
    pushed_to: str | None = None  # the global tier's remote, unless the person shares user memories there

    @classmethod
    def of(cls, ws: Workspace, to: str | None, ctx: Context | None = None) -> Routes:
        """``ctx``: the command's, when ``to`` is the person's choice (only a person widens a fact)."""
        if to == "global" and ctx is not None:
            from okfgit.flows.concepts import actor  # only for --to global: a hook's sync never needs it

            actors.person_only(actor(ctx, ws.tier("project")), "capturing --to global (read by every project here)")
        global_ = ws.tier("global")
        pushed_to = None
        if global_.exists():
            from okfgit.flows import exchange

            reader = global_.open()
            remote = exchange.target(reader)
            if remote is not None and not exchange.shares_user_memories(reader):
                pushed_to = remote.shown
        return cls(
            project=ws.tier("project"),
            job=ws.tier("job") if ws.run else None,
            global_=global_,
            user_memories=switch.user_memories(ws.project_repo),
            to=ws.tier(check_scope(to)) if to else None,
            pushed_to=pushed_to,
        )

    def tiers(self) -> list[Tier]:
        """Every tier a new fact may land in."""
        return [t for t in (self.job, self.project, self.global_) if t is not None]

    def route(self, meta: dict[str, Any], private: bool = False) -> Tier:
        """The tier a new fact goes to, decided by okfgit; ``Held`` when it cannot go anywhere yet.

        1. ``--to`` (a person's explicit choice); otherwise the tier for what the memory is
        about: a ``user`` memory (about the person; every file of a ``private`` folder, Gemini
        CLI's notes) the global tier, unless the project takes them; anything else (``project``, ``feedback``, ``reference``, untyped) the active run's
        job tier, else the project tier. 2. The memory's own ``scope:`` may narrow that (job is
        narrower than project, project than global), never widen it: text an agent wrote does
        not send a fact out of a project or a run (widening is a person's ``promote``). A user
        memory is held while the global tier is missing, or is pushed to a remote the person
        has not opted in to share such facts with. The caller has made sure the project tier exists.
        """
        if self.to is not None:
            return self.to
        personal = (private or memory_type(meta) == USER_TYPE) and self.user_memories == "global"
        widest = self.global_ if personal else self.job if self.job is not None else self.project
        own = meta.get("scope")
        for tier in self.tiers():
            if own == tier.name and tier.exists() and _NARROW[tier.name] <= _NARROW[widest.name]:
                return tier
        what = "a private note (Gemini CLI keeps it out of the repository)" if private else \
            "a user memory (about you, not the project)"
        if personal and not self.global_.exists():
            raise Held(
                f"{what} goes to the global tier, which does not exist "
                "yet; run `okfgit init --scope global` to create it (or set user_memories = \"project\" "
                f"in {switch.SETTINGS_PATH}); left in the memory folder"
            )
        if personal and self.pushed_to is not None:
            raise Held(
                f"{what} goes to the global tier, which is pushed to "
                f"{self.pushed_to}; facts about you stay on this machine unless you share them: "
                f"`git -C {self.global_.repo_path} config okf.pushUserMemories true`; left in the memory folder"
            )
        return widest


def memory_type(meta: dict[str, Any]) -> str:
    """Claude Code's memory type, lower-case ("" when none): ``metadata.type`` wins over a
    top-level ``type``, as in Claude Code (``agent_memory.unfold``)."""
    value = agent_memory.unfold(meta).meta.get("type")
    return value.strip().lower() if isinstance(value, str) else ""


def plan_capture(ctx: Context, ws: Workspace, owned: state.State, stores: Stores, *, to: str | None = None,
                 force: bool = False, unchanged: str | None = None, branch: str | None = None) -> Report:
    """Read the memory folders and plan the capture commits; writes nothing. ``owned`` is the
    ownership record and ``stores`` the run's stores (the facts read are staged there); with
    ``unchanged`` (see ``capture``) Claude Code's folder has nothing to take: it is not read.
    ``branch``: the project tier's branch the memories were written on when it is not the one
    checked out now (a post-checkout's previous branch): read there, and committed there."""
    if ws.project_repo is None:
        raise UsageError("capture needs a project repository: run it inside one or pass --repo")
    decision = switch.capture_decision(ctx, ws)
    report = Report(enabled=decision.enabled, reason=decision.reason, switch=decision)
    project_tier = ws.tier("project")
    project_repo = project_tier.open()
    choice = memory_dir(project_repo.main_workdir, ctx.environ, ctx.home, project_root=project_repo.workdir)
    report.memory_dir = choice.path
    report.memory_source = choice.source
    at = {project_tier.label: project_repo.resolve(f"refs/heads/{branch}")} if branch is not None else {}
    if not (project_tier.has_kb() if not at else project_repo.tree_oid(at[project_tier.label], project_tier.prefix)):
        # Nowhere to put this repository's facts: the global tier would carry them into
        # every other project (and a person's facts need the person to set a tier up).
        report.enabled = False
        report.reason = NO_PROJECT_TIER
        return report
    if not decision.enabled and not force:
        return report
    report.warnings.extend(choice.warnings)
    if choice.shared_by is not None:
        # One folder for every project: a memory written in another repository's session
        # would be committed here. Which project a memory belongs to cannot be told, so no.
        report.enabled = False
        report.reason = (
            f"capture is off: {choice.shared_by} sets autoMemoryDirectory, one memory folder shared by "
            "every project, so okfgit cannot tell which project a memory belongs to"
        )
        if not force:
            return report
    st = owned
    claude = claude_source(choice.path)
    gemini = _gemini(ctx, project_repo.workdir)
    report.gemini_dir = gemini.folder if gemini is not None else None
    candidates: list[tuple[Source, str, bytes, str]] = []
    present: frozenset[str] = frozenset()
    if unchanged is not None and os.path.abspath(unchanged) == os.path.abspath(choice.path):
        # Every file there is one the last sync left as okfgit's: nothing to read, nothing new
        # (and, for ``force``, nothing waiting).
        report.unchanged_all = st.memory_files
    else:
        present = _read_folder(claude, st, report, candidates)
    if gemini is not None:
        _read_folder(gemini, st, report, candidates)
    kb = _classify_all(ctx, ws, to, st, stores, candidates, report, present, _At(at, branch)) if candidates else None
    if report.unchanged_all is None:
        skipped = {o for o, _ in report.skipped}
        renamed = {n for c in report.captured if c.action == "update" and c.source is claude
                   for n, _ in st.projected(c.okf_id) if n != c.origin} if report.captured else set()
        report.deleted = [o for o in sorted(st.memory_files)
                          if o not in present and o not in skipped and o not in renamed]
        if report.deleted and present:  # every file gone is a folder emptied, not an agent's judgement
            kb = kb or _known(ws, to, stores, _At(at, branch))
            _classify_deletions(ctx, st, report, kb)
    if kb is not None and report.captured:
        report.plan = _build_plan(report.captured, kb)
    for origin, why in report.skipped:
        report.warnings.append(f"skipped {_where(origin, claude, gemini)}: {why}")
    for origin, why in report.held:
        report.warnings.append(f"not captured {_where(origin, claude, gemini)}: {why}")
    return report


def _gemini(ctx: Context, worktree: Path) -> Source | None:
    """Gemini CLI's private memory folder of the project, when it has one (it is made on
    Gemini CLI's first run in the folder)."""
    found = gemini_home.memory_folder(worktree, ctx.environ, ctx.home)
    if found.path is None or found.short_id is None:
        return None
    return gemini_source(found.path, found.short_id, gemini_home.memory_indexes(worktree, ctx.environ, ctx.home))


def _where(label: str, claude: Source, gemini: Source | None) -> Path:
    """The file a report's label names (``gemini-cli:<origin>`` for Gemini CLI's folder)."""
    prefix = f"{agent_memory.GEMINI}:"
    if gemini is not None and label.startswith(prefix):
        return gemini.folder / label[len(prefix):]
    return claude.folder / label


def _read_folder(source: Source, st: state.State, report: Report,
                 candidates: list[tuple[Source, str, bytes, str]]) -> frozenset[str]:
    """Every file of ``source``'s folder okfgit did not write, read and added to
    ``candidates``; the unreadable ones go to ``report.skipped``. The origins present."""
    files = _memory_files(source, report)
    for origin, file, lst in files:
        label = source.label(origin)
        if _CONTROL.search(origin):
            report.skipped.append((label, "the file name has control characters; rename it to capture it"))
            continue
        unmirrorable = origin_problem(origin)
        if unmirrorable is not None:  # projection could not write the fact back under this name
            report.skipped.append((shown(label), f"okfgit cannot keep a memory under this name: it "
                                                       f"{unmirrorable}; rename the file to capture it"))
            continue
        recorded = source.recorded(st, origin)
        if _okfgit_wrote(recorded, lst):
            report.unchanged_seen.append(label)  # the loop guard, decided by the stat okfgit recorded
            continue
        try:
            data = _read(file, lst, source.folder)
        except OkfError as exc:
            report.skipped.append((label, _why(exc, origin)))
            continue
        oid = blob_oid(data)
        if st.wrote(origin if source.name == agent_memory.CLAUDE else source.folder / origin, oid):
            report.unchanged_seen.append(label)
            continue
        candidates.append((source, origin, data, oid))
    return frozenset(origin for origin, _, _ in files)


class _At(NamedTuple):
    """Where a capture reads and commits a tier when it is not at HEAD: tier label -> commit,
    and the branch (of the project tier) those commits go on."""

    commits: Mapping[str, str]
    branch: str | None


def _known(ws: Workspace, to: str | None, stores: Stores, at: _At, routes: Routes | None = None) -> _Known:
    """The tiers a capture reads: the active ones and every one a new fact may land in."""
    routes = routes or Routes.of(ws, to)
    tiers = ws.active()
    tiers += [t for t in routes.tiers() if t.label not in {k.label for k in tiers}]
    return _Known(tiers, stores, at)


def _classify_all(ctx: Context, ws: Workspace, to: str | None, st: state.State, stores: Stores,
                  candidates: list[tuple[Source, str, bytes, str]], report: Report, present: frozenset[str],
                  at: _At) -> _Known:
    """Decide each file okfgit did not write (new, update, conflict, a copy); the tiers read."""
    routes = Routes.of(ws, to, ctx)
    kb = _known(ws, to, stores, at, routes)
    for done, (source, origin, data, oid) in enumerate(candidates):
        if done and not done % 100:
            ctx.progress(CAPTURING, done, len(candidates))
        label = source.label(origin)
        try:
            item = _classify(ctx, source, origin, data, oid, routes, kb, st, present)
        except Held as held:
            report.held.append((label, str(held)))
            continue
        except OkfError as exc:
            report.skipped.append((label, _why(exc, origin)))
            continue
        if item is None:
            report.unchanged_seen.append(label)
            report.copies[label] = oid
            continue
        report.captured.append(item)
        if item.action == "proposal":
            report.warnings.append(proposal_warning(label, item))
        elif item.action == "conflict":
            report.warnings.append(
                f"{label}: {item.why}; kept the KB's version and committed the agent's as "
                f"{item.tier.label}:{item.kb_path} (needs a person to merge)"
            )
        elif item.action == "duplicate":
            report.warnings.append(duplicate_warning(label, item))
    ctx.progress(CAPTURING, len(candidates), len(candidates))
    return kb


def _classify_deletions(ctx: Context, st: state.State, report: Report, kb: _Known) -> None:
    """A memory file okfgit projected that an agent deleted: the agent's judgement that the fact
    is stale (Claude's memory protocol deletes what it finds wrong). Its concept, when the KB still
    holds exactly what was projected there, is proposed deprecated: ``status: deprecated`` in
    place (``deprecate``), or, for a concept no agent changes in place (``lifecycle.protected_by``),
    as a needs-merge sibling a person accepts or drops (``proposal``). The concept is not written
    back meanwhile (``State.declined``, set once the commit landed)."""
    for origin in report.deleted:
        record = st.memory_files.get(origin)
        at = kb.by_id(record.okf_id) if record is not None and record.okf_id else None
        if record is None or at is None:
            continue  # the concept went: so does the record
        tier, kb_path, head_oid = at
        concept = kb.concept(tier, kb_path)
        okf_id = record.okf_id or ""
        if lifecycle.lifecycle(concept.meta).deprecated:
            report.declined[okf_id] = head_oid  # history already (or deprecated by a capture killed since)
            continue
        if head_oid != record.oid:
            continue  # the concept changed since it was projected: its new version is written
        blob = kb.snapshot(tier).blob(kb_path)
        data, split = okf.set_keys_split(blob, f"{tier.label}:{kb_path}", {"status": lifecycle.DEPRECATED})
        guarded = lifecycle.protected_by(concept.meta)
        why = f"the agent deleted its memory file, saying {tier.label}:{kb_path} is stale"
        if not guarded:
            report.captured.append(Captured("deprecate", origin, record.file_oid, okf_id, tier, kb_path, data, why,
                                            split, declines=blob_oid(data)))
            report.warnings.append(f"{origin}: {why}; proposed deprecated in the commit (`status: deprecated`), "
                                   "for review like any change; it is not written back to the memory folder")
            continue
        first = names.needs_merge_path(kb_path)
        if _sibling_has(kb.snapshot(tier), first, data, origin):
            report.declined[okf_id] = head_oid  # proposed already (a sync killed before it recorded that)
            continue
        item = Captured("proposal", origin, record.file_oid, okf_id, tier, kb.free_path(tier, first), data,
                        f"{why}; {tier.label}:{kb_path} is {guarded}, so no agent deprecates it", split,
                        declines=head_oid)
        report.captured.append(item)
        report.warnings.append(proposal_warning(origin, item))


def proposal_warning(origin: str, item: Captured) -> str:
    """What a person is told when an agent rewrote a protected concept: the concept, who
    verified it, where the agent's words are, and the two commands that decide."""
    where = f"{item.tier.label}:{item.kb_path}"
    return (f"{origin}: {item.why}; the KB keeps it unchanged and the agent's version is committed as {where} "
            f"for a person to decide: accept it with `okfgit proposal accept {where}`, or drop it with "
            f"`okfgit proposal drop {where}`")


def duplicate_warning(origin: str, item: Captured) -> str:
    """What a person is told when a new memory repeats a concept: which, how alike, where the
    agent's words went and the commands that decide."""
    where = f"{item.tier.label}:{item.kb_path}"
    master = item.repeats[0] if item.repeats else "the concept"
    settle = (f"merge what it adds into {master} (`okfgit proposal accept {where}` takes its words)"
              if master.startswith(f"{item.tier.label}:") or not item.repeats else
              needs_merge.settled_elsewhere(where, master))  # a concept of another tier
    return (f"{origin}: {item.why}; not captured as a new concept (one fact in one place): the agent's words are "
            f"committed as {where}, a proposal: `okfgit proposal drop {where}` when it adds nothing, or {settle}")


def _why(exc: OkfError, origin: str) -> str:
    """The error without the file name okf.py put in front (the caller names the file)."""
    text = str(exc)
    for name in (origin, posixpath.basename(origin)):
        if text.startswith(f"{name}: "):
            return text[len(name) + 2:]
    return text


def standalone(ctx: Context, ws: Workspace, *, to: str | None = None, dry_run: bool = False) -> Report:
    """``okfgit capture`` on its own: ``capture`` with the ownership record and the stores
    opened here, and saved once when it is done (a dry run writes only the facts it read)."""
    if ws.project_repo is None:
        raise UsageError("capture needs a project repository: run it inside one or pass --repo")
    stores = Stores()
    common = ws.tier("project").open().common_dir
    owned = state.load(common, stores.of(common))
    report = capture(ctx, ws, owned, stores, to=to, dry_run=dry_run)
    if not dry_run:
        state.save(owned)  # the record and the project tier's facts, in one transaction
    stores.save()  # the other tiers' facts
    return report


def capture(ctx: Context, ws: Workspace, owned: state.State, stores: Stores, *, to: str | None = None,
            dry_run: bool = False, unchanged: str | None = None, branch: str | None = None) -> Report:
    """Plan and (unless ``dry_run``) commit the capture; then record the captured files as okfgit's.

    ``owned`` is the ownership record as the caller holds it, and ``stores`` the run's stores
    (``sync`` opens them once and hands them on to projection): the captured files are
    recorded in it, the facts read are staged in them, and the caller saves both. Planned
    and committed under the project repository's write lock (sync already holds it), so a
    concurrent ``new`` waits rather than interleaving. ``unchanged``: a memory folder that is
    exactly as the last sync left it, whose capture left nothing waiting (sync's stamp says
    so): when it is this repository's memory folder, no file of it is read. ``branch``: see
    ``plan_capture``.
    """
    # A capture keeps a few objects per memory file (its bytes, their parse, the plan) until
    # it is done and frees none before: the cyclic collector would only walk them again and
    # again (about 8% of planning 1,000 files), as doctor.run found for its scan.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if dry_run or ws.project_repo is None:
            return plan_capture(ctx, ws, owned, stores, to=to)

        def captured() -> Report:
            with writing(ctx, ws.tier("project")):
                return _capture_locked(ctx, ws, to, owned, stores, unchanged, branch)

        return retry_moved(captured)
    finally:
        if collecting:
            gc.enable()


def _capture_locked(ctx: Context, ws: Workspace, to: str | None, owned: state.State, stores: Stores,
                    unchanged: str | None = None, branch: str | None = None) -> Report:
    report = plan_capture(ctx, ws, owned, stores, to=to, unchanged=unchanged, branch=branch)
    if not report.plan.empty:
        with writing(ctx, *{c.tier for c in report.plan.commits}):
            done = apply(ctx, report.plan)
        report.commits = [(c.tier.label, oid) for c, oid in done.commits]
        journal.crash_point(ctx.environ, "captured")
    # The agent's bytes are now in a commit (or the KB already says the same): the next
    # projection may replace the file with the concept.
    taken = dict(report.copies)
    taken.update({c.label: c.file_oid for c in report.captured if not c.declines})
    declined = {**report.declined, **{c.okf_id: c.declines for c in report.captured if c.declines}}
    if report.plan.empty or report.commits:  # what was deleted is declined once its commit is in
        owned.declined.update(declined)
    prefix = f"{agent_memory.GEMINI}:"
    notes = {label: oid for label, oid in taken.items() if label.startswith(prefix)}
    if report.gemini_dir is not None:  # Gemini CLI's notes are recorded as files okfgit wrote
        for label, oid in notes.items():
            owned.adopt_file(report.gemini_dir / label[len(prefix):], oid)
    taken = {label: oid for label, oid in taken.items() if label not in notes}
    if taken:
        owned.adopt(taken, report.memory_dir)
    return report


class _Known:
    """What the tiers hold at HEAD: the merged view of their cards (cached by tree OID, so
    recognising edits costs no parse of the whole KB), and snapshots for what is written."""

    def __init__(self, tiers: list[Tier], stores: Stores, at: _At = _At({}, None)) -> None:
        from okfgit.knowledge.merged import Merged

        self.tiers = {t.label: t for t in tiers}
        self.at = at
        self.cards = {t.label: TierCards(t, commit=at.commits.get(t.label), stores=stores) for t in tiers}
        self.view = Merged(list(self.cards.values()))
        self._snaps: dict[str, Snapshot] = {}
        self._taken: dict[str, set[str]] = {}
        self._similar: similar.Index | None = None  # the concepts a new memory may repeat (built when asked)

    def by_id(self, okf_id: str) -> tuple[Tier, str, str] | None:
        """(tier, KB path, blob OID) of the concept that answers for ``okf_id``."""
        return self._where(self.view.by_okf_id.get(okf_id))

    def by_origin(self, origin: str, source: str = agent_memory.CLAUDE) -> tuple[Tier, str, str] | None:
        return self._where(self.view.by_origin.get(agent_memory.origin_key(source, origin) or ""))

    def _where(self, card: TierCard | None) -> tuple[Tier, str, str] | None:
        return (self.tiers[card.tier], card.path, card.oid) if card is not None else None

    def repeats(self, parsed: okf.Parsed) -> tuple[TierCard, float] | None:
        """The concept a new memory (``parsed``: split as it would be committed) nearly
        duplicates, and how alike they are: the most alike visible one at or above
        ``similar.THRESHOLD``; None when there is none. The concepts' keys are read once."""
        from okfgit.knowledge import similar

        path = f"{CAPTURE_FOLDER}/new.md"
        keys = similar.keys_of(path, parsed.meta, parsed.body)
        if not keys:
            return None
        if self._similar is None:
            self._similar = similar.across(self.cards.values())
        for near in self._similar.near(keys, lambda: similar.probe(path, parsed.meta, parsed.body)):
            label, found = near.key
            card = self.cards[label].card_at(found)
            if card is not None and self.view.is_visible(card):  # a shadowed concept is not what agents read
                return card, near.score
        return None

    def snapshot(self, tier: Tier) -> Snapshot:
        if tier.label not in self._snaps:
            from okfgit.knowledge.snapshot import snapshot

            self._snaps[tier.label] = snapshot(tier, self.at.commits.get(tier.label))
        return self._snaps[tier.label]

    def branch(self, tier: Tier) -> str | None:
        """The branch a commit to ``tier`` goes on when it is not the one checked out."""
        return self.at.branch if tier.label in self.at.commits else None

    def concept(self, tier: Tier, path: str) -> Concept:
        return self.snapshot(tier).concept(path)

    def last_change(self, tier: Tier, path: str) -> float | None:
        """When the concept at ``path`` last changed in the tier (its commit's time), or None."""
        return tier.open().last_change(tier.repo_path_of(path))

    def index_items(self, tier: Tier) -> Callable[[str], index.Item | None]:
        """A concept's index entry from its card (``index.item_of``'s title, description and
        type), when the card is of the blob the tier has: the concepts already in a folder
        that a capture adds to are not read and parsed again to regenerate its index."""
        facts = self.cards[tier.label].catalog.facts if tier.label in self.cards else {}
        entries = self.snapshot(tier).entries

        from okfgit.format import index_md as index

        def item(path: str) -> index.Item | None:
            card = facts.get(path)
            entry = entries.get(path)
            if card is None or entry is None or card.oid != entry.oid:
                return None
            return index.Item(index.escape_title(card.title), card.description, card.type)
        return item

    def free_path(self, tier: Tier, path: str) -> str:
        """``path``, or ``<stem>-2.md``, ``-3`` ... when the tier (or this capture) has it; reserves it."""
        taken = self._taken.get(tier.label)
        if taken is None:  # the tier's paths copied once, not once per captured file
            taken = self._taken[tier.label] = set(self.snapshot(tier).entries)
        candidate = names.free_path(path, taken)
        taken.add(candidate)
        return candidate


def _memory_files(source: Source, report: Report) -> list[tuple[str, str, os.stat_result]]:
    """(origin, path, lstat) of every candidate memory file in ``source``'s folder, by origin.

    Plain strings and ``scandir``: with a projected KB of 10,000 concepts this walk is a
    large part of what a sync costs when one memory changed.
    """
    out: list[tuple[str, str, os.stat_result]] = []
    stack = [("", str(source.folder))]
    # Claude Code's reserved subtrees (team stores, logs...); Gemini CLI keeps its notes directly
    # in the folder ("sibling *.md notes in that same folder only"; skills/ holds skills)
    skip = agent_memory.reserved if source.name == agent_memory.CLAUDE else (lambda rel: True)
    while stack:
        rel, folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            report.skipped.append((source.label(rel.rstrip("/") or "."), f"cannot list the folder: {exc.strerror or exc}"))
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                if not skip(f"{rel}{name}/x.md"):  # not the agent's memories
                    stack.append((f"{rel}{name}/", entry.path))
            elif entry.is_symlink() and os.path.isdir(entry.path):
                if not skip(f"{rel}{name}/x.md"):
                    report.skipped.append((source.label(f"{rel}{name}"), "a symlinked folder; okfgit never follows links"))
            elif name.endswith(".md") and name not in source.indexes:  # an index at any depth, as Claude Code reads it
                try:
                    out.append((f"{rel}{name}", entry.path, entry.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue  # removed while we looked
    out.sort(key=lambda item: item[0])
    return out


def _okfgit_wrote(record: state.MemoryFile | state.FileRecord | None, lst: os.stat_result) -> bool:
    """The file still has the size and mtime it had right after okfgit wrote it (git's stat
    rule, as projection reads it); a file an agent rewrote has another mtime (or size), and
    then its bytes are read and its OID decides."""
    if record is None or not stat.S_ISREG(lst.st_mode):
        return False
    return (record.record if isinstance(record, state.MemoryFile) else record).matches(lst)


def _read(file: str, st: os.stat_result, root: Path) -> bytes:
    """The file's bytes; UsageError for anything that is not a readable regular text file."""
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(file)
        inside = Path(target).is_relative_to(root.resolve())
        where = "is a symlink" if inside else "leaves the memory folder"
        raise UsageError(f"{where} ({target}); okfgit never follows links")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError("not a regular file")
    if st.st_size > MAX_BYTES:
        raise UsageError(f"over 1 MiB ({st.st_size} bytes); not a memory")
    # O_NONBLOCK: a FIFO swapped in after the check must not hang a git hook
    fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    okf.check_text(data, os.path.basename(file))
    return data


def _classify(ctx: Context, source: Source, origin: str, data: bytes, oid: str, routes: Routes, kb: _Known,
              st: state.State, present: frozenset[str]) -> Captured | None:
    """What capturing one file means (None: nothing, the KB already says it); every item
    returned holds bytes doctor accepts (``_valid``)."""
    item = _decide(ctx, source, origin, data, oid, routes, kb, st, present)
    return _valid(item) if item is not None else None


def _decide(ctx: Context, source: Source, origin: str, data: bytes, oid: str, routes: Routes, kb: _Known,
            st: state.State, present: frozenset[str]) -> Captured | None:
    parsed = okf.split(data, origin)
    if not parsed.has_frontmatter and source.name == agent_memory.CLAUDE:
        raise UsageError("no frontmatter; not a Claude memory file")
    if parsed.has_frontmatter and not parsed.meta:
        raise UsageError("empty frontmatter (no keys: nothing says what the memory is); not captured")
    # Every shape Claude Code writes, read as it reads it: keys under ``metadata`` at the
    # top (winning over a top-level key of the same name), its stamps out (agent_memory.py).
    shape = agent_memory.unfold(parsed.meta)
    meta = shape.meta
    stamped = shape.folded or bool(shape.stamps)
    if meta.get("type") is not None and not isinstance(meta["type"], str):
        where = "metadata.type" if shape.folded and "type" in parsed.meta.get("metadata", {}) else "type"
        raise UsageError(f"not captured, it would not be a valid concept: {where} must be a string, "
                         f"not {type(meta['type']).__name__}; fix the memory file and the next sync takes it")
    _check_names(meta)
    okf_id = meta.get("okf_id")
    at = kb.by_id(str(okf_id)) if okf.is_valid_okf_id(okf_id) else None
    if at is not None:
        tier, kb_path, head_oid = at
        if head_oid == oid:
            return None
        if stamped:
            held = kb.concept(tier, kb_path)
            if agent_memory.same_knowledge(meta, agent_memory.unfold(held.meta).meta) \
                    and agent_memory.same_body(parsed.body, held.body):
                return None  # Claude Code restamped the concept: nothing new to commit
            new, split = agent_memory.edit(kb.snapshot(tier).blob(kb_path), kb_path, meta, parsed.body,
                                           keep=agent_memory.STAMPS)
            return _edit(ctx, source, origin, oid, str(okf_id), tier, kb_path, head_oid, kb, st,
                         *_updated(new, origin, split, tier), present=present, stamps=shape.stamps)
        return _edit(ctx, source, origin, oid, str(okf_id), tier, kb_path, head_oid, kb, st,
                     *_updated(data, origin, parsed, tier), present=present)
    if okf.is_valid_okf_id(okf_id):
        # Not a new fact: a concept since removed from the KB, or one another repository
        # projected into a shared folder. Capturing it would resurrect or leak it.
        raise UsageError(f"carries okf_id {okf_id}, which no tier here has (a concept removed from the KB, "
                         "or another repository's); left untouched")
    projected = source.projected(st, origin)
    found = kb.by_origin(source.prefix + origin, source.name)
    if projected is not None and projected.okf_id and kb.by_id(projected.okf_id) is not None:
        # okfgit projected a concept to this very file and the agent rewrote it natively.
        found = kb.by_id(projected.okf_id)
    known = kb.concept(found[0], found[1]) if found is not None else None
    current = kb.by_id(known.okf_id) if known is not None and known.okf_id else None
    if known is not None and known.okf_id and current is not None:
        # A native file at the origin of a fact captured before: the agent rewrote it.
        if _same_fact(meta, parsed.body, known):
            return None
        tier, kb_path, head_oid = current
        if stamped:
            new, split = agent_memory.edit(kb.snapshot(tier).blob(kb_path), kb_path, meta, parsed.body,
                                           keep=(*agent_memory.STAMPS, *_PROFILE_KEYS))
            new, split = _updated(new, origin, split, tier)
        else:
            _, new, split = _migrate(ctx, source, origin, data, parsed, tier, known.okf_id)
        return _edit(ctx, source, origin, oid, known.okf_id, tier, kb_path, head_oid, kb, st, new, split)
    dest = routes.route(meta, source.personal)
    new_id, migrated, split = _migrate(ctx, source, origin, data, parsed, dest, stamped=stamped, unfolded=meta)
    repeated = kb.repeats(split)
    if repeated is not None:
        return _duplicate(ctx, source, origin, oid, data, parsed, dest, kb, *repeated, stamped=stamped,
                          unfolded=meta)
    name = okf.one_line(meta.get("name")) or posixpath.basename(origin)[:-3]
    kb_path = kb.free_path(dest, f"{CAPTURE_FOLDER}/{okf.slugify(name)}.md")
    return Captured("new", origin, oid, new_id, dest, kb_path, migrated, parsed=split, source=source)


def _duplicate(ctx: Context, source: Source, origin: str, oid: str, data: bytes, parsed: okf.Parsed, dest: Tier,
               kb: _Known, concept: TierCard, score: float, *, stamped: bool = False,
               unfolded: dict[str, Any] | None = None) -> Captured | None:
    """A new memory that says what ``concept`` says: committed beside it as a needs-merge
    sibling with its ``okf_id`` (in the tier the memory goes to: a project's fact never lands
    in another tier), so nothing is lost and nothing is said twice (None when that very
    proposal is committed already)."""
    okf_id = concept.okf_id or okf.new_okf_id()
    _, migrated, split = _migrate(ctx, source, origin, data, parsed, dest, okf_id, stamped=stamped, unfolded=unfolded)
    first = names.needs_merge_path(concept.path)
    if first in kb.snapshot(dest).entries and _sibling_has(kb.snapshot(dest), first, migrated, origin):
        return None  # a sync killed after its commit and before recording the file
    where = f"{concept.tier}:{concept.path}"
    why = f"nearly duplicates {where} ({concept.title}, similarity {score:.2f})"
    return Captured("duplicate", origin, oid, okf_id, dest, kb.free_path(dest, first), migrated, why, split,
                    repeats=(where, score), source=source)


def _edit(ctx: Context, source: Source, origin: str, oid: str, okf_id: str, tier: Tier, kb_path: str,
          head_oid: str, kb: _Known, st: state.State, data: bytes, split: okf.Parsed, *,
          present: frozenset[str] = frozenset(), stamps: dict[str, Any] | None = None) -> Captured | None:
    """An agent's edit (``data``, and ``split`` its parse): an update when the KB still holds
    what okfgit projected and the concept is not protected; a proposal when it is protected;
    else a conflict (None when that very variant is already committed as a sibling).

    A file holding a concept at another name than the one okfgit projected it to, whose
    projected file is gone from the folder, is that file renamed (Claude Code's consolidation
    renames and merges files): an update that records the new name as the concept's
    ``okf_origin``. With no record of what okfgit projected (another clone, a deleted
    ``.git/okf/``), Claude Code's own ``modified`` stamp decides: an edit made after the
    concept last changed in the tier started from the current concept."""
    projected = source.projected(st, origin)
    # The one rule: what a person verified, and a Decision, no agent changes in place.
    guarded = lifecycle.protected_by(kb.concept(tier, kb_path).meta)
    if source.name == agent_memory.CLAUDE and (projected is None or projected.okf_id != okf_id):
        before = [(n, r) for n, r in st.projected(okf_id) if n != origin] if okf_id else []
        if before and all(n not in present for n, _ in before):
            projected = _Projected(okf_id, before[0][1].oid)  # renamed: okfgit's file is gone, this one holds it
            if split.meta.get("okf_origin") != origin:
                data, split = okf.set_keys_split(data, origin, {"okf_origin": origin}, parsed=split)
        elif not before and not guarded and _edited_after(stamps, kb, tier, kb_path):
            return Captured("update", origin, oid, okf_id, tier, kb_path, data, parsed=split, source=source)
    if projected is not None and projected.oid == head_oid and projected.okf_id in (None, okf_id) and not guarded:
        return Captured("update", origin, oid, okf_id, tier, kb_path, data, parsed=split, source=source)
    snap = kb.snapshot(tier)
    sibling = names.needs_merge_path(kb_path)
    if _sibling_has(snap, sibling, data, origin):
        # That variant is there already (a sync killed after its commit and before recording
        # the file, or the same edit again): adding it again would only repeat it.
        return None
    if guarded:
        # The agent's words, said to be the agent's: a person's ``verified`` copied along
        # would vouch for text they never saw. A proposal is one version, which ``okfgit
        # proposal accept`` takes whole: a sibling of its own.
        data, split = okf.set_keys_split(data, origin, {"generated": {"by": source.actor, "at": ctx.iso_now()}},
                                         remove=("verified",), parsed=split)
        why = f"{tier.label}:{kb_path} is {guarded}, so no agent changes it in place"
        return Captured("proposal", origin, oid, okf_id, tier, kb.free_path(tier, sibling), data, why, split,
                        source=source)
    if sibling in snap.entries:  # one sibling per concept: this variant joins it
        data = needs_merge.add(snap.blob(sibling), data, f"{source.agent} memory {origin}")
        split = okf.split(data, sibling)
    if projected is None or projected.okf_id not in (None, okf_id):
        why = (f"the agent edited a copy of {tier.label}:{kb_path} that okfgit never projected to this file, "
               "so it cannot tell which version the agent started from")
    else:
        why = (f"the concept changed on both sides: in the KB ({tier.label}:{kb_path} is no longer what okfgit "
               f"projected here) and in {source.agent} memory")
    return Captured("conflict", origin, oid, okf_id, tier, sibling, data, why, split, source=source)


def _edited_after(stamps: dict[str, Any] | None, kb: _Known, tier: Tier, kb_path: str) -> bool:
    """Claude Code stamped the file (``modified``) after the concept's last change in the tier."""
    stamp = (stamps or {}).get("modified")
    if not isinstance(stamp, str):
        return False
    try:
        edited = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return False
    changed = kb.last_change(tier, kb_path)
    return changed is not None and edited > changed


def _valid(item: Captured) -> Captured:
    """``item``, when the bytes it would commit make a concept doctor accepts; else a
    UsageError naming the key, and the agent's file stays as it is (nothing is committed).

    Doctor's own per-file frontmatter checks decide (one rule, in one place); a needs-merge
    sibling is an error by design (a person merges it), so that finding alone does not count.
    """
    from okfgit.knowledge.checks import frontmatter_errors

    found = [f for f in frontmatter_errors(item.tier, item.kb_path, item.data, parsed=item.parsed)
             if f.code != "needs-merge"]
    if found:
        why = "; ".join(f.message.replace(" (`okfgit adopt` adds them)", "") for f in found)
        raise UsageError(f"not captured, it would not be a valid concept: {why}; fix the memory file "
                         "and the next sync takes it")
    return item


def _sibling_has(snap: Snapshot, first: str, data: bytes, origin: str) -> bool:
    """A needs-merge sibling (``first``, or ``-2``, ``-3`` ... an earlier okfgit made) already
    holds ``data`` as one of its variants: the same bytes, or the same keys and body but for
    ``generated`` (which a migration stamps with the time)."""
    want = blob_oid(data)
    mine: okf.Parsed | None = None
    for candidate in names.numbered(first):
        if candidate not in snap.entries:
            return False
        held = snap.blob(candidate)
        if snap.entries[candidate].oid == want or needs_merge.holds(held, data):
            return True
        for variant in needs_merge.variants(held):
            try:
                mine = mine or okf.split(data, origin)
                theirs = okf.split(variant, candidate)
            except OkfError:
                continue
            if theirs.body == mine.body and {k: v for k, v in theirs.meta.items() if k != "generated"} == \
                    {k: v for k, v in mine.meta.items() if k != "generated"}:
                return True
    return False


_PROFILE_KEYS = ("type", "title", "scope", "okf_id", "okf_source", "okf_origin", "generated")


def _same_fact(meta: dict[str, Any], body: bytes, concept: Concept) -> bool:
    """The native memory (unfolded) says what the captured concept says (okfgit's added keys
    aside, and Claude Code's rewriting of ``name``, blank lines and nulls)."""
    return agent_memory.same_knowledge(meta, agent_memory.unfold(concept.meta).meta, _PROFILE_KEYS) \
        and agent_memory.same_body(body, concept.body)


def _check_names(meta: dict[str, Any]) -> None:
    for key in ("name", "okf_origin"):
        value = meta.get(key)
        if value is None:
            continue
        text = str(value)
        if "\x00" in text or ".." in text.split("/") or text.startswith("/") or "\\" in text:
            raise UsageError(f"frontmatter {key} {text!r} tries to leave the memory folder")


def _updated(data: bytes, origin: str, parsed: okf.Parsed, tier: Tier) -> tuple[bytes, okf.Parsed]:
    """An agent's edit of a concept, with the profile keys that must not drift put back (and split),
    and without a ``verified`` naming a person (only a person's own commit says a person checked it)."""
    meta = parsed.meta
    fixes: dict[str, Any] = {}
    if meta.get("scope") != tier.name:
        fixes["scope"] = tier.name
    if not okf.one_line(meta.get("type")):
        fixes["type"] = "Note"
    vouched = ("verified",) if lifecycle.verifiers(meta) else ()
    return okf.set_keys_split(data, origin, fixes, vouched, parsed=parsed) if fixes or vouched else (data, parsed)


def _migrate(ctx: Context, source: Source, origin: str, data: bytes, parsed: okf.Parsed, dest: Tier,
             okf_id: str | None = None, *, stamped: bool = False,
             unfolded: dict[str, Any] | None = None) -> tuple[str, bytes, okf.Parsed]:
    """(okf_id, the agent's bytes with okfgit's profile keys added, those split): no key or
    body byte lost. ``parsed`` is the file split once by the caller. A file in Claude Code's
    stamped shape (``stamped``; ``unfolded`` its keys) becomes a new concept file of its
    unfolded keys and its body verbatim: its keys once, at the top, Claude Code's stamps out."""
    meta = unfolded if unfolded is not None else parsed.meta
    native_type = okf.one_line(meta.get("type")) or "Note"
    stem = posixpath.basename(origin)[:-3]
    name = okf.one_line(meta.get("name")) or stem
    description = okf.one_line(meta.get("description"))
    if okf_id is None:
        okf_id = meta["okf_id"] if okf.is_valid_okf_id(meta.get("okf_id")) else okf.new_okf_id()
    adds: dict[str, Any] = {}
    if not okf.one_line(meta.get("type")):
        adds["type"] = native_type
    heading = _first_heading(parsed.body)
    if not okf.one_line(meta.get("title")):
        # A note's own heading names it better than its file name does.
        named = okf.one_line(meta.get("name")) or (None if heading else name)
        adds["title"] = okf.title_from_name(named) if named else heading or (description[:80] or stem)
    if not description and source.name != agent_memory.CLAUDE:
        # A Gemini CLI note is plain markdown: what it says first is what it is about.
        adds["description"] = okf.first_sentence(parsed.body.decode("utf-8", "replace")) or heading or stem
    if meta.get("scope") != dest.name:
        adds["scope"] = dest.name
    if meta.get("okf_id") != okf_id:
        adds["okf_id"] = okf_id
    if "okf_source" not in meta:
        adds["okf_source"] = source.name
    if meta.get("okf_origin") != source.prefix + origin:
        adds["okf_origin"] = source.prefix + origin
    made = meta.get("generated")
    if not isinstance(made, dict) or lifecycle.is_human(made.get("by")):  # an agent's words are never a person's
        adds["generated"] = {"by": source.actor, "at": ctx.iso_now()}
    vouched = ("verified",) if lifecycle.verifiers(meta) else ()
    if stamped:
        fresh = okf.serialize({k: v for k, v in {**meta, **adds}.items() if k not in vouched}, parsed.body)
        return str(okf_id), fresh, okf.split(fresh, origin)
    return (str(okf_id), *okf.set_keys_split(data, origin, adds, remove=vouched, parsed=parsed))


def _first_heading(body: bytes) -> str:
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""


def _build_plan(items: list[Captured], kb: _Known) -> Plan:
    from okfgit.format import index_md as index

    plan = Plan()
    by_tier: dict[str, list[Captured]] = {}
    for item in items:
        by_tier.setdefault(item.tier.label, []).append(item)
    for group in by_tier.values():
        tier = group[0].tier
        snap = kb.snapshot(tier)
        changes: dict[str, bytes | None] = {c.kb_path: c.data for c in group}
        if "index.md" not in snap.entries:
            from okfgit.flows.concepts import root_index

            changes["index.md"] = root_index(tier)
        # Each captured file was split when its keys were checked: its entry needs no new parse.
        known = {c.kb_path: index.item_from(c.parsed.meta, c.kb_path) for c in group if c.parsed is not None}
        # A sibling is never listed: beside an index already there, it changes no index.
        listed = [p for p in changes
                  if not (names.is_needs_merge(p) and index.index_path(index.parent(p)) in snap.entries)]
        changes.update(index.regenerate(snap, changes, index.affected_folders(listed),
                                        items=kb.index_items(tier), changed_items=known))
        agents = {c.agent: c.source.actor if c.source is not None else AGENT_ACTOR for c in group}
        sources = sorted(agents, key=agent_memory.SOURCES.index)
        # One commit per tier: when two agents' files land in it, each agent is an actor of it.
        trailers = [("Okf-Actor", agents[name]) for name in sources[1:]]
        trailers += [("Okf-Source", name) for name in sources]
        trailers += [("Okf-Captured", f"{c.okf_id} {path_field(c.label)} {c.file_oid}") for c in group
                     if not c.declines]
        trailers += [("Okf-Deleted", f"{c.okf_id} {path_field(c.label)}") for c in group if c.declines]
        trailers += [("Okf-Near-Duplicate", f"{path_field(c.label)} {c.repeats[0]} {c.repeats[1]:.2f}")
                     for c in group if c.repeats is not None]
        count = len(group)
        whose = {agent_memory.CLAUDE: "Claude Code memory", agent_memory.GEMINI: "Gemini CLI memory"}
        subject = f"okf: capture {count} fact{'s' if count != 1 else ''} from " + (
            whose[sources[0]] if len(sources) == 1 else "agents' memory")
        # The trailers are the record of every file; the body names the first few for a person.
        body = "\n".join(f"- {c.action}: {c.label} -> {c.kb_path}" for c in group[:_BODY_LINES])
        if count > _BODY_LINES:
            body += f"\n- ... and {count - _BODY_LINES} more (one Okf-Captured trailer each)"
        old = {p: (snap.blob(p) if p in snap.entries else None) for p in changes}
        plan.commits.append(TierCommit(tier, "capture", subject, changes, tuple(trailers), body, old=old,
                                       base=snap.commit, actor=agents[sources[0]], branch=kb.branch(tier)))
    return plan


_BODY_LINES = 20  # files named in a capture commit's body; the trailers list all



