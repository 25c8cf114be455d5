"""Projection: the tiers at HEAD, merged by ``okf_id``, into each agent's native files.

Reads only tree objects at HEAD (DESIGN.md rule 1). The targets (``okfgit.targets``)
turn the merged knowledge into items; this module turns the items into one ``Plan`` of
file writes, lets ``plan.apply`` carry it out, then records what was written in the
state (``okfgit.local.state``) and leaves a stamp for the no-op fast path (``okfgit.local.fastpath``).

Per-concept work is proportional to what changed: each tier's concepts are cached by KB
tree OID in the tiers' stores (``okfgit.knowledge.cards``) and updated from a tree diff, and when the inputs, the
memory folder and ``MEMORY.md`` are all as okfgit left them, no concept is looked at.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from okfgit.progress import Progress, silent
from okfgit.knowledge import cards
from okfgit.knowledge.cards import TierCard, TierCards
from okfgit.local import fastpath, state
from okfgit.local.store import Stores
from okfgit.targets.claude_home import claude_home
from okfgit.context import Context
from okfgit.errors import EXIT_INTEGRITY, EXIT_OK, UsageError
from okfgit.git.repository import Repo
from okfgit.format import lifecycle
from okfgit.format.names import is_needs_merge
from okfgit.plan import FileWrite, Plan, apply, render
from okfgit.targets import TARGETS
from okfgit.targets.base import FAIL, REMOVE, SKIP, TOUCH, UNCHANGED, WRITE, Item, Merged, Save, TierInfo, View
from okfgit.knowledge import capture_policy
from okfgit.knowledge.tiers import Tier, Workspace

if TYPE_CHECKING:
    from okfgit.targets import budget

TARGET_CHOICES = ("claude", "gemini", "agents", "all")


def nav_protocol() -> str:
    """The navigation protocol, verbatim from package data (spec/okf-nav-protocol.md)."""
    # The file the fast path watches (fastpath.NAV_PROTOCOL): a plain read, without importing
    # importlib.resources on every run that projects.
    with open(fastpath.NAV_PROTOCOL, encoding="utf-8") as fh:
        return fh.read()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened (or, in a dry run, would happen) to one file."""

    target: str
    path: Path
    action: str  # written | unchanged | removed | skipped | failed
    reason: str


@dataclass(slots=True)
class Report:
    tiers: list[TierInfo] = field(default_factory=list)
    memory_dir: Path | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    diff: str = ""
    kept: list[str] = field(default_factory=list)  # memory files left as recorded (names in memory_dir)
    kept_rest: state.MemoryFiles | None = None  # ... and every other recorded one but these (TargetPlan)
    kept_but: frozenset[str] = frozenset()
    # The ownership record after this run, and what the fast-path stamp covers: both are
    # written by ``save`` (None in a dry run and outside a project repository).
    owned: state.State | None = None
    stamp: _Stamp | None = None
    skipped_concepts: list[str] = field(default_factory=list)  # "<tier>:<path>" not projected
    explanation: budget.Explanation | None = None  # what each agent sees (project --explain)
    recall_top_s: int | None = None  # the memory target's recall anchor and generation (targets/recall.py)
    generation: int | None = None
    recall_order: list[str] = field(default_factory=list)  # memory file names, Claude's first recall first
    fresh: int | None = None  # how many lead the recall order as what changed last (targets/recall.py)
    notes: list[str] | None = None  # the memory target's warnings that come from the concepts
    needs_merge: list[str] | None = None  # every needs-merge sibling in the tiers ("<tier>:<path>")
    held: state.Held | None = None  # what the memory folder's budget held (targets/claude_memory.py)

    @property
    def failed(self) -> bool:
        return any(o.action == "failed" for o in self.outcomes)

    @property
    def exit_code(self) -> int:
        return EXIT_INTEGRITY if self.failed else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        """The report as ``project --json`` (and ``sync --json``) print it."""
        def rows(action: str) -> list[dict[str, str]]:
            return [{"path": str(o.path), "target": o.target, "reason": o.reason} for o in self.of(action)]

        return {
            "dry_run": self.dry_run,
            "tiers": [{"tier": t.label, "commit": t.commit, "tree": t.tree} for t in self.tiers],
            "memory_dir": str(self.memory_dir) if self.memory_dir else None,
            "written": rows("written"),
            "unchanged": rows("unchanged"),
            "removed": rows("removed"),
            "skipped": rows("skipped"),
            "failed": rows("failed"),
            "warnings": self.warnings,
            **({"explain": self.explanation.to_json()} if self.explanation is not None else {}),
        }

    def count(self, action: str) -> int:
        extra = 0
        if action == "unchanged":
            extra = len(self.kept) + (len(self.kept_rest) - len(self.kept_but) if self.kept_rest is not None else 0)
        return extra + sum(1 for o in self.outcomes if o.action == action)

    def kept_names(self) -> list[str]:
        """Every memory file left as recorded (``kept``, ``kept_rest``)."""
        rest = [n for n in self.kept_rest if n not in self.kept_but] if self.kept_rest is not None else []
        return self.kept + rest

    def of(self, action: str) -> list[Outcome]:
        found = [o for o in self.outcomes if o.action == action]
        if action == "unchanged" and self.memory_dir is not None:
            found += [Outcome("claude-memory", self.memory_dir / n, "unchanged", "as okfgit last wrote it")
                      for n in self.kept_names()]
        return found


@dataclass(frozen=True, slots=True)
class _Stamp:
    """The fast-path stamp's arguments (``fastpath.make_stamp``): it is made only once the
    state file is saved, because it records that file's stat."""

    invocation: dict[str, Any]
    dotgits: list[str]
    watched: list[str]


@dataclass(slots=True)
class _Inputs:
    """The tiers taking part, with their open repositories."""

    infos: list[TierInfo]
    repos: dict[str, Repo]
    dotgits: list[str]


def standalone(ctx: Context, ws: Workspace, *, scope: str = "all", target: str = "all", dry_run: bool = False,
               run_arg: str | None = None, explain: bool = False) -> Report:
    """``okfgit project`` on its own: ``project`` with the ownership record and the stores
    opened here, and saved once when it is done (``save``; a dry run writes only the facts it read)."""
    stores = Stores()
    if ws.project_repo is not None:
        common = ws.tier("project").open().common_dir
        owned = state.load(common, stores.of(common))
    else:
        owned = state.State(Path(os.devnull))
    report = project(ctx, ws, owned, stores, scope=scope, target=target, dry_run=dry_run, run_arg=run_arg,
                     explain=explain)
    save(report, stores)
    return report


def project(ctx: Context, ws: Workspace, owned: state.State, stores: Stores, *, scope: str = "all",
            target: str = "all", dry_run: bool = False, run_arg: str | None = None, explain: bool = False) -> Report:
    """Project the selected tiers into the selected targets (``--target claude|agents|all``).

    ``owned`` is the ownership record and ``stores`` the run's stores as the caller holds
    them (``sync`` opens them once and hands them through capture and projection); the caller
    then ``save``s the report with them. With ``explain`` the report also says what each agent
    sees afterwards (``report.explanation``, targets/budget.py).
    """
    with _no_collector():
        return _project(ctx, ws, owned, stores, scope=scope, target=target, dry_run=dry_run, run_arg=run_arg,
                        explain=explain)


@contextmanager
def _no_collector() -> Iterator[None]:
    """The cyclic collector off: a first projection keeps a card, an item and a record per
    concept until it is done and frees none before, so the collector would only walk them
    again and again (as ``doctor.run`` and capture found). A caller that turned it off finds
    it off again afterwards."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _project(ctx: Context, ws: Workspace, owned: state.State, stores: Stores, *, scope: str,
             target: str, dry_run: bool, run_arg: str | None, explain: bool) -> Report:
    if target not in TARGET_CHOICES:
        raise UsageError(f"unknown target {target!r}: use one of {', '.join(TARGET_CHOICES)}")
    report = Report(dry_run=dry_run)
    inputs = _select(ws, scope, report.warnings)
    report.tiers = inputs.infos
    repo = Repo.open(ws.project_repo, ctx.environ) if ws.project_repo is not None else None
    st = owned
    report.warnings.extend(st.warnings)
    cache: dict[str, bytes] = {}
    view = View(
        ctx=ctx, tiers=inputs.infos,
        worktree=repo.workdir if repo else None, main_root=repo.main_workdir if repo else None,
        state=st, merge=lambda: _merge(inputs, stores, cache, ctx.progress),
        read=lambda oid: _read(oid, cache, inputs.repos), nav_protocol=nav_protocol(),
        wrote=lambda oid: _stored(repo, oid), changed=lambda: _changed(inputs, st),
        global_cards=_once(lambda: _global_cards(inputs, stores, cache)),
        budget=lambda: capture_policy.memory_files(ctx, ws.project_repo), fresh=lambda: _fresh(inputs, st),
    )
    planned: list[tuple[str, Item]] = []
    watched: list[str] = []
    rendered: list[str] = []
    saves: list[Save] = []
    memory_dir: Path | None = None  # set only when the memory target could project
    for tgt in TARGETS:
        if target not in ("all", tgt.group):
            continue
        tp = tgt.plan(view)
        report.warnings.extend(tp.warnings)
        watched.extend(tp.watched)
        rendered.extend(tp.rendered)
        planned.extend((tgt.name, item) for item in tp.items)
        saves.extend(tp.saves)
        report.kept.extend(tp.kept)
        if tp.kept_rest is not None:
            report.kept_rest, report.kept_but = tp.kept_rest, tp.kept_but
        memory_dir = tp.memory_dir or memory_dir
        if tp.generation is not None:
            report.recall_top_s, report.generation, report.recall_order = tp.recall_top_s, tp.generation, \
                tp.recall_order
        if tp.notes is not None:
            report.fresh, report.notes, report.needs_merge, report.held = tp.fresh, tp.notes, tp.needs_merge, tp.held
        if tp.skipped is not None:
            report.skipped_concepts = tp.skipped
    report.memory_dir = memory_dir
    if view._merged is not None:
        report.skipped_concepts = view._merged.skipped
    kept = Plan(writes=[FileWrite(s.path, s.data, s.reason, fsync=True) for s in saves])
    plan = Plan(writes=[_file_write(item) for _, item in planned if item.action in (WRITE, REMOVE, TOUCH)])
    if dry_run:
        report.diff = render(Plan(writes=kept.writes + plan.writes))
        report.outcomes = [_outcome(name, item, None) for name, item in planned]
        return report
    if saves:
        planned, plan = _unless_lost(ctx, kept, saves, planned, plan)
    done = apply(ctx, plan)
    failures = {w.path: why for w, why in done.failed}
    report.outcomes = [_outcome(name, item, failures.get(item.path)) for name, item in planned]
    if repo is not None:
        # Keep the bytes of each block file written, by the OID the record holds: a later run
        # can then tell okfgit's old block text from a person's when an end marker is lost.
        for name, item in planned:
            if name != "claude-memory" and item.action == WRITE and item.data and item.path not in failures:
                repo.store_blob(item.data)
    if repo is not None:
        _record(ctx, st, repo, planned, failures, memory_dir, inputs, report, scope=scope, target=target,
                run_arg=run_arg, expires=_next_stale(ctx, view), settings=watched, rendered=rendered,
                stats=done.stats)
    if explain:
        from okfgit.targets import budget  # only for --explain

        report.explanation = budget.explain(report.owned or st, memory_dir, repo.workdir if repo else None,
                                            ctx.environ, ctx.home)
    return report


def save(report: Report, stores: Stores) -> None:
    """The one save of a run that projected: every store it read (the project repository's
    with the ownership record, in one transaction), then the fast-path stamp, in that order:
    a change to the record removes the stamp, which vouches for the record it follows. A
    failed run removes the stamp so that the next run retries in full."""
    with _no_collector():  # a row per concept made and written, none kept
        if report.owned is not None:
            state.save(report.owned)
        stores.save()
    if report.owned is None:
        return
    common = str(report.owned.common_dir)
    if report.stamp is None:
        fastpath.save_stamp(common, None)
        return
    fastpath.save_stamp(common, fastpath.make_stamp(report.stamp.invocation, report.stamp.dotgits,
                                                    report.stamp.watched, report.owned.stale_at))


def _next_stale(ctx: Context, view: View) -> int | None:
    """When the next projected concept goes stale (epoch seconds), if one will: its
    ``MEMORY.md`` line changes then, so the fast path must not skip that run."""
    if view._merged is None:
        return view.state.stale_at  # no target read the concepts: none changed what goes stale when
    now = lifecycle.instant_of(ctx.now())
    ahead = [moment for c in view._merged.concepts if c.card.stale_after
             and (moment := lifecycle.parse_instant(c.card.stale_after)) is not None and moment > now]
    return int(min(ahead).timestamp()) if ahead else None


# -- inputs -----------------------------------------------------------------------------------


def _select(ws: Workspace, scope: str, warnings: list[str]) -> _Inputs:
    """The tiers in precedence order that exist and have a KB at HEAD; the rest are skipped."""
    out = _Inputs([], {}, [])
    for tier in ws.in_scope(scope):
        out.dotgits.append(str(tier.repo_path / ".git"))
        info = _tier_info(tier, warnings, explicit=scope == tier.name)
        if info is not None:
            out.infos.append(info[0])
            out.repos[tier.label] = info[1]
    return out


def _tier_info(tier: Tier, warnings: list[str], explicit: bool) -> tuple[TierInfo, Repo] | None:
    if not tier.exists():
        if explicit:
            warnings.append(f"the {tier.label} tier does not exist yet at {tier.root}; skipped")
        return None
    repo = tier.open()
    commit = repo.head_commit()
    if commit is None:
        warnings.append(f"the {tier.label} tier's repository {tier.repo_path} has no commits yet; skipped")
        return None
    tree = repo.tree_oid(commit, tier.prefix)
    if tree is None:
        if explicit or tier.name != "project":
            warnings.append(f"the {tier.label} tier has no knowledge base at HEAD ({tier.root}); skipped")
        return None
    return TierInfo(tier, commit, tree), repo


# Concepts changed in place that a projection still takes one by one; beyond this many it
# reads every tier's cards (about what parsing this many concepts costs).
DELTA_LIMIT = 64


def _changed(inputs: _Inputs, st: state.State) -> list[tuple[TierCard, TierCard]] | None:
    """The concepts changed in place since the inputs the state records, as (old, new)
    cards, or None when the tiers taking part or anything else about their concepts changed."""
    now = {info.label: info for info in inputs.infos}
    if set(now) != set(st.inputs):
        return None
    out: list[tuple[TierCard, TierCard]] = []
    for label, info in now.items():
        was = st.inputs[label]
        if was.repo != str(info.tier.repo_path):
            return None
        if was.tree == info.tree:
            continue
        found = cards.modified(inputs.repos[label], info.tier, was.tree, info.tree, DELTA_LIMIT - len(out))
        if found is None:
            return None
        out += [(TierCard(label, path, old), TierCard(label, path, new)) for path, old, new in found]
    return out


def _fresh(inputs: _Inputs, st: state.State) -> set[tuple[str, str]] | None:
    """The (tier, path) of every concept added or changed since the inputs the state records
    (None when the tiers taking part changed, or a recorded tree is gone)."""
    if {info.label for info in inputs.infos} != set(st.inputs):
        return None
    out: set[tuple[str, str]] = set()
    for info in inputs.infos:
        try:
            out.update((info.label, c.path) for c in inputs.repos[info.label].diff_paths(st.inputs[info.label].tree,
                                                                                          info.tree) if c.new)
        except Exception:  # noqa: BLE001 - a recorded tree gc'd away (or any diff failure): not known
            return None
    return out


def _merge(inputs: _Inputs, stores: Stores, cache: dict[str, bytes], progress: Progress = silent) -> Merged:
    """Every tier's concepts merged by ``okf_id`` (``knowledge.merged``): the most specific tier wins.

    Unreadable or flawed concepts and concepts without a valid ``okf_id`` are skipped with a
    warning: with no identity a concept could not be told apart from another tier's copy,
    nor recognised when an agent edits it, so it is not projected until it has one.
    """
    from okfgit.knowledge.merged import Merged as MergedView  # only when every concept is read

    view = MergedView([TierCards(info.tier, repo=inputs.repos[info.label], commit=info.commit, tree=info.tree,
                                 blobs=cache, progress=progress, stores=stores) for info in inputs.infos])
    warnings: list[str] = []
    skipped: list[str] = []
    for label in view.labels:
        for path, why in view.unusable(label):
            warnings.append(f"skipped a concept that cannot be read: {why}")
            skipped.append(f"{label}:{path}")
        for concept in view.unidentified(label):
            warnings.append(f"skipped {label}:{concept.path}: not projected, it has no valid okf_id "
                            f"(`okfgit doctor` names it; `okfgit adopt` adds one)")
            skipped.append(f"{label}:{concept.path}")
    warnings += [f"{d.dropped.tier}:{d.dropped.path} has the same okf_id as {d.kept.tier}:{d.kept.path}; "
                 f"projected only {d.kept.path}" for d in view.duplicates]
    siblings = [f"{label}:{path}" for label in view.labels
                for path in sorted({*view.tier(label).catalog.facts, *view.tier(label).problems}) if is_needs_merge(path)]
    return Merged(view.knowledge, warnings, skipped, siblings)


def _global_cards(inputs: _Inputs, stores: Stores, cache: dict[str, bytes]) -> list[TierCard]:
    """The global tier's concepts as its cards say (kept in its store), for the home-level
    blocks: every concept of the tier, whether or not a more specific tier shadows it."""
    info = next((i for i in inputs.infos if i.tier.name == "global"), None)
    if info is None:
        return []
    cards_of = TierCards(info.tier, repo=inputs.repos[info.label], commit=info.commit, tree=info.tree, blobs=cache,
                         stores=stores)
    return [TierCard(info.label, path, card) for path, card in sorted(cards_of.catalog.facts.items())
            if not is_needs_merge(path)]


def _once(make: Callable[[], list[TierCard]]) -> Callable[[], list[TierCard]]:
    """``make``, computed on the first call only (several home-level targets ask for it)."""
    done: list[list[TierCard]] = []

    def get() -> list[TierCard]:
        if not done:
            done.append(make())
        return done[0]
    return get


def unprojected(ws: Workspace, owned: state.State, stores: Stores) -> tuple[list[str], list[str]]:
    """(concepts at HEAD that projection skips, as ``<tier>:<path>``, and why each): what
    ``status`` lists. When ``owned`` records a projection of exactly these inputs, what it
    recorded (``merged``); else read from the tiers' cards (in ``stores``)."""
    warnings: list[str] = []
    inputs = _select(ws, "all", warnings)
    now = {t.label: state.TierInput(str(t.tier.repo_path), t.commit, t.tree) for t in inputs.infos}
    if owned.skipped is not None and owned.notes is not None and owned.inputs == now:
        return list(owned.skipped), [w for w in owned.notes if w.startswith("skipped ")]
    merged = _merge(inputs, stores, {})
    return merged.skipped, [w for w in merged.warnings if w.startswith("skipped ")]


def _stored(repo: Repo | None, oid: str) -> bytes | None:
    """A blob okfgit stored in the project repository (``store_blob``), or None (pruned by gc)."""
    if repo is None:
        return None
    try:
        return repo.read_blob(oid)
    except (KeyError, ValueError):
        return None


def _read(oid: str, cache: dict[str, bytes], repos: dict[str, Repo]) -> bytes:
    data = cache.get(oid)
    if data is not None:
        return data
    for repo in repos.values():
        try:
            return repo.read_blob(oid)
        except (KeyError, ValueError):
            continue
    raise UsageError(f"blob {oid} is in none of the tiers' repositories")


# -- plan and outcomes ------------------------------------------------------------------------


def _unless_lost(ctx: Context, kept: Plan, saves: list[Save], planned: list[tuple[str, Item]],
                 plan: Plan) -> tuple[list[tuple[str, Item]], Plan]:
    """Keep a person's words first (``kept``); a file whose words could not be kept is not
    regenerated (its item fails), so they are still where they were."""
    why = {write.path: problem for write, problem in apply(ctx, kept).failed}
    failed = {save.before: why[save.path] for save in saves if save.path in why}
    if not failed:
        return planned, plan
    planned = [(name, item._replace(action=FAIL, reason=f"not regenerated: could not keep the lines someone wrote "
                                                         f"there first ({failed[item.path]})"))
               if item.path in failed else (name, item) for name, item in planned]
    return planned, Plan(writes=[w for w in plan.writes if w.path not in failed])


def _file_write(item: Item) -> FileWrite:
    return FileWrite(item.path, item.data if item.action == WRITE else None, item.reason, item.fsync, item.old,
                     mtime_ns=item.mtime_ns, touch=item.action == TOUCH)


# A touched file's bytes are unchanged: only its time moved (Claude's recall order).
_PAST = {WRITE: "written", REMOVE: "removed", UNCHANGED: "unchanged", TOUCH: "unchanged", SKIP: "skipped",
         FAIL: "failed"}


def _outcome(target: str, item: Item, failure: str | None) -> Outcome:
    if failure is not None:
        return Outcome(target, item.path, "failed", failure)
    return Outcome(target, item.path, _PAST[item.action], item.reason)


# -- state and stamp ----------------------------------------------------------------------------


def _record(ctx: Context, old: state.State, repo: Repo, planned: list[tuple[str, Item]], failures: dict[Path, str],
            memory_dir: Path | None, inputs: _Inputs, report: Report, *, scope: str, target: str,
            run_arg: str | None, expires: int | None = None, settings: list[str] | None = None,
            rendered: list[str] | None = None, stats: dict[Path, tuple[int, int]] | None = None) -> None:
    """The new state and (when all went well) the fast-path stamp, into ``report``; ``save`` writes
    them. ``stats``: the stat of each file written, as ``apply`` renamed it into place."""
    new = old.derive()
    stats = stats or {}
    memory_failed = False
    for _, item in planned:
        failed = item.path in failures or item.action == FAIL
        if item.memory_name is not None:
            memory_failed |= failed
            _record_memory(new, old, item, failed, memory_dir, report.generation, stats)
        else:
            _record_target(new, item, failed, stats)
    if memory_dir is not None:
        # A record without an item is a file that is already gone.
        if report.kept_rest is None:  # else every record is kept or planned: none to remove
            names = {item.memory_name for _, item in planned if item.memory_name is not None}
            names.update(report.kept)
            new.memory_files.retain(names)
        new.memory_dir = memory_dir
        new.stale_at = expires
        if report.generation is not None and not memory_failed:
            new.recall_top_s, new.generation = report.recall_top_s, report.generation
        if report.notes is not None and not memory_failed:
            new.recall_fresh, new.skipped, new.notes = report.fresh, list(report.skipped_concepts), report.notes
            new.needs_merge, new.held = report.needs_merge, report.held
        stat = fastpath.stat_token(str(memory_dir))
        # A file held back (an agent deleted it) is missing where a record says okfgit wrote it:
        # the folder is not vouched for, so the next run looks at it again rather than keep it.
        held = any(item.held for _, item in planned)
        new.memory_dir_mtime_ns = stat[1] if stat and not held else None
        new.inputs = {} if memory_failed or report.failed else {
            t.label: state.TierInput(str(t.tier.repo_path), t.commit, t.tree) for t in inputs.infos
        }
    now = {t.label: state.TierInput(str(t.tier.repo_path), t.commit, t.tree) for t in inputs.infos}
    for path in rendered or []:
        key = os.path.abspath(path)
        if key in new.targets and Path(path) not in failures:
            new.rendered[key] = now  # rendered from these inputs (what the target's next run compares)
        else:
            new.rendered.pop(key, None)
    report.owned = new
    if report.failed:
        return
    watched = [str(item.path) for _, item in planned if item.memory_name is None]
    watched += [str(item.via) for _, item in planned if item.via is not None]  # a retargeted link
    if memory_dir is not None:
        watched.append(str(memory_dir))
    # The settings that decide where the agents' folders are (targets' ``watched``).
    watched += [str(claude_home(ctx.environ, ctx.home) / "settings.json"), *(settings or []), fastpath.NAV_PROTOCOL]
    watched += fastpath.config_files(ctx.environ, str(repo.gitdir))
    invocation = fastpath.key(ctx.environ, gitdir=str(repo.gitdir), scope=scope, target=target, run=run_arg)
    report.stamp = _Stamp(invocation, list(inputs.dotgits), watched)


def _stat_record(path: Path, oid: str, stats: dict[Path, tuple[int, int]]) -> state.FileRecord | None:
    """The record of the file at ``path`` holding ``oid``: its size and time as written (``stats``),
    else as they are."""
    written = stats.get(path)
    if written is not None:
        return state.FileRecord(oid, *written)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return state.FileRecord(oid, st.st_size, st.st_mtime_ns)


def _record_target(new: state.State, item: Item, failed: bool, stats: dict[Path, tuple[int, int]]) -> None:
    key = os.path.abspath(item.path)
    if failed or item.action == SKIP:
        return
    if item.action == REMOVE:
        new.targets.pop(key, None)
        return
    assert item.oid is not None
    current = new.targets.get(key)
    if item.action == UNCHANGED and current is not None and current.oid == item.oid:
        try:
            if current.matches(os.lstat(item.path)):
                return
        except OSError:
            pass
    record = _stat_record(item.path, item.oid, stats)
    if record is not None:
        new.targets[key] = record


def _record_memory(new: state.State, old: state.State, item: Item, failed: bool, memory_dir: Path | None,
                   generation: int | None, stats: dict[Path, tuple[int, int]]) -> None:
    name = item.memory_name
    assert name is not None
    if failed:
        return
    if item.action == REMOVE or (item.action == SKIP and not item.keep_record):
        new.memory_files.pop(name, None)
        return
    if item.action == SKIP:
        return
    concept = item.concept
    if concept is None:
        current = old.memory_files.get(name)
        if item.action == TOUCH and current is not None:  # only its time moved (Claude's recall order)
            record = _stat_record(item.path, current.file_oid, stats)
            if record is not None:
                new.memory_files[name] = current._replace(size=record.size, mtime_ns=record.mtime_ns)
        return  # unchanged and not even looked at: the record stands
    assert item.oid is not None
    current = old.memory_files.get(name) if old.memory_dir == memory_dir else None
    okf_id, oid = concept.okf_id, concept.oid
    written = item.oid if item.oid != oid else ""
    since = current.since if current is not None and current.oid == oid else (generation or 0)
    if item.action == UNCHANGED and current is not None and current.file_oid == item.oid:
        if (current.okf_id, current.tier, current.path, current.oid, current.since) == (
                okf_id, concept.tier, concept.path, oid, since):
            return
        new.memory_files[name] = state.MemoryFile(okf_id, concept.tier, concept.path, oid, current.size,
                                                  current.mtime_ns, since, written)
        return
    record = _stat_record(item.path, item.oid, stats)
    if record is not None:
        new.memory_files[name] = state.MemoryFile(okf_id, concept.tier, concept.path, oid, record.size,
                                                  record.mtime_ns, since, written)
