"""Writing concepts: a tier's first commit (``init``) and a new concept with its folder's index
(``new``, and the notes of a run), each as one commit."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from pathlib import Path

from okfgit import fsutil
from okfgit.format import actors, index_md
from okfgit.format import merge as merging
from okfgit.format import concept as okf
from okfgit.context import Context
from okfgit.errors import OkfError, UsageError, ValidationError
from okfgit.git.repository import Repo
from okfgit.knowledge.snapshot import Snapshot, snapshot
from okfgit.plan import FileWrite, Plan, TierCommit, apply, ensure_repo, retry_moved, writing
from okfgit.knowledge.tiers import RUNSTATE, Tier, Workspace
from okfgit.local import paths

Editor = Callable[[bytes], bytes]
T = TypeVar("T")
_TAG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

TIER_INTROS = {
    "global": "Knowledge that holds for every project on this machine.",
    "project": "Knowledge about this project, reviewed and versioned with its code.",
    "job": "Working knowledge of one run: its state, its log and its notes.",
}


def root_index(tier: Tier) -> bytes:
    """A tier's first ``index.md``: the root frontmatter, a heading and what the tier is for."""
    title = {"global": "Global knowledge", "project": "Project knowledge", "job": f"Run {tier.run} knowledge"}[tier.name]
    return f'{index_md.ROOT_FRONTMATTER}# {title}\n\n{TIER_INTROS[tier.name]}\n'.encode()


@dataclass(slots=True)
class NewConcept:
    """What ``new_plan`` planned (the commit adding ``path``) and, once ``write`` applied
    it, the commit and the concept's citation."""

    tier: Tier
    path: str
    okf_id: str
    plan: Plan
    commit: str | None = None
    citation: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"tier": self.tier.label, "path": self.path, "okf_id": self.okf_id, "commit": self.commit,
                "citation": self.citation}


def actor(ctx: Context, tier: Tier, fallback: Path | None = None) -> str:
    """Who is writing, as an OKF actor (spec/okf-format.md §7): ``ctx.actor`` when the front
    end knows it (an MCP client), else ``$OKF_ACTOR``, else ``agent:<name>`` when an agent's
    shell runs the command, else ``human:<id>`` for the person running okfgit.

    The person's id is the author from the environment, else ``user.email``/``user.name`` as
    git reads them in the tier's repository, or in ``fallback`` (the project repository) while
    the tier's repository does not exist yet (``run start`` writes STATE.md before creating it).
    """
    named = ctx.actor or actors.from_environment(ctx.environ)
    if named:
        return named
    who = ctx.environ.get("GIT_AUTHOR_EMAIL") or ctx.environ.get("GIT_AUTHOR_NAME")
    places = ([tier.repo_path] if tier.exists() else []) + ([fallback] if fallback is not None else [])
    for place in places if not who else []:
        repo = Repo.open(place)
        who = repo.config_get("user.email") or repo.config_get("user.name")
        if who:
            break
    return f"human:{who or ctx.environ.get('USER') or 'unknown'}"


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
) -> NewConcept:
    """Plan the commit that adds one concept and refreshes its folder's index. The concept is
    read back through the one parser first (``format/concept``, with its bounds): what okfgit
    could not read is never committed."""
    okf.check_utf8({"type": type_, "title": title, "description": description, "tag": tags, "dir": folder,
                    "body": body})
    slug = okf.check_slug(slug)
    tier = ws.tier(scope)
    path = fsutil.safe_relpath(f"{fsutil.safe_relpath(folder, 'folder')}/{slug}.md" if folder else f"{slug}.md")
    snap = snapshot(tier)
    _free(snap, path)  # before an editor opens
    if description is not None and any(c in description.strip() for c in "\r\n\x85\u2028\u2029"):
        raise UsageError("--description is one sentence on one line (it has a line break)")
    if title is not None and any(c in title for c in "\r\n\x85\u2028\u2029"):
        raise UsageError("--title is one line (it has a line break): the heading and the index entry are one line")
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
    by = actor(ctx, tier)  # the same actor in the frontmatter and in the commit's trailer
    meta["generated"] = {"by": by, "at": ctx.iso_now()}
    if extra:
        meta.update(extra)
    text = body if body is not None else f"\n# {meta['title']}\n\n{meta.get('description', '')}\n".replace("\n\n\n", "\n\n")
    data = okf.new_file(meta, text)
    if editor is None:
        _check_new(data, f"{tier.label}:{path}", okf_id, "nothing was written")
    else:
        data = editor(data)
        try:
            _check_new(data, path, okf_id, "nothing was committed")
        except ValidationError as exc:
            kept = keep_draft(ctx, tier, slug, data)
            raise ValidationError(f"{exc}, your text is kept in {kept}") from exc
    return NewConcept(tier, path, okf_id, _adding(tier, path, data, okf_id, by, snap))


def _free(snap: Snapshot, path: str) -> None:
    if path in snap.entries:
        raise UsageError(f"{snap.tier.label}:{path} already exists; pick another slug or edit that concept")


def _adding(tier: Tier, path: str, data: bytes, okf_id: str, by: str, snap: Snapshot | None = None) -> Plan:
    """The commit by ``by`` that adds ``data`` at ``path`` and refreshes its folder's index,
    planned on ``snap`` (default: the tier's HEAD now)."""
    if snap is None:
        snap = snapshot(tier)
        _free(snap, path)
    changes: dict[str, bytes | None] = {path: data}
    if "index.md" not in snap.entries:
        changes["index.md"] = root_index(tier)
    changes.update(index_md.regenerate(snap, changes, index_md.affected_folders([path])))
    return Plan(commits=[TierCommit(
        tier, "new", f"okf: add {path}", changes, trailers=(("Okf-Id", okf_id),),
        old={p: (snap.blob(p) if p in snap.entries else None) for p in changes}, base=snap.commit,
        actor=by,
    )])


def commit(ctx: Context, planned: NewConcept) -> NewConcept:
    """Apply what ``new_plan`` planned; the result carries the commit and the citation."""
    done = apply(ctx, planned.plan)
    planned.commit = done.commits[-1][1]
    planned.citation = snapshot(planned.tier).concept(planned.path).citation
    return planned


def create(ctx: Context, tier: Tier, make: Callable[[], NewConcept], *, typed: bool = False) -> NewConcept:
    """Plan (``make``, a call of ``new_plan`` or ``note_plan``) and commit, holding the tier's
    write lock from the plan to the commit, so a running sync is waited for. With text a
    person ``typed`` in an editor the plan is made first (the lock is not held while they
    type); if the tier moved meanwhile, their text is kept as a draft."""
    if not typed:
        def planned_and_committed() -> NewConcept:
            with writing(ctx, tier):
                return commit(ctx, make())

        return retry_moved(planned_and_committed)
    planned = make()
    data = planned.plan.commits[0].changes[planned.path] or b""
    tries = 0

    def committed() -> NewConcept:
        nonlocal tries
        tries += 1
        with writing(ctx, tier):
            if tries > 1:  # the branch moved while they typed or since: the same text on the new HEAD
                planned.plan = _adding(tier, planned.path, data, planned.okf_id, planned.plan.commits[0].actor)
            return commit(ctx, planned)

    try:
        return retry_moved(committed)
    except OkfError as exc:
        slug = planned.path.rsplit("/", 1)[-1].removesuffix(".md")
        kept = keep_draft(ctx, planned.tier, slug, data)
        raise type(exc)(f"{exc}; your text is kept in {kept}") from exc


def read_back(read: Callable[[], T], outcome: str = "nothing was written") -> T:
    """``read()``: a file okfgit is about to write, read through its one parser (with its
    bounds); what okfgit could not read back is never written, and the error says so."""
    try:
        return read()
    except ValidationError as exc:
        raise ValidationError(f"{exc}; {outcome}") from exc


def _check_new(data: bytes, path: str, okf_id: str, outcome: str) -> None:
    """Refuse ``data`` unless every reader would read it as this new concept."""
    parsed = read_back(lambda: okf.split(data, path), outcome)
    if not parsed.has_frontmatter or not okf.one_line(parsed.meta.get("type")):
        raise ValidationError(f"{path}: the concept needs frontmatter with a non-empty type; {outcome}")
    if parsed.meta.get("okf_id") != okf_id:
        raise ValidationError(f"{path}: okf_id must not be changed while creating a concept; {outcome}")
    if not okf.one_line(parsed.meta.get("description")):
        raise ValidationError(f"{path}: the concept needs a one-sentence description; {outcome}")


def keep_draft(ctx: Context, tier: Tier, slug: str, data: bytes) -> Path:
    """Save what a person typed in the editor, so a validation error loses nothing (a
    planned write like any other, fsynced: it holds a person's words)."""
    repo = tier.open() if tier.exists() else None
    target = paths.drafts(repo.common_dir if repo else None, ctx.home) / f"{slug[:200]}-{ctx.now()}.md"
    apply(ctx, Plan(writes=[FileWrite(target, data, "a draft that could not be committed", fsync=True)])).raise_failed()
    return target


# -- init: a tier's first commit ----------------------------------------------------


@dataclass(slots=True)
class Initialised:
    """What ``init`` planned and (once applied) did."""

    tier: Tier
    plan: Plan
    commit: str | None = None

    @property
    def message(self) -> str:
        if self.commit is None:
            return f"the {self.tier.label} tier is already initialised at {self.tier.root}"
        if self.plan.commits and "index.md" not in self.plan.commits[0].changes:
            return (f"the {self.tier.label} tier at {self.tier.root} now sends its files to okfgit's merge "
                    f"driver ({merging.ATTRIBUTES}); `okfgit hooks install` sets the driver up in each clone")
        return f"initialised the {self.tier.label} tier at {self.tier.root}"

    def to_json(self) -> dict[str, object]:
        return {"tier": self.tier.label, "root": str(self.tier.root), "commit": self.commit, "message": self.message}


def init_plan(ctx: Context, ws: Workspace, scope: str) -> Initialised:
    """Plan the tier's first commit (none when it has a root index already), and for the
    job tier the ``info/exclude`` line that keeps runs out of the project repository."""
    tier = ws.tier(scope)
    snap = snapshot(tier)
    plan = Plan()
    if tier.name == "job":
        plan.writes.extend(runstate_exclusion(ws))
    changes: dict[str, bytes | None] = {}
    if tier.name == "project":  # the tier that lives on a team's branches: merged by okfgit's driver
        attributes = merging.attributes(snap.blob(merging.ATTRIBUTES) if merging.ATTRIBUTES in snap.entries else None)
        if attributes is not None:
            changes[merging.ATTRIBUTES] = attributes
    if "index.md" not in snap.entries:
        changes["index.md"] = root_index(tier)
        if snap.commit is not None:
            changes.update(index_md.regenerate(snap, changes))
        plan.commits.append(TierCommit(tier, "init", f"okf: initialise the {tier.label} tier", changes,
                                       actor=actor(ctx, tier, ws.project_repo)))
    elif changes:
        plan.commits.append(TierCommit(
            tier, "init", "okf: merge this tier's files with okfgit's merge driver", changes,
            body="git merges index.md, log.md and concepts by what they mean once `okfgit hooks install`\n"
                 "has set the driver up in a clone; a clone without it merges them as text.",
            base=snap.commit, actor=actor(ctx, tier, ws.project_repo)))
    return Initialised(tier, plan)


def init_tier(ctx: Context, ws: Workspace, scope: str) -> Initialised:
    """Bootstrap a tier: its repository (global, job), its root ``index.md``, a first commit."""
    planned = init_plan(ctx, ws, scope)
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
