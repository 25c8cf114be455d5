"""``status``: what ``sync`` would do, without writing anything."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from okfgit.flows import agent_hooks
from okfgit.flows import capture, exchange
from okfgit.flows import hooks
from okfgit.local import hooklog, lock, paths, stamps, state
from okfgit.local.store import Stores
from okfgit.flows import projection
from okfgit.context import Context
from okfgit.errors import OkfError, RepoStateError, UsageError
from okfgit.plan import IndexBehind, InProgress, Plan, in_progress, index_behind
from okfgit.targets import budget
from okfgit.flows.projection import Outcome
from okfgit.format import lifecycle, names, needs_merge
from okfgit.knowledge.snapshot import Snapshot, snapshot
from okfgit.format.names import is_needs_merge
from okfgit.format.findings import Finding
from okfgit.knowledge import checks
from okfgit.knowledge.tiers import Tier, Workspace
from okfgit.format.words import plural

if TYPE_CHECKING:  # runs (and the git layer under it) loads only when a run is active
    from okfgit.flows import runs


@dataclass(slots=True)
class Status:
    capture: capture.Report
    projection: projection.Report
    hooks: hooks.Status
    agent: agent_hooks.AgentStatus
    lock_holder: lock.Holder | None
    tiers: list[str]
    blocked: list[str]  # why sync could not commit the pending captures right now
    remote: exchange.RemoteInfo
    needs_merge: list[str] = field(default_factory=list)  # "<tier>:<path>" of siblings at HEAD
    variants: dict[str, int] = field(default_factory=dict)  # ... and how many variants each holds
    unprojected: list[str] = field(default_factory=list)  # "<tier>:<path>" projection skips
    unprojected_why: list[str] = field(default_factory=list)
    hook_error: str | None = None  # the last hook error since the last successful sync
    over_budget: list[str] = field(default_factory=list)  # what an agent cannot see (targets/budget.py)
    hidden: list[str] = field(default_factory=list)  # okfgit's blocks an agent does not read (budget.hidden)
    index_behind: list[IndexBehind] = field(default_factory=list)  # what the next git commit would revert
    protected: dict[str, str] = field(default_factory=dict)  # sibling -> why its concept is protected
    masters: dict[str, str] = field(default_factory=dict)  # sibling -> "<tier>:<path>" of its concept elsewhere
    in_progress: list[InProgress] = field(default_factory=list)  # merges (rebases...) under way in the tiers
    doctor: list[Finding] = field(default_factory=list)  # doctor's errors at HEAD, file named "<tier>:<path>"
    run_edits: runs.WorkingEdits | None = None  # the active run's uncommitted edits

    @property
    def in_sync(self) -> bool:
        return (not self.capture.captured and not self.stale_targets and not self.attention
                and not (self.run_edits and self.run_edits.committable))

    @property
    def attention(self) -> list[str]:
        """What needs a person (sync alone will not resolve it); empty when nothing does."""
        cap = self.capture
        out: list[str] = []
        if self.needs_merge or cap.conflicts:
            masters = {self.masters.get(s) or _master(s) for s in self.needs_merge}
            masters |= {f"{c.tier.label}:{names.needs_merge_master(c.kb_path)}" for c in cap.conflicts}
            out.append(f"{plural(len(masters), 'concept')} with needs-merge variants to merge")
        if cap.skipped:
            out.append(f"{plural(len(cap.skipped), 'memory file')} okfgit cannot capture")
        if cap.held:
            out.append(f"{plural(len(cap.held), 'memory file')} with no tier to go to")
        if self.unprojected:
            out.append(f"{plural(len(self.unprojected), 'concept')} not projected")
        if self.hook_error:
            out.append("a git hook failed since the last successful sync")
        if self.index_behind:
            out.append(f"{plural(sum(len(b.paths) for b in self.index_behind), 'okfgit path')} whose index is "
                       "behind HEAD")
        if self.hidden:
            out.append(f"{plural(len(self.hidden), 'okfgit block')} hidden from Codex by an AGENTS.override.md")
        out += [f"{busy.operation.what} to finish in {busy.tier.repo_path}" for busy in self.in_progress]
        if self.doctor:
            out.append(f"{plural(len(self.doctor), 'doctor error')}")
        if self.run_edits and self.run_edits.waiting:
            out.append(f"{plural(len(self.run_edits.waiting), 'edited run file')} sync will not commit")
        return out

    @property
    def exit_code(self) -> int:
        """0 when nothing needs a person, 2 when something does (spec/okf-capture-sync.md §9)."""
        return 2 if self.attention else 0

    @property
    def stale_targets(self) -> list[Outcome]:
        return [o for o in self.projection.outcomes if o.action in ("written", "removed")]

    def to_json(self) -> dict[str, Any]:
        cap = self.capture
        return {
            "in_sync": self.in_sync,
            "attention": self.attention,
            "tiers": self.tiers,
            "needs_merge": self.needs_merge,
            "proposals": [{"sibling": s, "protected": why} for s, why in self.protected.items()],
            "needs_merge_variants": self.variants,
            "unprojected": self.unprojected,
            "capture": {
                "enabled": cap.enabled,
                "reason": cap.reason,
                "machine": cap.switch.machine if cap.switch else None,
                "project": cap.switch.project if cap.switch else None,
                "blocked": self.blocked,
                "memory_dir": str(cap.memory_dir) if cap.memory_dir else None,
                "memory_source": cap.memory_source,
                "gemini_dir": str(cap.gemini_dir) if cap.gemini_dir else None,
                "pending": [{"origin": c.origin, "action": c.action, "tier": c.tier.label, "path": c.kb_path}
                            for c in cap.captured],
                "unreadable": [{"origin": o, "reason": r} for o, r in cap.skipped],
                "held": [{"origin": o, "reason": r} for o, r in cap.held],
                "deleted_by_agent": cap.deleted,
            },
            "projection": {
                "stale": [{"path": str(o.path), "action": o.action, "reason": o.reason} for o in self.stale_targets],
                "skipped": [{"path": str(o.path), "reason": o.reason} for o in self.projection.of("skipped")],
            },
            "hooks": {**self.hooks.to_json(), "last_error": self.hook_error},
            "agent_hooks": self.agent.to_json(),
            "sync_lock": self.lock_holder.describe() if self.lock_holder else None,
            "global_remote": self.remote.to_json() if self.remote.url else None,
            "over_budget": self.over_budget,
            "hidden": self.hidden,
            "index_behind": [{"tier": b.tier.label, "paths": b.paths, "repair": b.repair} for b in self.index_behind],
            "in_progress": [{"tier": b.tier.label, "operation": b.kind, "finish": b.operation.finish,
                             "unmerged": b.unmerged} for b in self.in_progress],
            "doctor_errors": [f.to_json() for f in self.doctor],
            "run_edits": self.run_edits.to_json() if self.run_edits is not None else None,
        }


def status(ctx: Context, ws: Workspace) -> Status:
    """What ``sync`` would do now: capture planned (even when the switch is off, so it
    shows what is waiting), projection dry-run, hooks, lock. Writes nothing but caches."""
    if ws.project_repo is None:
        raise UsageError("status needs a project repository: run it inside one or pass --repo")
    repo = ws.tier("project").open()
    stores = Stores()
    owned = state.load(repo.common_dir, stores.of(repo.common_dir))
    # The memory folder as the last sync left it, with nothing waiting: one walk of it, for
    # both what capture would take (nothing) and what Claude can recall.
    first = stamps.clean_scan(str(repo.common_dir))
    cap = capture.plan_capture(ctx, ws, owned, stores, force=True, unchanged=first[0] if first else None)
    proj = projection.project(ctx, ws, owned, stores, dry_run=True)
    tiers = [t for t in ws.active() if t.has_kb()]
    unprojected, why = projection.unprojected(ws, owned, stores)
    doctor = _doctor_errors(ctx, ws, tiers, stores)
    stores.save()  # the facts it read and the errors doctor would report: the ownership record stays as it is
    hook_state = hooks.status(repo.workdir, ctx.environ)
    explained = budget.explain(owned, owned.memory_dir, repo.workdir, ctx.environ, ctx.home, detail=False,
                               seen=first[1].entries if first and first[0] == str(owned.memory_dir) else None)
    siblings = _needs_merge(tiers, owned)
    masters, protected = _masters(tiers, siblings)
    return Status(
        capture=cap,
        projection=proj,
        hooks=hook_state,
        agent=agent_hooks.status(ctx),
        lock_holder=lock.holder(paths.lock(repo.common_dir)),
        tiers=[t.label for t in tiers],
        blocked=_blocked(cap.plan) if cap.enabled else [],
        needs_merge=siblings,
        protected=protected,
        masters=masters,
        variants=_variants(tiers, siblings),
        unprojected=unprojected,
        unprojected_why=why,
        hook_error=hooklog.error_since_last_sync(repo.common_dir),
        remote=exchange.show(ws),
        over_budget=explained.over_budget,
        hidden=explained.hidden,
        index_behind=[b for b in (index_behind(t) for t in ws.active()) if b is not None],
        in_progress=_in_progress(ws.active()),
        doctor=doctor,
        run_edits=_run_edits(ctx, ws),
    )


def _doctor_errors(ctx: Context, ws: Workspace, tiers: list[Tier], stores: Stores) -> list[Finding]:
    """Every error ``doctor`` reports for the tiers at HEAD (``checks.errors_at_head``: one
    lookup when the trees are the ones last checked), each file named ``<tier>:<path>``: what
    needs a person before the knowledge base is whole. Needs-merge siblings are left to their
    own section."""
    errors = checks.errors_at_head(ws, tiers, lifecycle.instant_of(ctx.now()), stores)
    return [replace(f, file=f"{t.label}:{f.file}") for t in tiers
            for f in sorted(errors.get(t.label, []), key=Finding.sort_key) if f.code != "needs-merge"]


def _in_progress(tiers: list[Tier]) -> list[InProgress]:
    """What git is in the middle of in each tier's repository (a repository counted once)."""
    out: list[InProgress] = []
    for tier in tiers:
        busy = in_progress(tier)
        if busy is not None and all(b.tier.repo_path != tier.repo_path for b in out):
            out.append(busy)
    return out


def _run_edits(ctx: Context, ws: Workspace) -> runs.WorkingEdits | None:
    if not ws.run:
        return None
    from okfgit.flows import runs

    return runs.working_edits(ctx, ws)


def _needs_merge(tiers: list[Tier], owned: state.State) -> list[str]:
    """Every needs-merge sibling committed in the tiers (``<tier>:<path>``): capture's
    conflicts waiting for a person to merge them. A tier whose KB tree is the one the last
    projection recorded takes the list recorded with it; another tier's tree is walked."""
    out: list[str] = []
    for tier in tiers:
        repo = tier.open()
        head = repo.head_commit()
        if head is None:
            continue
        was = owned.inputs.get(tier.label)
        if owned.needs_merge is not None and was is not None and was.repo == str(tier.repo_path) \
                and was.tree == repo.tree_oid(head, tier.prefix):
            out += [p for p in owned.needs_merge if p.startswith(f"{tier.label}:")]
            continue
        out += [f"{tier.label}:{p}" for p in sorted(repo.tree_entries(head, tier.prefix)) if is_needs_merge(p)]
    return out


def _masters(tiers: list[Tier], siblings: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Each sibling whose concept is in another tier (a new fact that nearly repeats a wider
    tier's concept stays in its own tier), with that concept's ``<tier>:<path>``; and each
    sibling beside a concept no agent may change (``lifecycle.protected_by``), with why: that
    sibling is an agent's proposal, which a person accepts or drops."""
    elsewhere: dict[str, str] = {}
    protected: dict[str, str] = {}
    snaps: dict[str, Snapshot] = {}
    for sibling in siblings:
        label, path = sibling.split(":", 1)
        master = names.needs_merge_master(path)
        snap = snaps.get(label) or snaps.setdefault(label, snapshot(next(t for t in tiers if t.label == label)))
        if master not in snap.entries:
            home = next((t.label for t in tiers if t.label != label and master in
                         (snaps.get(t.label) or snaps.setdefault(t.label, snapshot(t))).entries), None)
            if home is not None:
                elsewhere[sibling] = f"{home}:{master}"
            continue
        try:
            why = lifecycle.protected_by(snap.concept(master).meta)
        except OkfError:
            why = ""  # an unreadable concept: doctor names it
        if why:
            protected[sibling] = why
    return elsewhere, protected


def _variants(tiers: list[Tier], siblings: list[str]) -> dict[str, int]:
    """How many variants each sibling (``<tier>:<path>``) holds (``format/needs_merge.py``)."""
    out: dict[str, int] = {}
    by_label = {t.label: t for t in tiers}
    for sibling in siblings:
        label, _, path = sibling.partition(":")
        tier = by_label[label]
        repo = tier.open()
        entry = repo.entry_at(repo.head_commit(), tier.repo_path_of(path))
        out[sibling] = needs_merge.count(repo.read_blob(entry.oid)) if entry is not None else 1
    return out


def _master(sibling: str) -> str:
    """``<tier>:<master path>`` of a ``<tier>:<sibling path>``."""
    label, _, path = sibling.partition(":")
    return f"{label}:{names.needs_merge_master(path)}"


def _blocked(plan: Plan) -> list[str]:
    """Why each pending capture commit would be deferred now (mid-rebase, detached HEAD,
    uncommitted edits in the way); empty when sync could commit them."""
    out: list[str] = []
    for commit in plan.commits:
        if not commit.tier.exists():
            continue  # created on first use
        repo = commit.tier.open()
        try:
            repo.check_writable_state()
        except RepoStateError as exc:
            out.append(str(exc))
            continue
        changes = {commit.tier.repo_path_of(p): d for p, d in commit.changes.items()}
        dirty = repo.dirty_paths(changes, repo.head_commit())
        if dirty:
            out.append(f"{repo.workdir}: uncommitted edits in {', '.join(sorted(dirty))}")
    return out


def render(st: Status) -> str:
    """The human-readable status (``--json`` gives ``Status.to_json``)."""
    cap = st.capture
    lines = [f"tiers: {', '.join(st.tiers) or 'none'}"]
    for busy in st.in_progress:
        lines.append(f"{busy.kind} in progress: finish it, then okfgit sync")
        lines.append(f"  {busy.tier.repo_path}: {busy.operation.finish}")
        lines += [f"  unmerged {path}: {busy.remedy(path)}" for path in busy.unmerged]
    lines.append(cap.reason)
    if cap.memory_dir:
        lines.append(f"memory folder: {cap.memory_dir} (from {cap.memory_source})")
    if cap.gemini_dir:
        lines.append(f"gemini memory folder: {cap.gemini_dir}")
    pending = [c for c in cap.captured if c.action != "conflict"]
    lines.append(f"captures pending: {len(pending)}" + ("" if cap.enabled else " (capture is off: sync will not take them)"))
    lines += [f"  {c.action}: {c.origin} -> {c.tier.label}:{c.kb_path}" for c in pending]
    lines.append(f"conflicts: {len(cap.conflicts)}")
    lines += [f"  {c.origin}: {c.why}; sync keeps the KB's and commits the agent's as "
              f"{c.tier.label}:{c.kb_path}" for c in cap.conflicts]
    if st.blocked:
        lines.append("sync would defer the capture for now (it projects anyway):")
        lines += [f"  {why}" for why in st.blocked]
    if cap.skipped:
        lines.append(f"unreadable memory files (left untouched): {len(cap.skipped)}")
        lines += [f"  {o}: {r}" for o, r in cap.skipped]
    if cap.held:
        lines.append(f"memory files waiting for a tier (left untouched): {len(cap.held)}")
        lines += [f"  {o}: {r}" for o, r in cap.held]
    if st.needs_merge:
        by_master: dict[str, list[str]] = {}
        proposals: list[str] = []
        for sibling in st.needs_merge:
            if sibling in st.protected:
                master = names.needs_merge_master(sibling.split(":", 1)[1])
                proposals.append(f"  {sibling}: an agent's version of {master}, which is {st.protected[sibling]}; "
                                 f"accept it: `okfgit proposal accept {sibling}`; drop it: `okfgit proposal drop "
                                 f"{sibling}`")
            else:
                by_master.setdefault(st.masters.get(sibling) or _master(sibling), []).append(sibling)
        if by_master:
            lines.append(f"needs-merge variants waiting for a person: {plural(len(by_master), 'concept')}")
        for master, found in by_master.items():
            count = sum(st.variants.get(s, 1) for s in found)
            label, _, path = master.partition(":")
            shown = ", ".join(s.partition(":")[2] if s.startswith(f"{label}:") else s for s in found)
            if found[0] in st.masters:
                remedy = needs_merge.settled_elsewhere(found[0], master)
            else:
                remedy = (f"merge what matters into {path}, then delete {'it' if len(found) == 1 else 'them'} "
                          f"(or `okfgit proposal accept|drop {found[0]}`)")
            lines.append(f"  {master}: {plural(count, 'variant')} in {shown}; {remedy}")
        if proposals:
            lines.append(f"agent proposals waiting for a person: {len(proposals)}")
            lines += proposals
    if st.unprojected:
        lines.append(f"concepts not projected: {len(st.unprojected)}")
        lines += [f"  {w}" for w in st.unprojected_why] or [f"  {p}" for p in st.unprojected]
    if cap.deleted:
        lines.append(f"projected files an agent deleted (not written back; sync proposes deprecating them): "
                     f"{len(cap.deleted)}")
        lines += [f"  {o}" for o in cap.deleted]
    lines.append(f"projections stale: {len(st.stale_targets)}")
    lines += [f"  {o.action}: {o.path}" for o in st.stale_targets[:20]]
    if len(st.stale_targets) > 20:
        lines.append(f"  ... and {len(st.stale_targets) - 20} more")
    installed = [h.name for h in st.hooks.hooks if h.state in ("ours", "chained")]
    lines.append(f"git hooks: {len(installed)} of {len(st.hooks.hooks)} installed in {st.hooks.where.path}"
                 + ("" if installed else " (run `okfgit hooks install`)"))
    if st.hook_error:
        lines.append(f"  last hook error (since the last successful sync): {st.hook_error}")
    lines.append(f"claude code hooks: {st.agent.state} ({st.agent.path})")
    if st.remote.url:
        lines += st.remote.render()
    for behind in st.index_behind:
        lines.append(f"index behind HEAD: {behind.message()}")
        lines += [f"  {p}" for p in behind.paths]
    if st.doctor:
        lines.append(f"doctor errors: {len(st.doctor)} (`okfgit doctor` says more)")
        lines += [f"  {f.where()}: {f.code}: {f.message}" for f in st.doctor[:20]]
        if len(st.doctor) > 20:
            lines.append(f"  ... and {len(st.doctor) - 20} more")
    edits = st.run_edits
    if edits is not None and edits.committable:
        lines.append(f"run {edits.tier.run}: edits sync commits (as {edits.actor}): {len(edits.committable)}")
        lines += [f"  {e.change}: {e.path}" for e in edits.committable]
    if edits is not None and edits.waiting:
        lines.append(f"run {edits.tier.run}: edits waiting for a person: {len(edits.waiting)}")
        lines += [f"  {e.change}: {e.path}: {e.why}" for e in edits.waiting]
    if st.lock_holder:
        lines.append(f"sync running: {st.lock_holder.describe()}")
    lines += [f"over an agent's budget: {sentence} (`okfgit project --explain` lists it)" for sentence in st.over_budget
              if sentence not in st.hidden]
    lines += [f"hidden from an agent: {sentence}" for sentence in st.hidden]
    if st.capture.captured or st.stale_targets or (edits is not None and edits.committable):
        lines.append("run `okfgit sync` to bring everything in line")
    if st.attention:
        lines.append(f"needs a person: {'; '.join(st.attention)}")
    elif st.in_sync:
        lines.append("in sync")
    return "\n".join(lines)
