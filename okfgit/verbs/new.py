"""Writing knowledge: ``init`` a tier and create a ``new`` concept, each as one commit."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from okfgit import fsutil
from okfgit.format import index_md as index
from okfgit.format import concept as okf
from okfgit.context import Context
from okfgit.errors import BusyError, UsageError, ValidationError
from okfgit.git import Repo
from okfgit.knowledge.snapshot import snapshot
from okfgit.plan import Plan, TierCommit, apply, ensure_repo, writing
from okfgit.knowledge.tiers import RUNSTATE, Tier, Workspace
from okfgit.local import paths

Editor = Callable[[bytes], bytes]
_TAG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

TIER_INTROS = {
    "global": "Knowledge that holds for every project on this machine.",
    "project": "Knowledge about this project, reviewed and versioned with its code.",
    "job": "Working knowledge of one run: its state, its log and its notes.",
}


@dataclass(frozen=True)
class Written:
    tier: Tier
    path: str
    commit: str | None
    okf_id: str | None = None
    citation: str | None = None
    message: str = ""


def actor(ctx: Context, tier: Tier, fallback: Path | None = None) -> str:
    """``human:<id>`` for the person running okfgit (OKF actor convention).

    The author from the environment, else ``user.email``/``user.name`` as git reads them in
    the tier's repository, or in ``fallback`` (the project repository) while the tier's
    repository does not exist yet (``run start`` writes STATE.md before creating it).
    """
    who = ctx.environ.get("GIT_AUTHOR_EMAIL") or ctx.environ.get("GIT_AUTHOR_NAME")
    places = ([tier.repo_path] if tier.exists() else []) + ([fallback] if fallback is not None else [])
    for place in places if not who else []:
        repo = Repo.open(place)
        who = repo.config_get("user.email") or repo.config_get("user.name")
        if who:
            break
    return f"human:{who or ctx.environ.get('USER') or 'unknown'}"


def root_index(tier: Tier) -> bytes:
    title = {"global": "Global knowledge", "project": "Project knowledge", "job": f"Run {tier.run} knowledge"}[tier.name]
    return f'{index.ROOT_FRONTMATTER}# {title}\n\n{TIER_INTROS[tier.name]}\n'.encode()


def init_plan(ws: Workspace, scope: str) -> tuple[Tier, Plan]:
    tier = ws.tier(scope)
    snap = snapshot(tier)
    plan = Plan()
    if "index.md" in snap.entries:
        return tier, plan
    changes: dict[str, bytes | None] = {"index.md": root_index(tier)}
    if snap.commit is not None:
        changes.update(index.regenerate(snap, changes))
    plan.commits.append(TierCommit(tier, "init", f"okf: initialise the {tier.label} tier", changes))
    return tier, plan


def init_tier(ctx: Context, ws: Workspace, scope: str) -> Written:
    """Bootstrap a tier: its repository (global, job), its root ``index.md``, a first commit."""
    tier, plan = init_plan(ws, scope)
    if tier.name == "job":
        exclude_runstate(ws)
    if plan.empty:
        ensure_repo(ctx, tier)
        return Written(tier, "index.md", None, message=f"the {tier.label} tier is already initialised at {tier.root}")
    with writing(ctx, tier):
        tier, plan = init_plan(ws, scope)
        if plan.empty:
            return Written(tier, "index.md", None, message=f"the {tier.label} tier is already initialised at {tier.root}")
        done = apply(ctx, plan)
    return Written(tier, "index.md", done.commits[-1][1], message=f"initialised the {tier.label} tier at {tier.root}")


def exclude_runstate(ws: Workspace) -> None:
    """Keep job tiers out of the project repository via ``.git/info/exclude``."""
    if ws.project_repo is None:
        return
    repo = ws.tier("project").open()
    exclude = repo.common_dir / "info" / "exclude"
    line = f"/{RUNSTATE}/"
    current = exclude.read_bytes() if exclude.exists() else b""
    if line.encode() in current.splitlines():
        return
    sep = b"" if not current or current.endswith(b"\n") else b"\n"
    fsutil.atomic_write(exclude, current + sep + line.encode() + b"\n", fsync=True)


def check_tags(tags: Sequence[str]) -> list[str]:
    out = []
    for tag in tags:
        if not _TAG.match(tag):
            raise ValidationError(f"invalid tag {tag!r}: tags are kebab-case (lower-case words joined by '-')")
        if tag not in out:
            out.append(tag)
    return out


def new_plan(
    ctx: Context,
    ws: Workspace,
    slug: str,
    scope: str,
    *,
    type_: str = "Note",
    title: str | None = None,
    description: str | None = None,
    tags: Sequence[str] = (),
    folder: str | None = None,
    editor: Editor | None = None,
    extra: dict[str, object] | None = None,
    body: str | None = None,
) -> tuple[Tier, str, str, Plan]:
    """Plan the commit that adds one concept and refreshes its folder's index."""
    slug = okf.check_slug(slug)
    tier = ws.tier(scope)
    path = f"{fsutil.safe_relpath(folder, 'folder')}/{slug}.md" if folder else f"{slug}.md"
    snap = snapshot(tier)
    if path in snap.entries:
        raise UsageError(f"{tier.label}:{path} already exists; pick another slug or edit that concept")
    if description is not None and "\n" in description.strip():
        raise ValidationError("--description is one sentence on one line")
    if not (description or "").strip() and editor is None:
        raise UsageError("a concept needs --description: one sentence saying what it is (or use --edit)")
    okf_id = okf.new_okf_id()
    meta: dict[str, object] = {
        "type": (type_ or "Note").strip(),
        "title": title or okf.title_from_path(slug),
    }
    if description:
        meta["description"] = " ".join(description.split())
    if tags:
        meta["tags"] = check_tags(tags)
    meta.update({"scope": tier.name, "okf_id": okf_id, "okf_source": "authored"})
    meta["generated"] = {"by": actor(ctx, tier), "at": ctx.iso_now()}
    if extra:
        meta.update(extra)
    text = body if body is not None else f"\n# {meta['title']}\n\n{meta.get('description', '')}\n".replace("\n\n\n", "\n\n")
    data = okf.serialize(meta, text)
    if editor is not None:
        data = editor(data)
        try:
            _check_edited(data, path, okf_id)
        except ValidationError as exc:
            kept = _keep_draft(ctx, tier, slug, data)
            raise ValidationError(f"{exc}; nothing was committed, your text is kept in {kept}") from exc
    changes: dict[str, bytes | None] = {path: data}
    if "index.md" not in snap.entries:
        changes["index.md"] = root_index(tier)
    changes.update(index.regenerate(snap, changes, index.affected_folders([path])))
    plan = Plan(commits=[TierCommit(
        tier, "new", f"okf: add {path}", changes, trailers=(("Okf-Id", okf_id),),
        old={p: (snap.blob(p) if p in snap.entries else None) for p in changes}, base=snap.commit,
    )])
    return tier, path, okf_id, plan


def new_concept(ctx: Context, ws: Workspace, slug: str, scope: str, **kwargs: object) -> Written:
    """Plan and commit a new concept, holding the tier's write lock from the plan to the commit
    (so a running sync is waited for). With an editor the lock is taken after the person is
    done typing; if the tier moved meanwhile, their text is kept as a draft."""
    if kwargs.get("editor") is None:
        with writing(ctx, ws.tier(scope)):
            tier, path, okf_id, plan = new_plan(ctx, ws, slug, scope, **kwargs)  # type: ignore[arg-type]
            done = apply(ctx, plan)
    else:
        tier, path, okf_id, plan = new_plan(ctx, ws, slug, scope, **kwargs)  # type: ignore[arg-type]
        try:
            done = apply(ctx, plan)
        except BusyError as exc:
            data = plan.commits[0].changes[path] or b""
            kept = _keep_draft(ctx, tier, okf.check_slug(slug), data)
            raise BusyError(f"{exc}; your text is kept in {kept}") from exc
    commit = done.commits[-1][1]
    after = snapshot(tier)
    return Written(tier, path, commit, okf_id, after.concept(path).citation)


def _check_edited(data: bytes, path: str, okf_id: str) -> None:
    parsed = okf.split(data, path)
    if not parsed.has_frontmatter or not okf.one_line(parsed.meta.get("type")):
        raise ValidationError(f"{path}: the edited concept needs frontmatter with a non-empty type")
    if parsed.meta.get("okf_id") != okf_id:
        raise ValidationError(f"{path}: okf_id must not be changed while creating a concept")
    if not okf.one_line(parsed.meta.get("description")):
        raise ValidationError(f"{path}: the concept needs a one-sentence description")


def _keep_draft(ctx: Context, tier: Tier, slug: str, data: bytes) -> Path:
    """Save what a person typed in the editor, so a validation error loses nothing."""
    repo = tier.open() if tier.exists() else None
    target = paths.drafts(repo.common_dir if repo else None, ctx.home) / f"{slug}-{ctx.now()}.md"
    fsutil.atomic_write(target, data, fsync=True)
    return target
