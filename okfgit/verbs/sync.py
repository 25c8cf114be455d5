"""``sync``: capture, then project, always in that order, under a lock.

With a global remote the order is fetch → integrate → capture → project → push
(``flows/exchange.py``; spec/okf-global-remote.md).

Concurrent syncs (two git hooks, a hook and a Claude Code session hook) must not
interleave, so both steps run under ``<git common dir>/okf/sync.lock``; a second sync
waits a bounded time, then says it skipped. A capture that cannot commit right now (the
repository is mid-rebase, HEAD is detached, a person has uncommitted edits in the way, the
branch kept moving under it) is deferred, and projection still runs: projection never
overwrites a file okfgit did not write, so the agent's memories wait safely for the next sync.
One a branch switch cannot place (no reflog proves the branch they were written on) is held
for the next sync outside a git hook, which commits it on the branch checked out then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from okfgit.flows import capture
from okfgit.local import lock, paths
from okfgit.flows import projection
from okfgit.local import state
from okfgit.local import stamps
from okfgit.local.store import Stores
from okfgit.context import Context
from okfgit.errors import EXIT_INTEGRITY, EXIT_OK, BusyError, OkfError, RepoStateError, UsageError
from okfgit.format import lifecycle
from okfgit.knowledge import checks
from okfgit.knowledge.tiers import Tier, Workspace
from okfgit.plan import in_progress
from okfgit.git.repository import Repo
from okfgit.format.words import plural

if TYPE_CHECKING:  # the global tier's exchange, and the job tier's runs, load only when that tier is in use
    from okfgit.flows import exchange, runs

DEFAULT_WAIT_S = 30.0


@dataclass(slots=True)
class SyncReport:
    dry_run: bool = False
    skipped: str | None = None  # why nothing ran (lock held)
    capture: capture.Report | None = None
    capture_error: str | None = None
    capture_deferred: str | None = None
    capture_held: bool = False  # this sync held the capture for one outside a git hook (said once)
    in_progress: str | None = None  # "merge", "rebase"...: what git is in the middle of in the project repo
    doctor_errors: dict[str, int] = field(default_factory=dict)  # tier label -> errors, for tiers that changed
    projection: projection.Report | None = None
    exchange: exchange.Report | None = None
    run_edits: runs.WorkingEdits | None = None  # the active run's uncommitted edits: committed, or waiting
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return (bool(self.capture_error) or bool(self.projection and self.projection.failed)
                or bool(self.exchange and self.exchange.error))

    @property
    def exit_code(self) -> int:
        return EXIT_INTEGRITY if self.failed else EXIT_OK

    def to_json(self) -> dict[str, object]:
        """The report as ``sync --json`` prints it."""
        return {
            "dry_run": self.dry_run,
            "summary": summary_line(self),
            "skipped": self.skipped,
            "capture": self.capture.to_json() if self.capture is not None else None,
            "capture_error": self.capture_error,
            "capture_deferred": self.capture_deferred,
            "capture_held": self.capture_held,
            "in_progress": self.in_progress,
            "doctor_errors": self.doctor_errors,
            "projection": self.projection.to_json() if self.projection is not None else None,
            "exchange": self.exchange.parts() if self.exchange is not None else [],
            "run_edits": self.run_edits.to_json() if self.run_edits is not None else None,
            "failed": self.failed,
            "warnings": self.warnings,
        }


def sync(ctx: Context, ws: Workspace, *, wait_s: float = DEFAULT_WAIT_S, run_arg: str | None = None,
         fetch: bool = False, listed: bool = False, hook: str | None = None,
         hook_args: Sequence[str] = ()) -> SyncReport:
    """Capture, then project, under the repository's sync lock; with a global remote, fetch
    and integrate first and push last (``fetch`` forces the exchange now). ``listed``: the
    whole report will be printed (``--json``), so the capture's unchanged files are listed
    before projection changes the record they come from. ``hook`` (with git's ``hook_args``):
    the git hook that runs it. A git hook never runs in the middle of a merge (post-rewrite
    runs while git finishes a rebase: not one to report); post-checkout captures what agents
    wrote onto the branch that was checked out while they wrote it."""
    if ws.project_repo is None:
        raise UsageError("sync needs a project repository: run it inside one or pass --repo")
    tiers = {tier.name: tier for tier in ws.in_scope("all")}  # job (when a run is active), project, global
    project, job = tiers["project"], tiers.get("job")
    repo = project.open()
    report = SyncReport()
    held = lock.acquire(paths.lock(repo.common_dir), wait_s, now=ctx.clock)
    if held is None:
        holder = lock.holder(paths.lock(repo.common_dir))
        report.skipped = "another okfgit sync is running" + (f" ({holder.describe()})" if holder else "")
        return report
    with held:
        stamp = stamps.SyncStamp(repo, held, hook=hook is not None)
        stores = Stores()  # every repository's store, read once, saved once at the end
        # The ownership record, once: capture records into it, projection replaces it.
        owned = state.load(repo.common_dir, stores.of(repo.common_dir))
        was = dict(owned.inputs)  # the trees the last projection read: a tier whose tree differs changed
        if tiers["global"].exists():
            from okfgit.flows import exchange

            report.exchange = exchange.begin(ctx, ws, stores, force=fetch, wait_s=wait_s)
        _capture(ctx, ws, owned, stores, stamp, report, project=project, repo=repo, hook=hook, hook_args=hook_args)
        if listed and report.capture is not None:
            report.capture.unchanged_seen, report.capture.unchanged_all = report.capture.unchanged, None
        _commit_run_edits(ctx, ws, report)
        report.projection = projected = projection.project(ctx, ws, owned, stores, run_arg=run_arg)
        owned = projected.owned or owned
        report.doctor_errors = _doctor_errors(ctx, ws, tiers.values(), stores, was, owned.inputs)
        if report.exchange is not None:
            exchange.end(ctx, ws, stores, report.exchange, wait_s=wait_s)
        report.warnings += [*projected.warnings, *(report.exchange.warnings if report.exchange else [])]
        projection.save(projected, stores)  # the one save of the stores, then projection's stamp
        stamp.finish(projected.memory_dir or (report.capture.memory_dir if report.capture else None),
                     (outcome.path for outcome in projected.outcomes),
                     done=not (report.failed or report.capture_deferred), wrote_as=owned.wrote_as,
                     clean=_took_all(report.capture), job=job.root if job is not None and job.exists() else None)
    return report


def _capture(ctx: Context, ws: Workspace, owned: state.State, stores: Stores, stamp: stamps.SyncStamp,
             report: SyncReport, *, project: Tier, repo: Repo, hook: str | None, hook_args: Sequence[str]) -> None:
    """Capture what the agents wrote, into ``report``. Deferred while git is in the middle of
    something in the project repository (never the case in a git hook) or the branch will
    not take it; held for a sync outside a git hook when one was held before or a branch
    switch cannot be placed (``_switched_from``), which this sync then holds."""
    busy = None if hook else in_progress(project)
    try:
        if busy is not None:  # nothing is committed until the person has finished it
            report.in_progress = busy.kind
            raise RepoStateError(busy.message())
        branch, proven = _switched_from(repo, hook, hook_args)
        if not stamp.holding and not proven and not capture.plan_capture(ctx, ws, owned, stores,
                                                                         unchanged=stamp.unchanged).plan.empty:
            stamp.holding = report.capture_held = True
        if not stamp.holding:
            report.capture = capture.capture(ctx, ws, owned, stores, unchanged=stamp.unchanged, branch=branch)
            report.warnings.extend(report.capture.warnings)
    except (RepoStateError, BusyError) as exc:  # mid-rebase, edits in the way, a branch that kept moving
        report.capture_deferred = str(exc)
    except OkfError as exc:
        report.capture_error = str(exc)


def _took_all(cap: capture.Report | None) -> bool:
    """The capture took every memory file it could: none unreadable, waiting or conflicting."""
    return cap is not None and cap.enabled and not (cap.skipped or cap.held or cap.conflicts)


def _commit_run_edits(ctx: Context, ws: Workspace, report: SyncReport) -> None:
    """Commit what an agent edited in the active run's working tree (STATE.md, notes) before
    projecting; name what waits for a person. A busy run repository defers it, like capture."""
    if not ws.run:
        return
    from okfgit.flows import runs

    try:
        report.run_edits = runs.commit_edits(ctx, ws)
    except RepoStateError as exc:
        report.warnings.append(f"run edits deferred: {exc}")
        return
    except OkfError as exc:
        report.warnings.append(f"run edits not committed: {exc}")
        return
    edits = report.run_edits
    if edits is not None:
        report.warnings += [f"{edits.tier.label}:{e.path} ({e.change}) waits for a person: {e.why}"
                            for e in edits.waiting]


def preview(ctx: Context, ws: Workspace, *, run_arg: str | None = None) -> SyncReport:
    """What ``sync`` would do now, writing nothing but okfgit's caches: the capture commits it
    would make and projection's dry run, with their diffs. No lock is taken and the global
    tier's remote is not contacted. Projection is shown from the tiers as they are at HEAD:
    files capture would take are rewritten as their concepts by the sync itself."""
    if ws.project_repo is None:
        raise UsageError("sync needs a project repository: run it inside one or pass --repo")
    repo = ws.tier("project").open()
    report = SyncReport(dry_run=True)
    stores = Stores()
    owned = state.load(repo.common_dir, stores.of(repo.common_dir))
    try:
        report.capture = capture.capture(ctx, ws, owned, stores, dry_run=True)
        report.warnings.extend(report.capture.warnings)
    except OkfError as exc:
        report.capture_error = str(exc)
    report.projection = projection.project(ctx, ws, owned, stores, dry_run=True, run_arg=run_arg)
    report.warnings.extend(report.projection.warnings)
    stores.save()  # the facts it read
    return report


def _switched_from(repo: Repo, hook: str | None, hook_args: Sequence[str]) -> tuple[str | None, bool]:
    """After a branch switch (post-checkout), the branch checked out before it, where what
    agents wrote until now was written: (that branch, True) when HEAD's reflog proves it
    (``Repo.previous_branch``), (None, True) when it is the branch checked out now, (None,
    False) when nothing proves which branch it was (no reflog, a detached previous HEAD): the
    capture is then held, never guessed. (None, True) for any other run."""
    if hook != "post-checkout" or len(hook_args) < 2:
        return None, True
    previous = repo.previous_branch(hook_args[0])
    if previous is None:
        return None, False
    return (previous if f"refs/heads/{previous}" != repo.head_branch() else None), True


def _doctor_errors(ctx: Context, ws: Workspace, tiers: Iterable[Tier], stores: Stores,
                   was: Mapping[str, state.TierInput], now: Mapping[str, state.TierInput]) -> dict[str, int]:
    """The errors ``doctor`` finds in each tier whose knowledge base changed since the last
    projection read it (its tree differs), from the facts in the run's stores: said once per
    change, never again while the tree stays (nor on the no-op path, which does not get here)."""
    changed = [t for t in tiers if t.exists() and t.label in now
               and (t.label not in was or was[t.label].tree != now[t.label].tree)]
    if not changed:
        return {}
    try:
        errors = checks.errors_at_head(ws, changed, lifecycle.instant_of(ctx.now()), stores)
    except OkfError:
        return {}  # doctor itself says what it cannot read; a sync does not fail for it
    return {label: len(found) for label, found in errors.items() if found}


def summary_line(report: SyncReport) -> str:
    """A one-line summary (git hooks print at most one line)."""
    if report.skipped:
        return f"okfgit sync skipped: {report.skipped}"
    parts: list[str] = []
    cap = report.capture
    if report.capture_error:
        parts.append(f"capture failed: {report.capture_error}")
    elif report.in_progress:
        parts.append(f"{report.in_progress} in progress: finish it, then okfgit sync")
    elif report.capture_deferred:
        parts.append("capture deferred (repository busy)")
    elif report.capture_held:
        parts.append("capture held: nothing shows the branch the memories were written on (`okfgit sync` "
                     "commits them on the branch checked out then)")
    elif cap is not None and not cap.enabled:
        parts.append("capture off")
    elif cap is not None and cap.captured:
        parts.append(f"{'would capture' if report.dry_run else 'captured'} {len(cap.captured)}")
        merges = len(cap.conflicts) - len(cap.proposals)
        if merges:
            parts.append(f"{merges} need a merge")
        if cap.proposals:
            parts.append(f"{plural(len(cap.proposals), 'agent proposal')} for a person to accept or drop")
    if cap is not None and cap.skipped:
        parts.append(f"{plural(len(cap.skipped), 'memory file')} unreadable")
    if cap is not None and cap.held:
        parts.append(f"{plural(len(cap.held), 'memory file')} waiting for a tier")
    if report.run_edits is not None and report.run_edits.committable:
        parts.append(f"committed {plural(len(report.run_edits.committable), 'edited run file')}")
    if report.run_edits is not None and report.run_edits.waiting:
        parts.append(f"{plural(len(report.run_edits.waiting), 'run file')} waiting for a person")
    if report.exchange is not None:
        parts.extend(report.exchange.parts())
    proj = report.projection
    if proj is not None:
        written = proj.count("written") + proj.count("removed")
        if written:
            parts.append(f"{'would project' if report.dry_run else 'projected'} {plural(written, 'file')}")
        if proj.failed:
            parts.append(f"{plural(proj.count('failed'), 'target')} failed")
    if report.doctor_errors:
        where = ", ".join(f"{plural(n, 'error')} in {label}" for label, n in sorted(report.doctor_errors.items()))
        parts.append(f"doctor: {where} (`okfgit doctor` lists them)")
    head = "okfgit sync (dry run): " if report.dry_run else "okfgit sync: "
    return head + (", ".join(parts) if parts else "up to date")
