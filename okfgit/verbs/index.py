"""The ``index`` verb: regenerate every ``index.md`` of the selected tiers from HEAD.

One commit per tier whose indexes are out of date (operation ``index``), built through
plan/apply like every other write; a tier already up to date gets no commit. ``check``
plans the same work and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from okfgit.format import index_md as index
from okfgit.flows.concepts import actor
from okfgit.context import Context
from okfgit.errors import EXIT_OK, EXIT_USAGE, OkfError, RepoStateError
from okfgit.git.objects import Entry
from okfgit.knowledge import catalog
from okfgit.knowledge.snapshot import Snapshot, snapshot
from okfgit.plan import Applied, Plan, TierCommit, apply, in_progress, retry_moved, writing
from okfgit.knowledge import checks
from okfgit.knowledge.tiers import Tier, Workspace


@dataclass(slots=True)
class TierIndex:
    """One tier's index work: which index files are stale, and the commit made (if any)."""

    tier: Tier
    base: str | None
    stale: list[str]
    commit: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"tier": self.tier.label, "base": self.base, "stale": self.stale, "commit": self.commit}


@dataclass(slots=True)
class IndexRun:
    tiers: list[TierIndex]
    skipped: list[str]
    plan: Plan = field(default_factory=Plan)
    check: bool = False  # asked only whether the indexes are current

    @property
    def stale(self) -> int:
        return sum(len(t.stale) for t in self.tiers)

    @property
    def exit_code(self) -> int:
        """2 when a check found a stale index."""
        return EXIT_USAGE if self.check and self.stale else EXIT_OK

    def to_json(self) -> dict[str, object]:
        return {"tiers": [t.to_json() for t in self.tiers], "skipped": self.skipped, "stale": self.stale}


class Summarised(NamedTuple):
    """One ``index.md`` blob's ``index_md.Summary``, kept in the tier's store (``catalog``)."""

    oid: str
    summary: index.Summary


def _summarised(_label: str, path: str, entry: Entry, data: bytes) -> Summarised:
    return Summarised(entry.oid, index.summarize(data, path))


def _summarised_from_json(value: list[Any]) -> Summarised:
    return Summarised(value[0], index.Summary(*value[1]))


def _is_index(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == "index.md"


SUMMARIES: catalog.Kind[Summarised] = catalog.Kind("indexes", _summarised, _summarised_from_json, _is_index)


def summaries(snap: Snapshot) -> dict[str, Summarised]:
    """The summary of every index file of ``snap`` (a commit), from the tier's cache; none
    when it cannot be read (regeneration then reads every index)."""
    if snap.commit is None or not snap.tier.exists():
        return {}
    try:
        built = checks.cached_catalog(SUMMARIES, snap)
    except (OkfError, OSError):
        return {}
    return dict(built.facts) if built is not None else {}


def plan_index(ctx: Context, ws: Workspace, scope: str, *, check: bool = False) -> IndexRun:
    """Plan one commit per selected tier whose index files differ from what the tree implies
    (``check``: the caller only asks whether they are current)."""
    tiers, skipped = ws.present(scope)
    run = IndexRun([], skipped, check=check)
    for tier in tiers:
        busy = in_progress(tier)
        if busy is not None:  # HEAD does not hold the merge's result: nothing to judge or write yet
            raise RepoStateError(f"{busy.message('okfgit index')} (nothing was changed)")
        snap = snapshot(tier)
        if snap.commit is None or not snap.entries:
            run.skipped.append(f"{tier.label} tier skipped: no knowledge base at HEAD in {tier.root}")
            continue
        facts = checks.checked_facts(snap)  # what each concept's entry says, cached by blob OID
        known = summaries(snap)

        def item(path: str, facts: dict[str, checks.Checked] = facts) -> index.Item | None:
            fact = facts.get(path)
            return index.Item(*fact.item) if fact is not None else None

        def summary(path: str, known: dict[str, Summarised] = known,
                    entries: Mapping[str, Entry] = snap.entries) -> index.Summary | None:
            found = known.get(path)
            return found.summary if found is not None and found.oid == entries[path].oid else None

        changes: dict[str, bytes | None] = dict(index.regenerate(snap, items=item, summaries=summary))
        changes.update(index.emptied(snap))  # a folder with no concept left: its index goes or is emptied
        stale = sorted(changes)
        run.tiers.append(TierIndex(tier, snap.commit, stale))
        if not changes:
            continue
        listed = "\n".join(f"- {path}" + (" (removed: its folder has no concept left)" if changes[path] is None else "")
                           for path in stale)
        run.plan.commits.append(TierCommit(
            tier, "index", f"okf: regenerate {len(stale)} index file{'s' if len(stale) != 1 else ''}",
            changes, body=f"Regenerated from the tree at {snap.commit[:12]}:\n\n{listed}",
            old={p: (snap.blob(p) if p in snap.entries else None) for p in changes}, base=snap.commit,
            actor=actor(ctx, tier),
        ))
    return run


def regenerate_indexes(ctx: Context, ws: Workspace, scope: str) -> IndexRun:
    """Regenerate and commit; returns what was done (``commit`` set on each tier written)."""
    def regenerated() -> tuple[IndexRun, Applied]:
        with writing(ctx, *ws.present(scope)[0]):
            run = plan_index(ctx, ws, scope)
            return run, apply(ctx, run.plan)

    run, done = retry_moved(regenerated)
    by_tier = {commit.tier.label: oid for commit, oid in done.commits}
    for item in run.tiers:
        item.commit = by_tier.get(item.tier.label)
    return run
