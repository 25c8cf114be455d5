"""The global tier's exchange with its git remote, inside ``sync``.

Order (spec/okf-global-remote.md): fetch → integrate → capture → project → push. ``begin``
fetches and integrates before sync captures, so captures land on top of what other
machines pushed; ``end`` pushes after projection, so everything this sync committed goes
out at once. Both run under the global tier's own sync lock. Integration is by concept
(``knowledge.merge``): a fast-forward when possible, else one merge commit made through
plan/apply like every other okfgit commit. Nothing is ever force-pushed.

Network is bounded: a fetch happens at most once per ``okf.fetchInterval`` (default 10
minutes) unless forced (``sync --fetch``), every call has a deadline
(``okf.fetchTimeout``, default 10 s), and after a failure nothing touches the network again
until the interval has passed; what is pending is pushed on the next successful contact.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from okfgit.context import Context
from okfgit.errors import OkfError, RepoStateError, UsageError
from okfgit.git.repository import Repo
from okfgit.knowledge.tiers import Tier, Workspace
from okfgit.local import exchange as exchange_record
from okfgit.local.store import Store, Stores
from okfgit.local import lock, paths
from okfgit.plan import Plan, TierCommit, apply
from okfgit.format.words import plural

FETCH_INTERVAL_S = 600.0
UNREACHABLE = "global remote unreachable, will retry"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True, slots=True)
class Target:
    """Where the global tier exchanges: a remote and the branch pair."""

    name: str
    url: str
    branch: str  # the local branch's short name
    remote_branch: str

    @property
    def tracking(self) -> str:
        return f"refs/remotes/{self.name}/{self.remote_branch}"

    @property
    def shown(self) -> str:
        from okfgit import transport

        return transport.public_url(self.url)


@dataclass(slots=True)
class Report:
    """What one exchange did (``sync`` prints it)."""

    remote: str
    fetched: bool = False
    integrated: str | None = None  # "fast-forward" or "merge"
    merge_commit: str | None = None
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    pushed: bool = False
    pending: int = 0
    unreachable: str | None = None
    deferred: str | None = None
    busy: bool = False
    error: str | None = None
    withheld: int = 0  # user memories that kept the push back (``shares_user_memories``)
    warnings: list[str] = field(default_factory=list)

    @property
    def stopped(self) -> bool:
        return bool(self.unreachable or self.deferred or self.busy or self.error)

    def parts(self) -> list[str]:
        """The pieces of sync's one-line summary."""
        out: list[str] = []
        if self.integrated == "fast-forward":
            out.append("global tier updated from its remote")
        elif self.integrated == "merge":
            out.append("merged the global remote" + (f" ({len(self.conflicts)} need a merge)"
                                                     if self.conflicts else ""))
        if self.pushed:
            out.append("pushed the global tier")
        if self.withheld:
            stay = "stays" if self.withheld == 1 else "stay"
            out.append(f"not pushed: {plural(self.withheld, 'user memory', 'user memories')} {stay} on this machine")
        if self.unreachable:
            out.append(UNREACHABLE)
        if self.deferred:
            out.append("global exchange deferred (global tier busy)")
        if self.error:
            out.append(f"global exchange failed: {self.error}")
        return out


def target(repo: Repo) -> Target | None:
    """The remote the global tier exchanges with: the branch's upstream remote, else
    ``origin``, else the only remote; None without one (or on a detached HEAD)."""
    head = repo.head_branch()
    if head is None or not head.startswith("refs/heads/"):
        return None
    short = head[len("refs/heads/"):]
    name = repo.config_get(f"branch.{short}.remote")
    if not name or name == ".":
        names = repo.remote_names()
        name = "origin" if "origin" in names else (names[0] if len(names) == 1 else None)
    if not name:
        return None
    url = repo.config_get(f"remote.{name}.url")
    if not url:
        return None
    merge_ref = repo.config_get(f"branch.{short}.merge") or head
    return Target(name, url, short, merge_ref.removeprefix("refs/heads/"))


def interval_s(repo: Repo) -> float:
    """``okf.fetchInterval``: seconds, or with a unit (``30s``, ``10m``, ``1h``, ``1d``); 0 = every sync."""
    return _duration(repo.config_get("okf.fetchInterval"), FETCH_INTERVAL_S)


def timeout_s(repo: Repo) -> float:
    """``okf.fetchTimeout``: the longest okfgit waits on one network call (default 10 s)."""
    from okfgit import transport

    return max(1.0, _duration(repo.config_get("okf.fetchTimeout"), transport.DEFAULT_TIMEOUT_S))


def _duration(value: str | None, default: float) -> float:
    match = _DURATION.match(value or "")
    return float(match.group(1)) * _UNITS[match.group(2)] if match else default


def _env(repo: Repo, ctx: Context, timeout: float) -> dict[str, str]:
    from okfgit import transport

    return transport.environment(ctx.environ, timeout, own_ssh_command=bool(repo.config_get("core.sshCommand")))


def _commit_of(repo: Repo, ref: str) -> str | None:
    try:
        return repo.resolve(ref)
    except UsageError:
        return None


def has_history(repo: Repo, tg: Target) -> bool:
    """The remote branch exists (as of the last fetch)."""
    return _commit_of(repo, tg.tracking) is not None


def counts(repo: Repo, tg: Target) -> tuple[int, int]:
    """(ahead, behind): commits here the remote lacks, and the reverse, as of the last fetch."""
    head = repo.head_commit()
    theirs = _commit_of(repo, tg.tracking)
    ahead = sum(1 for _ in repo.log(theirs, head)) if head else 0
    behind = sum(1 for _ in repo.log(head, theirs)) if theirs else 0
    return ahead, behind


# -- inside sync -----------------------------------------------------------------------------


def begin(ctx: Context, ws: Workspace, stores: Stores, *, force: bool, wait_s: float) -> Report | None:
    """Fetch and integrate when due (or ``force``); None when the global tier has no remote.
    The exchange record is staged in the global tier's store, which the run saves."""
    tier = ws.tier("global")
    if not tier.exists():
        return None
    try:
        reader = tier.open()
    except OkfError:
        return None  # a damaged global tier: projection says so; there is nothing to exchange
    tg = target(reader)
    if tg is None:
        if reader.head_branch() is not None:  # removed with plain git: the record must not keep making syncs look
            exchange_record.remove(stores.of(reader.common_dir))
        return None  # (a detached HEAD, e.g. a bisect in the tier, exchanges again once back on a branch)
    repo = tier.open()  # libgit2 for a tier that exchanges with a remote
    report = Report(tg.shown)
    store = stores.of(repo.common_dir)
    rec = exchange_record.load(store)
    now = ctx.clock()
    due = force or rec.remote != tg.shown or rec.next_due is None or now >= rec.next_due
    if not due:
        return report
    held = lock.acquire(paths.lock(repo.common_dir), wait_s, now=ctx.clock)
    if held is None:
        report.busy = True  # another sync is exchanging right now
        return report
    with held:
        try:
            fetch_and_integrate(ctx, tier, repo, tg, report)
        except OkfError as exc:
            report.error = str(exc)
        _save(store, rec, tg, report, ctx.clock(), fetch=True, interval=interval_s(repo))
    return report


def end(ctx: Context, ws: Workspace, stores: Stores, report: Report | None, *, wait_s: float) -> None:
    """Push what the global tier has that its remote lacks (never forced); a push rejected
    because the remote moved gets one fetch → integrate → push retry."""
    if report is None or report.stopped:
        return
    tier = ws.tier("global")
    tg = target(tier.open())
    if tg is None:
        return
    repo = tier.open()
    store = stores.of(repo.common_dir)
    rec = exchange_record.load(store)
    if not report.fetched and rec.last_error:
        return  # the last contact failed: stay off the network until the interval has passed
    if counts(repo, tg)[0] == 0:
        return
    held = lock.acquire(paths.lock(repo.common_dir), wait_s, now=ctx.clock)
    if held is None:
        report.busy = True
        return
    with held:
        try:
            push(ctx, tier, repo, tg, report, stores=stores)
        except OkfError as exc:
            report.error = str(exc)
        _save(store, rec, tg, report, ctx.clock(), fetch=False, interval=interval_s(repo))


# -- the steps (also used by `init --remote`) -------------------------------------------------


def fetch_and_integrate(ctx: Context, tier: Tier, repo: Repo, tg: Target, report: Report,
                        timeout: float | None = None) -> bool:
    """Fetch, then integrate; False (with ``report`` saying why) when either could not happen."""
    from okfgit import transport

    out = transport.fetch(repo.workdir, tg.name, _env(repo, ctx, timeout or timeout_s(repo)),
                          timeout or timeout_s(repo))
    if not out.ok:
        report.unreachable = out.message
        report.warnings.append(f"global remote {tg.shown}: {out.message}")
        return False
    report.fetched = True
    try:
        integrate(ctx, tier, repo, tg, report)
    except RepoStateError as exc:
        report.deferred = str(exc)
        report.warnings.append(f"global exchange deferred: {exc}")
        return False
    return True


def integrate(ctx: Context, tier: Tier, repo: Repo, tg: Target, report: Report) -> None:
    """Bring the fetched remote branch into the local one: fast-forward, or merge by concept."""
    from okfgit.flows.concepts import actor
    from okfgit.knowledge import merge
    from okfgit.knowledge.snapshot import snapshot

    theirs = _commit_of(repo, tg.tracking)
    ours = repo.head_commit()
    if theirs is None or theirs == ours:
        return  # an empty remote, or nothing new
    base = repo.merge_base(ours, theirs) if ours else None
    if base == theirs:
        return  # the remote has nothing this side lacks
    if ours is None or base == ours:
        repo.fast_forward(ctx, theirs)
        report.integrated = "fast-forward"
        return
    here = snapshot(tier)
    merged = merge.merge(repo.tree_entries(base, tier.prefix) if base else {}, here, snapshot(tier, theirs),
                         source=f"{tg.shown} at {theirs[:12]}")
    lines = [f"- conflict: {master} -> {sibling}" for master, sibling in merged.conflicts]
    lines += [f"- kept: {path} (deleted on one side, changed on the other)" for path in merged.kept]
    lines += [f"- merged: {path} (each side changed other frontmatter keys)" for path in merged.merged]
    commit = TierCommit(
        tier, "merge", f"okf: merge the {tier.label} tier from {tg.shown}", merged.changes,
        trailers=(("Okf-Source", tg.shown),), body="\n".join(lines), merge_parent=theirs,
        actor=actor(ctx, tier),
        old={p: (here.blob(p) if p in here.entries else None) for p in merged.changes},
    )
    done = apply(ctx, Plan(commits=[commit]))
    report.integrated = "merge"
    report.merge_commit = done.commits[-1][1]
    report.conflicts.extend(merged.conflicts)
    report.kept.extend(merged.kept)
    for master, sibling in merged.conflicts:
        kept = (f"the remote's version is {merged.guarded[master]}, so it stays the concept; added this machine's"
                if master in merged.guarded else "kept this machine's version and added the remote's")
        report.warnings.append(f"{master}: the concept changed both here and on the global remote; {kept} to "
                               f"{tier.label}:{sibling} (needs a person to merge)")
    for path in merged.kept:
        report.warnings.append(f"{path}: deleted on one side and changed on the other; kept the changed version")


SHARE_USER_MEMORIES = "okf.pushUserMemories"  # git config in the global tier: "true" opts in


def shares_user_memories(repo: Repo) -> bool:
    """The person opted in to pushing facts about themselves (Claude Code's ``user`` memories)
    to the global remote: ``git config okf.pushUserMemories true`` in the global tier."""
    return (repo.config_get(SHARE_USER_MEMORIES) or "").strip().lower() in ("true", "yes", "on", "1")


def user_memories(tier: Tier, stores: Stores | None = None) -> list[str]:
    """The tier's concepts of type ``user`` at HEAD: facts about the person, captured from
    Claude Code's ``user`` memories (``capture.Routes``); ``stores``: the run's, if any."""
    from okfgit.knowledge.cards import TierCards

    facts = TierCards(tier, stores=stores).catalog.facts
    return sorted(path for path, card in facts.items() if card.type.strip().casefold() == USER_TYPE)


USER_TYPE = "user"


def push(ctx: Context, tier: Tier, repo: Repo, tg: Target, report: Report, timeout: float | None = None,
         stores: Stores | None = None) -> None:
    """Push the tier's branch, unless it holds user memories the person did not opt in to
    share: what the remote receives is the whole branch, so then nothing is pushed. ``stores``:
    the run's (sync's), where the tier's cards are read."""
    from okfgit import transport

    if not shares_user_memories(repo):
        mine = user_memories(tier, stores)
        if mine:
            report.withheld = len(mine)
            report.warnings.append(
                f"did not push the global tier to {tg.shown}: it holds "
                f"{plural(len(mine), 'user memory', 'user memories')} (facts about you, "
                f"such as {mine[0]}), which stay on this machine; move them out of the global tier, or share them with "
                f"`git -C {tier.repo_path} config {SHARE_USER_MEMORIES} true`")
            report.pending = counts(repo, tg)[0]
            return

    timeout = timeout or timeout_s(repo)
    env = _env(repo, ctx, timeout)
    for attempt in (1, 2):
        out = transport.push(repo.workdir, tg.name, f"refs/heads/{tg.branch}", f"refs/heads/{tg.remote_branch}",
                             env, timeout)
        if out.ok:
            head = repo.head_commit()
            if head:
                repo.set_ref(tg.tracking, head, "okfgit: pushed")
            report.pushed = True
            report.pending = 0
            return
        if out.rejected and attempt == 1:
            if not fetch_and_integrate(ctx, tier, repo, tg, report, timeout):
                break
            continue
        if out.rejected:
            report.warnings.append("the global remote moved again while pushing; pushing on the next sync")
        else:
            report.unreachable = out.message
            report.warnings.append(f"global remote {tg.shown}: {out.message}")
        break
    report.pending = counts(repo, tg)[0]


def forget(repo: Repo) -> None:
    """Remove the exchange record (the tier has no remote any more)."""
    store = Store(repo.common_dir)
    exchange_record.remove(store)
    store.save()


def save_success(repo: Repo, tg: Target, now: float) -> None:
    """Record a successful exchange made outside sync (``init --remote``)."""
    store = Store(repo.common_dir)
    _save(store, exchange_record.load(store), tg, Report(tg.shown, fetched=True), now, fetch=True,
          interval=interval_s(repo))
    store.save()


def _save(store: Store, rec: exchange_record.Record, tg: Target, report: Report, now: float, *, fetch: bool,
          interval: float) -> None:
    rec.remote = tg.shown
    failed = report.unreachable is not None
    if fetch or failed:
        rec.last_attempt = now
        rec.next_due = now + interval
    if failed:
        rec.last_error = report.unreachable
    elif report.fetched or report.pushed:
        rec.last_success = now
        rec.last_error = None
    exchange_record.save(store, rec)


def describe_time(when: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)) if when else "never"


@dataclass(slots=True)
class RemoteInfo:
    """What ``remote show`` and ``status`` say about the global tier's remote."""

    tier_root: str
    name: str | None = None
    url: str | None = None
    branch: str | None = None
    remote_branch: str | None = None
    ahead: int = 0
    behind: int = 0
    last_success: float | None = None
    last_attempt: float | None = None
    last_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "tier": self.tier_root, "name": self.name, "url": self.url, "branch": self.branch,
            "remote_branch": self.remote_branch, "ahead": self.ahead, "behind": self.behind,
            "last_exchange": describe_time(self.last_success) if self.last_success else None,
            "last_attempt": describe_time(self.last_attempt) if self.last_attempt else None,
            "last_error": self.last_error,
        }

    def render(self) -> list[str]:
        if self.url is None:
            return [f"global remote: none (set one with `okfgit remote set URL`; tier at {self.tier_root})"]
        lines = [f"global remote: {self.url} ({self.name}, {self.branch} -> {self.remote_branch})",
                 f"  {self.ahead} ahead, {self.behind} behind (as of the last fetch); "
                 f"last exchange: {describe_time(self.last_success)}"]
        if self.last_error:
            lines.append(f"  last attempt failed at {describe_time(self.last_attempt)}: {self.last_error}")
        return lines


def show(ws: Workspace) -> RemoteInfo:
    """What is known of the global tier's remote, without contacting it."""
    tier = ws.tier("global")
    info = RemoteInfo(str(tier.root))
    if not tier.exists():
        return info
    tg = target(tier.open())
    if tg is None:
        return info  # no remote: libgit2 is not loaded
    repo = tier.open()
    rec = exchange_record.load(Store(repo.common_dir))
    info.name, info.url, info.branch, info.remote_branch = tg.name, tg.shown, tg.branch, tg.remote_branch
    info.ahead, info.behind = counts(repo, tg)
    if rec.remote == tg.shown:  # a record about another remote (before `remote set`) says nothing here
        info.last_success, info.last_attempt, info.last_error = rec.last_success, rec.last_attempt, rec.last_error
    return info
