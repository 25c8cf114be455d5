"""``init``: bootstrap a tier (its repository, its root ``index.md``, a first commit)."""

from __future__ import annotations


from okfgit.records import record
from okfgit.context import Context
from okfgit.format import index_md
from okfgit.knowledge.snapshot import snapshot
from okfgit.knowledge.tiers import RUNSTATE, Tier, Workspace
from okfgit.plan import FileWrite, Plan, TierCommit, apply, ensure_repo

TIER_INTROS = {
    "global": "Knowledge that holds for every project on this machine.",
    "project": "Knowledge about this project, reviewed and versioned with its code.",
    "job": "Working knowledge of one run: its state, its log and its notes.",
}


@record
class Initialised:
    """What ``init`` planned and (once applied) did."""

    tier: Tier
    plan: Plan
    commit: str | None = None

    @property
    def message(self) -> str:
        if self.commit is None:
            return f"the {self.tier.label} tier is already initialised at {self.tier.root}"
        return f"initialised the {self.tier.label} tier at {self.tier.root}"

    def to_json(self) -> dict[str, object]:
        return {"tier": self.tier.label, "root": str(self.tier.root), "commit": self.commit, "message": self.message}


def root_index(tier: Tier) -> bytes:
    """A tier's first ``index.md``: the root frontmatter, a heading and what the tier is for."""
    title = {"global": "Global knowledge", "project": "Project knowledge", "job": f"Run {tier.run} knowledge"}[tier.name]
    return f'{index_md.ROOT_FRONTMATTER}# {title}\n\n{TIER_INTROS[tier.name]}\n'.encode()


def init_plan(ws: Workspace, scope: str) -> Initialised:
    """Plan the tier's first commit (none when it has a root index already), and for the
    job tier the ``info/exclude`` line that keeps runs out of the project repository."""
    tier = ws.tier(scope)
    snap = snapshot(tier)
    plan = Plan()
    if tier.name == "job":
        plan.writes.extend(runstate_exclusion(ws))
    if "index.md" not in snap.entries:
        changes: dict[str, bytes | None] = {"index.md": root_index(tier)}
        if snap.commit is not None:
            changes.update(index_md.regenerate(snap, changes))
        plan.commits.append(TierCommit(tier, "init", f"okf: initialise the {tier.label} tier", changes))
    return Initialised(tier, plan)


def init_tier(ctx: Context, ws: Workspace, scope: str) -> Initialised:
    """Bootstrap a tier: its repository (global, job), its root ``index.md``, a first commit."""
    planned = init_plan(ws, scope)
    done = apply(ctx, planned.plan).raise_failed()
    ensure_repo(ctx, planned.tier)
    planned.commit = done.commits[-1][1] if done.commits else None
    return planned


def runstate_exclusion(ws: Workspace) -> list[FileWrite]:
    """The write that adds ``/runstate/`` to the project's ``.git/info/exclude`` (a file
    a person may have written in: fsynced), or nothing when the line is there already."""
    if ws.project_repo is None:
        return []
    repo = ws.tier("project").open()
    exclude = repo.common_dir / "info" / "exclude"
    line = f"/{RUNSTATE}/"
    current = exclude.read_bytes() if exclude.exists() else b""
    if line.encode() in current.splitlines():
        return []
    sep = b"" if not current or current.endswith(b"\n") else b"\n"
    return [FileWrite(exclude, current + sep + line.encode() + b"\n", "keep runs out of the project repository",
                      fsync=True, old=current if exclude.exists() else None)]
