"""Promotion: re-home concepts job -> project (or project -> global) as two commits.

Everything is checked before the first commit (fail-closed): the references, the
route, both repositories' states, uncommitted edits in the way, an ``okf_id`` the
destination already has, links that would dangle there. Then the destination commit
lands (on the checked-out branch, or on a new ``--branch`` without touching the
checkout), then the source commit removes the concepts and names where they went.
With ``--branch`` the run's copy is removed too; the branch holds the concept until
the pull request is merged, and ``git revert`` of the source commit brings it back
into the run if the pull request is closed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from okfgit.format import index_md as index
from okfgit.format import markdown as links
from okfgit.format import concept as okf
from okfgit.format import cites as cite_format
from okfgit.format import actors, lifecycle, log_md
from okfgit.flows import runs
from okfgit.context import Context
from okfgit.errors import IntegrityError, OkfError, RepoStateError, UsageError, ValidationError
from okfgit.fsutil import safe_relpath
from okfgit.git.repository import Repo
from okfgit.git.objects import blob_oid
from okfgit.knowledge.cards import TierCards
from okfgit.knowledge.merged import Merged
from okfgit.knowledge.refs import resolve_concept
from okfgit.knowledge.snapshot import Concept, Snapshot, snapshot
from okfgit.plan import Plan, TierCommit, apply, render, retry_moved, writing
from okfgit.flows.concepts import actor, root_index
from okfgit.knowledge.tiers import Tier, Workspace

ROUTES = (("job", "project"), ("project", "global"))
PENDING = "<destination commit>"


@dataclass(frozen=True, slots=True)
class Item:
    """One concept being promoted: where it was, where it goes, its new bytes."""

    okf_id: str
    source_path: str
    path: str
    data: bytes
    title: str
    type: str
    description: str
    minted: bool = False
    body_line: int = 1  # the source file's line where the body starts, for messages
    cites: tuple[cite_format.Cite, ...] = ()

    @property
    def oid(self) -> str:
        return blob_oid(self.data)


@dataclass(slots=True)
class PromotionPlan:
    """A validated promotion: the destination commit and what the source commit will remove."""

    source: Tier
    destination: Tier
    source_head: str
    items: list[Item]
    branch: str | None
    destination_commit: TierCommit
    source_snapshot: Snapshot
    warnings: list[str] = field(default_factory=list)
    proposals: list[str] = field(default_factory=list)  # supersessions a ``contradicts`` citation asks for
    task: str = ""  # the run's task text (its STATE.md *Task* section)
    harvester: tuple[str, str | None] = ("", None)  # the promoting actor, and the name git knows them by

    def source_commit(self, destination_oid: str, today: str) -> TierCommit:
        """The source-side commit, once the destination commit's OID is known."""
        return _source_commit(self, destination_oid, today)


@dataclass(frozen=True, slots=True)
class Promotion:
    plan: PromotionPlan
    destination_oid: str
    source_oid: str

    @property
    def run(self) -> str | None:
        return self.plan.source.run


# -- planning (all validation happens here) -------------------------------------------


def plan_promotion(
    ctx: Context,
    ws: Workspace,
    refs: Sequence[str],
    from_: str,
    to: str,
    *,
    branch: str | None = None,
    folder: str | None = None,
) -> PromotionPlan:
    """Resolve and check everything a promotion needs; raise before anything is written."""
    if (from_, to) not in ROUTES:
        raise UsageError(f"cannot promote {from_} -> {to}: promotion goes job -> project or project -> global")
    if not refs:
        raise UsageError("name at least one concept to promote (a citation, path, slug, okf_id, name or title)")
    source = ws.require(from_)
    destination = ws.tier(to)
    by = actor(ctx, source, ws.project_repo)
    if to == "global":  # widening is a person's act, never an agent's text
        actors.person_only(by, "promoting to the global tier (read by every project here, pushed to its remote)")
    src_repo = source.open()
    src_snap = snapshot(source)
    if src_snap.commit is None:
        raise UsageError(f"the {source.label} tier has no commits; nothing to promote")
    src_repo.check_writable_state()
    dst_snap = snapshot(destination)
    dst_repo = destination.open() if destination.exists() else None
    _check_destination_ref(dst_repo, branch)

    concepts = [src_snap.concept(path) for path in resolve(source, refs)]
    dest_folder = safe_relpath(folder, "--dir") if folder is not None else None
    items = [_item(src_snap, c, to, dest_folder) for c in concepts]
    _check_items(items, dst_snap)
    _check_links(items, dst_snap)

    changes: dict[str, bytes | None] = {i.path: i.data for i in items}
    if "index.md" not in dst_snap.entries:
        changes["index.md"] = root_index(destination)
    changes.update(index.regenerate(dst_snap, changes, index.affected_folders(list(changes))))
    dest_commit = TierCommit(
        destination, "promote", _subject(items, f"from {source.label}"), changes,
        trailers=tuple(t for i in items for t in (
            ("Okf-Id", i.okf_id), ("Okf-Promoted-From", f"{source.label}@{src_snap.commit}:{i.source_path}"))),
        branch=branch, new_branch=branch is not None,
        old={p: (dst_snap.blob(p) if p in dst_snap.entries else None) for p in changes}, base=dst_snap.commit,
        actor=by,
    )
    pp = PromotionPlan(source, destination, src_snap.commit, items, branch, dest_commit, src_snap,
                       task=runs.task_of(src_snap) if source.name == "job" else "",
                       harvester=(dest_commit.actor,
                                  ctx.environ.get("GIT_AUTHOR_NAME") or src_repo.config_get("user.name")))
    pp.warnings.extend(_backlink_warnings(pp))
    pp.proposals.extend(_proposed_supersessions(items, dst_snap))
    # The source commit is fully known except the destination OID: check its paths now.
    draft = pp.source_commit(PENDING, ctx.today())
    pp.warnings.extend(_kept_indexes(pp, draft.changes))
    _check_dirty(src_repo, source, draft.changes, src_snap.commit)
    if branch is None and dst_repo is not None:
        dst_repo.check_writable_state()
        _check_dirty(dst_repo, destination, changes, dst_snap.commit)
    return pp


def _check_destination_ref(repo: Repo | None, branch: str | None) -> None:
    if branch is None:
        return
    if not Repo.valid_branch_name(branch):
        raise UsageError(f"{branch!r} is not a valid branch name")
    if repo is not None and repo.branch_exists(branch):
        raise UsageError(f"branch {branch!r} already exists in {repo.workdir}; pick a new name (nothing was written)")


def resolve(source: Tier, refs: Sequence[str]) -> list[str]:
    """The KB paths of the concepts ``refs`` name in the source tier (the one REF grammar,
    ``knowledge.refs``); a stale citation is refused: promotion moves what was cited or nothing."""
    view = Merged([TierCards(source)])
    out: list[str] = []
    for ref in refs:
        found = resolve_concept(view, ref)
        if found.stale:
            raise UsageError(f"{found.stale}; name it without @{found.ref.oid} to promote what HEAD has "
                             "(nothing was written)")
        if found.concept.path not in out:
            out.append(found.concept.path)
    return out


def _item(snap: Snapshot, concept: Concept, to: str, folder: str | None) -> Item:
    if concept.path == runs.STATE and concept.tier.startswith("job"):
        raise UsageError(f"{concept.citation} is the run's state, not a lesson; it stays in the run")
    if runs.generalizes_of(concept) == "no":
        raise ValidationError(f"{concept.citation} says `generalizes: no` (true only in this run); "
                              "change that line in the run first if it does hold beyond it")
    name = concept.path.rsplit("/", 1)[-1]
    path = f"{folder}/{name}" if folder else concept.path
    if any(ch.isspace() for ch in concept.path + path):
        raise ValidationError(f"{concept.citation}: a path with spaces cannot be named in a provenance trailer; "
                              "rename the file first")
    raw = concept.meta
    okf_id = concept.okf_id
    minted = not okf.is_valid_okf_id(okf_id)
    if okf_id is not None and minted:
        raise ValidationError(f"{concept.citation}: okf_id {okf_id!r} is not a UUID; fix it before promoting")
    updates: dict[str, object] = {"scope": to}
    if okf_id is None:
        okf_id = okf.new_okf_id()
        updates["okf_id"] = okf_id
    blob = snap.blob(concept.path)
    data = okf.set_keys(blob, concept.citation, updates)
    return Item(okf_id, concept.path, path, data, concept.title, concept.type, okf.one_line(raw.get("description")),
                minted, _body_line(blob, concept.body), cite_format.read(raw))


def _proposed_supersessions(items: list[Item], dst: Snapshot) -> list[str]:
    """For each promoted note that contradicts a destination concept still in force, the supersession
    that would resolve it (proposed, not made: a person decides which of the two holds)."""
    out = []
    for item in items:
        for cite in item.cites:
            if cite.relation != cite_format.CONTRADICTS:
                continue
            target = next((c for c in dst.concepts() if cite.okf_id and c.okf_id == cite.okf_id), None) or \
                (dst.concept(cite.path) if cite.path in dst.entries else None)
            if target is None or lifecycle.lifecycle(target.meta).deprecated:
                continue
            out.append(f"{item.path} contradicts {target.citation} ({target.title}). If it replaces it, supersede "
                       f"it: add `supersedes: {target.okf_id or target.path}` to {item.path}, and give "
                       f"{target.path} `status: deprecated` and `superseded_by: {item.okf_id}`; otherwise "
                       "drop or reword the note. Review flags the contradiction until then.")
    return out


def _check_items(items: list[Item], dst: Snapshot) -> None:
    paths: dict[str, Item] = {}
    for item in items:
        if item.path in paths:
            raise UsageError(f"{paths[item.path].source_path} and {item.source_path} would both land at "
                             f"{dst.tier.label}:{item.path}; promote them separately with --dir")
        paths[item.path] = item
        if item.path in dst.entries:
            raise UsageError(f"{dst.tier.label}:{item.path} already exists; pass --dir to choose another folder "
                             "(nothing was written)")
    by_id = {c.okf_id: c for c in dst.concepts() if c.okf_id}
    for item in items:
        if item.okf_id in by_id:
            raise UsageError(f"the {dst.tier.label} tier already has okf_id {item.okf_id} at "
                             f"{by_id[item.okf_id].citation}; nothing was written")


def _check_links(items: list[Item], dst: Snapshot) -> None:
    """Refuse when a promoted concept links to something the destination will not have."""
    entries = set(dst.entries) | {i.path for i in items}
    names = links.wiki_names([(c.path, _name(c.meta)) for c in dst.concepts()]
                             + [(i.path, _name(okf.split(i.data, i.path).meta)) for i in items])
    dangling: list[str] = []
    for item in items:
        body = okf.split(item.data, item.path).body
        for link in links.extract(body):
            if link.kind == "wiki":
                ok = link.target in names
            else:
                target = links.resolve(item.path, link.target)
                ok = target.external or (target.path is not None and links.exists(target.path, entries))
            if not ok:
                dangling.append(f"  {item.source_path} line {item.body_line + link.line - 1}: {_shown(link)}")
    if dangling:
        raise ValidationError(f"links that would not exist in the {dst.tier.label} tier (promote their targets "
                              "too, or fix the links first; nothing was written):\n" + "\n".join(dangling))


def _body_line(data: bytes, body: bytes) -> int:
    """The 1-based line of ``data`` where ``body`` (its tail) starts."""
    return data[: len(data) - len(body)].count(b"\n") + 1


def _shown(link: links.Link) -> str:
    return f"[[{link.target}]]" if link.kind == "wiki" else f"({link.target})"


def _name(meta: dict[str, object]) -> str | None:
    value = meta.get("name")
    return value if isinstance(value, str) else None


def _check_dirty(repo: Repo, tier: Tier, changes: dict[str, bytes | None], head: str | None) -> None:
    dirty = repo.dirty_paths({tier.repo_path_of(p): d for p, d in changes.items()}, head)
    if dirty:
        raise RepoStateError(f"{repo.workdir}: uncommitted edits in {', '.join(sorted(dirty))}; "
                             "commit or stash them first (nothing was changed)")


def _subject(items: list[Item], where: str) -> str:
    what = items[0].path if len(items) == 1 else f"{len(items)} concepts"
    return f"okf: promote {what} {where}"


# -- the source side -----------------------------------------------------------------


def _source_commit(pp: PromotionPlan, destination_oid: str, today: str) -> TierCommit:
    snap = pp.source_snapshot
    removed = {i.source_path for i in pp.items}
    changes: dict[str, bytes | None] = {p: None for p in removed}
    changes.update(index.regenerate(snap, changes, index.affected_folders(removed)))
    changes.update(index.emptied(snap, changes, index.folders_of(removed)))
    if pp.source.name == "job":
        where = f"{pp.destination.label}" + (f" branch {pp.branch}" if pp.branch else "")
        old_log = snap.blob(runs.LOG) if runs.LOG in snap.entries else None
        text = "**Promotion**: " + ", ".join(i.source_path for i in pp.items) + f" to {where} ({destination_oid if destination_oid == PENDING else destination_oid[:12]})"
        changes[runs.LOG] = log_md.add_entry(old_log, today, text, runs.log_title(pp.source))
    trailer_list = [t for i in pp.items for t in (
        ("Okf-Id", i.okf_id), ("Okf-Promoted-To", f"{pp.destination.label}@{destination_oid}:{i.path}"))]
    if pp.branch:
        trailer_list.append(("Okf-Promoted-Branch", pp.branch))
    return TierCommit(
        pp.source, "promote", _subject(pp.items, f"to {pp.destination.label}"), changes,
        trailers=tuple(trailer_list),
        old={p: (snap.blob(p) if p in snap.entries else None) for p in changes},
        actor=pp.destination_commit.actor,
    )


def _kept_indexes(pp: PromotionPlan, changes: dict[str, bytes | None]) -> list[str]:
    """Warnings for emptied folders whose index stays because a person wrote its intro."""
    out = []
    for path, data in sorted(changes.items()):
        if data is None or not path.endswith("index.md") or path == "index.md":
            continue
        folder = index.parent(path)
        if any(okf.is_concept_path(p) and p.startswith(folder + "/") and changes.get(p, b"") is not None
               for p in pp.source_snapshot.entries):
            continue
        parent = index.index_path(index.parent(folder))
        above = changes.get(parent) or (pp.source_snapshot.blob(parent) if parent in pp.source_snapshot.entries
                                        else b"")
        name = folder.rsplit("/", 1)[-1]
        if f"({name}/index.md)".encode() not in above and f"({name}/)".encode() not in above:
            out.append(f"{pp.source.label}:{folder}/ has no concepts left; its index.md keeps a hand-written intro, "
                       "so it stays (doctor reports it unreachable until you remove it or add a concept)")
    return out


def _backlink_warnings(pp: PromotionPlan) -> list[str]:
    moved = {i.source_path for i in pp.items}
    out = []
    for concept in pp.source_snapshot.concepts():
        if concept.path in moved:
            continue
        start = _body_line(pp.source_snapshot.blob(concept.path), concept.body)
        for link in links.extract(concept.body):
            target = links.resolve(concept.path, link.target) if link.kind == "md" else None
            if target is not None and target.path in moved:
                out.append(f"{concept.citation} line {start + link.line - 1} links to {target.path}, which moves to "
                           f"{pp.destination.label}")
    return out


# -- applying ------------------------------------------------------------------------


def promote(ctx: Context, pp: PromotionPlan, replan: Callable[[], PromotionPlan] | None = None) -> Promotion:
    """Commit into the destination, then remove from the source (both checked beforehand).
    When the destination's branch moved since ``pp`` was planned (a commit landed there and
    nothing was written), ``replan`` plans the promotion again on the new HEAD and it is
    tried again (``retry_moved``)."""
    plans = iter([pp])

    def promoted() -> Promotion:
        planned = next(plans, None) or (replan() if replan is not None else pp)
        with writing(ctx, planned.destination, planned.source):
            return _promote_locked(ctx, planned)

    return retry_moved(promoted, tries=1 if replan is None else None)


def _promote_locked(ctx: Context, pp: PromotionPlan) -> Promotion:
    destination_oid = apply(ctx, Plan(commits=[pp.destination_commit])).commits[-1][1]
    try:
        source_oid = apply(ctx, Plan(commits=[pp.source_commit(destination_oid, ctx.today())])).commits[-1][1]
    except OkfError as exc:
        paths = " ".join(shlex.quote(pp.source.repo_path_of(i.source_path)) for i in pp.items)
        raise IntegrityError(
            f"promoted into {pp.destination.label} at {destination_oid[:12]}, but the {pp.source.label} commit "
            f"failed: {exc}. The concept is in both tiers; remove it from the source with "
            f"`git -C {shlex.quote(str(pp.source.repo_path))} rm {paths}` and commit"
        ) from exc
    return Promotion(pp, destination_oid, source_oid)


def dry_run(ctx: Context, pp: PromotionPlan) -> str:
    """The two commits a promotion would make, as unified diffs."""
    preview = Plan(commits=[pp.destination_commit, pp.source_commit(PENDING, ctx.today())], warnings=pp.warnings)
    return render(preview)
