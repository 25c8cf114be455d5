"""``okfgit proposal accept|drop SIBLING``: a person decides what an agent proposed.

Capture never changes a protected concept in place (``lifecycle.protected_by``: verified by a
person, or a Decision); the agent's version is committed beside it as a needs-merge sibling
(spec/okf-capture-sync.md §4). These are the two acts that settle one, each one commit in the
sibling's tier, saying who acted (``Okf-Actor``):

- **drop**: the sibling goes; the concept stays as it is (the agent's words stay in history);
- **accept**: the agent's words replace the concept, keeping its path and ``okf_id``. A
  ``verified`` copied from the old version is replaced by the accepting person's (they read
  these words; the earlier verifier did not). A **Decision** is never rewritten: the agent's
  version becomes a new Decision beside it that ``supersedes`` it, and the old one gets
  ``status: deprecated`` and ``superseded_by`` (review's supersession rules, satisfied).

A protected concept's proposal is settled only by a person (a ``human:`` actor): an agent
running this in its shell is refused. A plain conflict sibling (an unprotected concept
changed on both sides) may be settled by anyone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from okfgit.context import Context
from okfgit.errors import UsageError
from okfgit.flows.concepts import actor
from okfgit.format import concept as okf
from okfgit.format import index_md as index
from okfgit.format import actors, lifecycle, names, needs_merge
from okfgit.format.trailers import path_field
from okfgit.knowledge import refs
from okfgit.knowledge.merged import merged_view
from okfgit.knowledge.snapshot import Snapshot, snapshot
from okfgit.knowledge.tiers import Tier, Workspace
from okfgit.plan import Plan, TierCommit, apply, writing

ACCEPT = "accept"
DROP = "drop"


@dataclass(slots=True)
class Settled:
    """What ``proposal accept|drop`` did (or, before ``apply``, will do)."""

    tier: Tier
    sibling: str  # the needs-merge sibling's KB path
    master: str  # the concept it proposes a version of
    outcome: str  # "dropped" | "accepted" | "superseded" | "deprecated" (an agent deleted its memory file)
    actor: str
    protected: str  # why the master is protected ("" when it is not)
    new_path: str | None = None  # the superseding Decision, for "superseded"
    home: str = ""  # the master's tier, when it is not the sibling's (only dropping settles that)
    plan: Plan = field(default_factory=Plan)
    commit: str | None = None

    def message(self) -> str:
        where = self.tier.label
        done = f" ({self.commit[:7]})" if self.commit else ""
        if self.outcome == "dropped":
            return f"dropped {where}:{self.sibling}; {self.home or where}:{self.master} stays as it was{done}"
        if self.outcome == "superseded":
            return (f"{where}:{self.new_path} now supersedes {where}:{self.master} (deprecated), with the agent's "
                    f"words, verified by {self.actor}{done}")
        if self.outcome == "deprecated":
            return f"{where}:{self.master} is deprecated, as the agent proposed, accepted by {self.actor}{done}"
        return f"{where}:{self.master} now holds the agent's version, accepted by {self.actor}{done}"

    def to_json(self) -> dict[str, Any]:
        return {"tier": self.tier.label, "sibling": self.sibling, "master": self.master, "outcome": self.outcome,
                "actor": self.actor, "protected": self.protected or None, "new_path": self.new_path,
                "commit": self.commit}


def settle(ctx: Context, ws: Workspace, ref: str, how: str, *, dry_run: bool = False) -> Settled:
    """Accept or drop the needs-merge sibling ``ref`` names (a REF: ``tier:path`` as status
    prints it, a citation, a slug) as one commit."""
    tier, _ = _sibling(ws, ref)
    if dry_run:
        return plan_settle(ctx, ws, ref, how)
    with writing(ctx, tier):
        done = plan_settle(ctx, ws, ref, how)
        done.commit = apply(ctx, done.plan).commits[-1][1]
    return done


def plan_settle(ctx: Context, ws: Workspace, ref: str, how: str) -> Settled:
    """Plan ``settle``: check the sibling and who acts, and build the commit."""
    tier, path = _sibling(ws, ref)
    snap = snapshot(tier)
    master = names.needs_merge_master(path)
    # Beside its concept, or (a new fact that nearly repeats a wider tier's concept stays in its
    # own tier) a version of a concept another tier has: then only dropping it is okfgit's to do.
    home = snap if master in snap.entries else next(
        (s for s in (snapshot(t) for t in ws.active() if t.label != tier.label) if master in s.entries), None)
    old = home.concept(master) if home is not None else snap.concept(path)
    by = actor(ctx, tier, ws.project_repo)
    guarded = lifecycle.protected_by(old.meta) if home is not None else ""
    if guarded:
        actors.person_only(by, f"settling an agent's proposal for {old.tier}:{master} ({guarded})")
    if how == ACCEPT and home is not snap:
        sibling = f"{tier.label}:{path}"
        if home is None:
            raise UsageError(f"{sibling} proposes a version of {master}, which no tier has: give its words a concept "
                             f"of their own, or `okfgit proposal drop {sibling}`")
        raise UsageError(f"{sibling} proposes a version of {home.tier.label}:{master}, a concept of another tier: "
                         + needs_merge.settled_elsewhere(sibling, f"{home.tier.label}:{master}"))
    done = Settled(tier, path, master, "dropped", by, guarded,
                   home=home.tier.label if home is not None and home is not snap else "")
    changes: dict[str, bytes | None] = {path: None}
    if how == ACCEPT:
        proposed = snap.blob(path)
        if lifecycle.lifecycle(old.meta).deprecated:
            raise UsageError(f"{tier.label}:{master} is deprecated: a superseded concept keeps its words; "
                             "write the change as a new concept")
        if proposed == okf.set_keys(snap.blob(master), master, {"status": lifecycle.DEPRECATED}):
            # An agent deleted its memory file of the concept: it proposes nothing but the deprecation.
            done.outcome = "deprecated"
            changes[master] = proposed
        elif lifecycle.is_decision(old.meta):
            done.outcome = "superseded"
            done.new_path = names.free_path(master, snap.entries)
            changes.update(_supersede(ctx, snap, master, old.meta, done.new_path, proposed, path, by))
        else:
            done.outcome = "accepted"
            changes[master] = _accepted(ctx, tier, master, old.meta, proposed, path, by, bool(guarded))
    elif how != DROP:
        raise UsageError(f"settle a proposal with {ACCEPT} or {DROP}, not {how!r}")
    changes.update(index.regenerate(snap, changes, index.affected_folders(list(changes))))
    okf_id = old.okf_id or ""
    verb = {"dropped": "drop", "accepted": "accept", "superseded": "accept", "deprecated": "accept"}[done.outcome]
    subject = f"okf: {verb} the agent's version of {master}"
    body = {"dropped": f"The agent's version ({path}) is dropped; {master} stays as it was.",
            "accepted": f"{master} takes the agent's version from {path}.",
            "superseded": f"{done.new_path} takes the agent's version from {path} and supersedes {master}.",
            "deprecated": f"{master} is deprecated, as the agent that deleted its memory file proposed in {path}."}
    trailers = [("Okf-Id", okf_id)] if okf_id else []
    trailers.append(("Okf-Proposal", f"{verb} {path_field(path)}"))
    done.plan.commits.append(TierCommit(
        tier, "proposal", subject, changes, tuple(trailers), body[done.outcome],
        old={p: (snap.blob(p) if p in snap.entries else None) for p in changes}, base=snap.commit, actor=by,
    ))
    return done


def _accepted(ctx: Context, tier: Tier, master: str, meta: dict[str, Any], proposed: bytes, sibling: str,
              by: str, guarded: bool) -> bytes:
    """The agent's bytes as the concept: its path's identity and tier, and (for a verified
    concept) the accepting person as the one who verified these words."""
    updates: dict[str, Any] = {"scope": tier.name}
    if okf.is_valid_okf_id(meta.get("okf_id")):
        updates["okf_id"] = meta["okf_id"]
    remove: tuple[str, ...] = ()
    if guarded:
        updates["verified"] = [{"by": by, "at": ctx.iso_now()}]
    elif "verified" in meta:
        updates["verified"] = meta["verified"]  # what the concept claimed, not what the agent wrote
    elif "verified" in okf.split(proposed, sibling).meta:
        remove = ("verified",)
    return okf.set_keys(proposed, sibling, updates, remove)


def _supersede(ctx: Context, snap: Snapshot, master: str, meta: dict[str, Any], new_path: str, proposed: bytes,
               sibling: str, by: str) -> dict[str, bytes | None]:
    """A Decision is superseded, never rewritten: the agent's words as a new Decision that
    ``supersedes`` it, verified by the person accepting it; the old one deprecated."""
    new_id = okf.new_okf_id()
    old_ref = meta["okf_id"] if okf.is_valid_okf_id(meta.get("okf_id")) else master
    new = okf.set_keys(proposed, sibling, {
        "type": meta.get("type") or "Decision", "scope": snap.tier.name, "okf_id": new_id, "supersedes": old_ref,
        "verified": [{"by": by, "at": ctx.iso_now()}],
    }, remove=tuple(k for k in ("okf_origin", "status", "superseded_by") if k in okf.split(proposed, sibling).meta))
    old = okf.set_keys(snap.blob(master), master, {"status": lifecycle.DEPRECATED, "superseded_by": new_id})
    return {new_path: new, master: old}


def _sibling(ws: Workspace, ref: str) -> tuple[Tier, str]:
    """The tier and path of the needs-merge sibling ``ref`` names, by the one REF grammar
    (``knowledge/refs.py``); a citation of an older blob is refused (look at it again first)."""
    found = refs.resolve(merged_view(ws), ref)
    if found.stale:
        raise UsageError(f"{found.stale}: read the proposal again before settling it")
    tier = next(t for t in ws.selected("all") if t.label == found.hit.tier)
    if not names.is_needs_merge(found.hit.path):
        siblings = sorted(p for p in snapshot(tier).entries if names.is_needs_merge(p))
        listed = ", ".join(f"{tier.label}:{p}" for p in siblings) or "none"
        raise UsageError(f"{tier.label}:{found.hit.path} is not a needs-merge sibling at HEAD (there: {listed})")
    return tier, found.hit.path
