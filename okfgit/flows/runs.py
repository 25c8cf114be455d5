"""Runs: the job tier as the working knowledge of one run of work.

A run is ``<repo>/runstate/<slug>/okf/``, its own git repository, kept out of the
project repository by ``.git/info/exclude``. ``start`` scaffolds it as one commit:
``STATE.md`` (the current task picture), ``log.md`` (OKF §9: dated groups, newest
first, entries never edited) and ``notes/`` (one insight per file). ``note`` and
``log`` write into the active run as commits; ``status`` and ``end`` say what the
run learned and what has not been promoted yet.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from okfgit.format import index_md as index
from okfgit.format import concept as okf
from okfgit.flows import concepts as store
from okfgit.format import cites as cite_format
from okfgit.format import actors, lifecycle, log_md, trailers
from okfgit.context import Context
from okfgit.errors import UsageError, ValidationError
from okfgit.git.objects import text_path
from okfgit.git.repository import Repo
from okfgit.knowledge import refs
from okfgit.knowledge.cards import TierCard, TierCards
from okfgit.knowledge.merged import Merged
from okfgit.knowledge.snapshot import Concept, Snapshot, snapshot
from okfgit.plan import Plan, TierCommit, apply, retry_moved, writing
from okfgit.knowledge.tiers import Tier, Workspace

NOTE_TYPES = ("Decision", "Rejected", "Discovery", "Limitation", "Conclusion", "Lesson", "Blocker")
GENERALIZES = ("yes", "no", "unsure")
STATE = "STATE.md"
LOG = "log.md"
NOTES = "notes"
ACTIVE_KEY = "okf.run"

NOTES_INTRO = (
    "# Notes\n\n"
    "What this run learned, one insight per file.\n\n"
    "Each note is a Decision, Rejected option, Discovery, Limitation, Conclusion, Lesson or Blocker\n"
    "with its claim, why, evidence and whether it holds beyond this run (`generalizes`).\n"
)


@dataclass(frozen=True, slots=True)
class RunChange:
    """What a run verb did: the tier, the concept or file it wrote, the commit."""

    tier: Tier
    path: str
    commit: str | None
    message: str
    okf_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunConcept:
    """A concept of the run and whether it is a candidate for promotion."""

    concept: Concept
    generalizes: str
    promotable: bool


@dataclass(frozen=True, slots=True)
class Promoted:
    """A promotion already made out of the run, read back from the job repo's trailers."""

    okf_id: str
    destination: str
    commit: str


@dataclass(slots=True)
class RunStatus:
    tier: Tier
    active: bool
    state: str
    concepts: list[RunConcept] = field(default_factory=list)
    promoted: list[Promoted] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)

    @property
    def pending(self) -> list[RunConcept]:
        """Promotable concepts still in the run."""
        return [c for c in self.concepts if c.promotable]

    def to_json(self) -> dict[str, object]:
        """The status as ``run status --json`` prints it."""
        return {
            "run": self.tier.run,
            "root": str(self.tier.root),
            "active": self.active,
            "state": self.state,
            "concepts": [{"path": c.concept.path, "citation": c.concept.citation, "okf_id": c.concept.okf_id,
                          "type": c.concept.type, "title": c.concept.title, "generalizes": c.generalizes,
                          "promotable": c.promotable} for c in self.concepts],
            "promoted": [{"okf_id": p.okf_id, "to": p.destination, "commit": p.commit} for p in self.promoted],
            "problems": self.problems,
        }


# -- promotability ----------------------------------------------------------------


def generalizes_of(concept: Concept) -> str:
    """The concept's ``generalizes`` value; absent or unknown reads as ``unsure``."""
    value = concept.meta.get("generalizes")
    if value is True:  # YAML 1.1 reads a bare `yes` as true
        return "yes"
    if value is False:
        return "no"
    text = okf.one_line(value).lower()
    return text if text in GENERALIZES else "unsure"


def is_promotable(concept: Concept) -> bool:
    """A lesson worth offering to the project: anything but the run's state and ``generalizes: no``."""
    return concept.path != STATE and generalizes_of(concept) != "no"


# -- the job tier of a workspace ---------------------------------------------------


def project_repo(ws: Workspace) -> Repo:
    if ws.project_repo is None:
        raise UsageError("runs live inside a project repository; run okfgit inside one or pass --repo")
    return Repo.open(ws.project_repo)


# -- run start ----------------------------------------------------------------------


def start_plan(ctx: Context, ws: Workspace, task: str | None = None) -> tuple[Tier, Plan]:
    """Plan the one commit that scaffolds the run (empty when it is already scaffolded)."""
    okf.check_utf8({"task": task})
    tier = ws.tier("job")
    snap = snapshot(tier)
    plan = Plan()
    if STATE in snap.entries:
        return tier, plan
    today = ctx.today()
    changes: dict[str, bytes | None] = {}
    if "index.md" not in snap.entries:
        changes["index.md"] = scaffold_index(tier)
    changes[STATE] = state = state_file(ctx, tier, task, ws.project_repo)
    store.read_back(lambda: okf.split(state, f"{tier.label}:{STATE}"))
    if LOG not in snap.entries:
        changes[LOG] = log_md.add_entry(None, today, f"**Start**: run {tier.run} started.", log_title(tier))
    if f"{NOTES}/index.md" not in snap.entries:
        changes[f"{NOTES}/index.md"] = NOTES_INTRO.encode()
    changes.update(index.regenerate(snap, changes, index.affected_folders([STATE])))
    plan.commits.append(TierCommit(
        tier, "run", f"okf: start run {tier.run}", changes, trailers=(("Okf-Run", tier.run or ""),),
        old={p: None for p in changes}, actor=store.actor(ctx, tier, ws.project_repo),
    ))
    return tier, plan


def start(ctx: Context, ws: Workspace, task: str | None = None) -> RunChange:
    """Create the run's repository and scaffold (one commit) and make it the active run."""
    repo = project_repo(ws)
    with writing(ctx, ws.tier("job")):
        tier, plan = start_plan(ctx, ws, task)
        plan.writes.extend(store.runstate_exclusion(ws))
        done = apply(ctx, plan).raise_failed()
    commit = done.commits[-1][1] if done.commits else None
    repo.config_set(ACTIVE_KEY, tier.run or "")
    if commit is None:
        return RunChange(tier, STATE, None, f"run {tier.run} already exists at {tier.root}; it is the active run again")
    return RunChange(tier, STATE, commit, f"started run {tier.run} at {tier.root}")


def scaffold_index(tier: Tier) -> bytes:
    """The run's root index; its intro links the scaffold, so ``notes/`` is reachable while still empty."""
    return (f"{index.ROOT_FRONTMATTER}# Run {tier.run} knowledge\n\n"
            f"Working knowledge of one run: its [state]({STATE}), its [log]({LOG}) and its [notes]({NOTES}/index.md).\n"
            ).encode()


def state_file(ctx: Context, tier: Tier, task: str | None, project_repo: Path | None = None) -> bytes:
    title = f"Run {tier.run} state"
    task_line = " ".join(task.split()) if task else ""
    meta: dict[str, object] = {
        "type": "Run State",
        "title": title,
        "description": okf.first_sentence(task_line) or f"The current task picture of run {tier.run}.",
        "scope": "job",
        "okf_id": okf.new_okf_id(),
        "okf_source": "authored",
        "generated": {"by": store.actor(ctx, tier, project_repo), "at": ctx.iso_now()},
    }
    task_text = task_line or "_What this run is for, in a sentence or two._"
    body = (
        f"\n# {title}\n\n"
        f"## Task\n\n{task_text}\n\n"
        f"## Where it stands\n\nStarted on {ctx.today()}.\n\n"
        "## Next steps\n\n- _None yet._\n\n"
        "## Open questions\n\n- _None yet._\n"
    )
    return okf.serialize(meta, body)


STATE_SECTIONS = ("Task", "Where it stands", "Next steps", "Open questions")


def sections(body: str) -> dict[str, str]:
    """The ``## `` sections of a STATE.md body by heading, each its text without the heading."""
    out: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in body.splitlines():
        if line.startswith("## "):
            if current is not None:
                out[current] = "\n".join(lines).strip("\n")
            current, lines = line[3:].strip(), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        out[current] = "\n".join(lines).strip("\n")
    return out


def task_of(tier_snap: Snapshot) -> str:
    """The run's task as its STATE.md says it (the *Task* section), "" when it has none."""
    if STATE not in tier_snap.entries:
        return ""
    try:
        body = tier_snap.concept(STATE).body.decode("utf-8", errors="replace")
    except ValidationError:
        return ""
    return sections(body).get("Task", "")


def state_plan(ctx: Context, ws: Workspace, *, task: str | None = None, where: str | None = None,
               next_steps: list[str] | None = None, questions: list[str] | None = None,
               body: str | None = None) -> tuple[Tier, Plan]:
    """Plan the one commit that rewrites the active run's STATE.md, and its index entry when its
    description changed (an empty plan when nothing would change).

    Each section given replaces that section's text (``next_steps`` and ``questions`` as
    bullet lists); the others, the title line and any section a person added stay as they
    are. ``body`` replaces the whole body instead. The frontmatter is kept byte for byte but
    for ``description``, which follows the first sentence of a new *Task*.
    """
    okf.check_utf8({"task": task, "where": where, "next": next_steps, "question": questions, "body": body})
    tier = ws.require("job")
    if body is None and task is None and where is None and next_steps is None and questions is None:
        raise UsageError("nothing to write: give the task, where it stands, next steps, open questions, or a "
                         "whole new body")
    snap = snapshot(tier)
    if STATE not in snap.entries:
        raise UsageError(f"run {tier.run} has no {STATE}; `okfgit run start {tier.run}` writes one")
    old = snap.blob(STATE)
    parsed = okf.split(old, f"{tier.label}:{STATE}")
    by = store.actor(ctx, tier)
    if guarded := lifecycle.protected_by(parsed.meta):  # the one rule: no agent changes it in place
        actors.person_only(by, f"rewriting {tier.label}:{STATE} ({guarded})")
    text = parsed.body.decode("utf-8")
    if body is None:
        given = {"Task": _one_block(task), "Where it stands": _one_block(where),
                 "Next steps": _bullets(next_steps), "Open questions": _bullets(questions)}
        body = _state_body(text, {k: v for k, v in given.items() if v is not None})
    elif not body.startswith("\n"):
        body = "\n" + body
    updates: dict[str, object] = {}
    new_task = sections(body).get("Task")
    if new_task is not None and new_task != sections(text).get("Task"):
        sentence = okf.first_sentence(" ".join(new_task.split()))
        if sentence and not sentence.startswith("_"):
            updates["description"] = sentence
    data, kept = okf.set_keys_split(old, f"{tier.label}:{STATE}", updates, parsed=parsed) if updates else (old, parsed)
    new = data[: len(data) - len(kept.body)] + body.replace("\n", parsed.newline).encode("utf-8")
    store.read_back(lambda: okf.split(new, f"{tier.label}:{STATE}"))
    plan = Plan()
    if new != old:
        changes: dict[str, bytes | None] = {STATE: new}
        changes.update(index.regenerate(snap, changes, index.affected_folders([STATE])))  # its entry says the task
        plan.commits.append(TierCommit(tier, "state", f"okf: state of run {tier.run}", changes,
                                       trailers=(("Okf-Run", tier.run or ""),),
                                       old={p: snap.blob(p) if p in snap.entries else None for p in changes},
                                       base=snap.commit, actor=by))
    return tier, plan


def _one_block(text: str | None) -> str | None:
    return None if text is None else (text.strip() or "_Not recorded._")


def _bullets(items: list[str] | None) -> str | None:
    if items is None:
        return None
    kept = [" ".join(i.split()) for i in items if i.strip()]
    return "\n".join(f"- {i}" for i in kept) if kept else "- _None yet._"


def _state_body(text: str, given: dict[str, str]) -> str:
    """``text`` (a STATE.md body) with the sections in ``given`` replaced, the four known ones
    in their order (a missing one added), every other section kept after them."""
    have = sections(text)
    first = text.split("\n## ", 1)[0] if not text.startswith("## ") else ""
    out = [first.rstrip("\n")] if first.strip() else []
    for name in STATE_SECTIONS:
        out.append(f"## {name}\n\n{given.get(name, have.get(name, '')).strip()}")
    out += [f"## {name}\n\n{value}" for name, value in have.items() if name not in STATE_SECTIONS]
    return ("\n" if not first.startswith("\n") and first.strip() else "") + "\n\n".join(out) + "\n"


def write_state(ctx: Context, ws: Workspace, make: Callable[[], tuple[Tier, Plan]]) -> RunChange:
    """Rewrite the active run's STATE.md as one commit (``make``: a call of ``state_plan``)."""
    tier, commit = _commit(ctx, ws, make)
    if commit is None:
        return RunChange(tier, STATE, None, f"{tier.label}:{STATE} already says that; nothing to commit")
    return RunChange(tier, STATE, commit, f"rewrote {tier.label}:{STATE}")


def _commit(ctx: Context, ws: Workspace, make: Callable[[], tuple[Tier, Plan]]) -> tuple[Tier, str | None]:
    """Plan (``make``) and apply under the job tier's write lock, planned again on a branch
    that moved meanwhile; the commit made (None when the plan has none)."""
    def attempt() -> tuple[Tier, str | None]:
        with writing(ctx, ws.require("job")):
            tier, plan = make()
            return tier, apply(ctx, plan).raise_failed().commits[-1][1] if plan.commits else None

    return retry_moved(attempt)


# -- edits in the run's working tree --------------------------------------------------


EDITS_ACTOR = actors.CLAUDE_CODE  # who edits a run's files between commits: the agent working in it


@dataclass(frozen=True, slots=True)
class Edit:
    """One file of the run's working tree that differs from its HEAD: ``why`` says why sync
    leaves it for a person ("" when sync commits it)."""

    path: str
    change: str  # modified | added | deleted
    why: str = ""
    data: bytes | None = field(default=None, repr=False, compare=False)


@dataclass(slots=True)
class WorkingEdits:
    """The active run's uncommitted edits: what the next sync commits, what waits for a person."""

    tier: Tier
    edits: list[Edit] = field(default_factory=list)
    actor: str = EDITS_ACTOR  # who sync commits them as

    @property
    def committable(self) -> list[Edit]:
        return [e for e in self.edits if not e.why]

    @property
    def waiting(self) -> list[Edit]:
        return [e for e in self.edits if e.why]

    def to_json(self) -> dict[str, object]:
        return {"run": self.tier.run, "commit": [{"path": e.path, "change": e.change} for e in self.committable],
                "waiting": [{"path": e.path, "change": e.change, "reason": e.why} for e in self.waiting]}


def working_edits(ctx: Context, ws: Workspace) -> WorkingEdits | None:
    """The active run's files whose working-tree bytes differ from HEAD (None without an
    active run that has commits). Sync commits a concept (STATE.md, a note) an agent edited or
    added when doctor finds nothing wrong with it on its own; an index, log.md, a removal or a
    file that is no concept waits for a person (``okfgit index``, ``okfgit log``, git)."""
    tier = ws.tier("job") if ws.run else None
    if tier is None or not tier.exists():
        return None
    repo = tier.open()
    head = repo.head_commit()
    if head is None:
        return None
    from okfgit.git.objects import blob_oid
    from okfgit.knowledge.checks import frontmatter_errors

    at_head = repo.tree_entries(head, tier.prefix)
    out = WorkingEdits(tier)
    on_disk = _working_files(tier.root)
    for path in sorted(set(on_disk) | set(at_head)):
        file = on_disk.get(path)
        entry = at_head.get(path)
        if file is None:
            out.edits.append(Edit(path, "deleted", "removed from the working tree; removing knowledge is a "
                                  "person's commit (commit the removal, or `git checkout` it back)"))
            continue
        change = "added" if entry is None else "modified"
        try:
            data = os.fsencode(os.readlink(file)) if file.is_symlink() else file.read_bytes()
        except OSError as exc:
            out.edits.append(Edit(path, change, f"cannot be read ({exc.strerror or exc})"))
            continue
        if entry is not None and entry.oid == blob_oid(data) and entry.is_link == file.is_symlink():
            continue
        why = ("a symlink: okfgit never follows links; commit or remove it yourself" if file.is_symlink()
               else _why_waiting(tier, path, data, frontmatter_errors, repo.read_blob(entry.oid) if entry else None))
        out.edits.append(Edit(path, change, why, data if not why else None))
    return out


def _why_waiting(tier: Tier, path: str, data: bytes, errors: Callable[..., list[Any]], head: bytes | None) -> str:
    """Why sync leaves this edit for a person ("" when it commits it); ``head``: the file at HEAD."""
    name = path.rsplit("/", 1)[-1]
    if name == "index.md":
        return "an index: okfgit writes the entries (`okfgit index`); commit a hand-written intro yourself"
    if name == LOG:
        return "log.md is append-only and `okfgit log` adds to it; commit or revert this edit yourself"
    if not okf.is_concept_path(path):
        return "not a concept (.md); commit it yourself if it belongs in the run"
    guarded = lifecycle.protected_in(head, path) if head is not None else ""  # no agent changes it in place
    if guarded:
        return (f"it is {guarded}, so sync does not commit an edit of it as an agent's; commit it yourself "
                f"(`git -C {tier.root} commit {path}`) or take it back (`git -C {tier.root} checkout -- {path}`)")
    found = [f.message for f in errors(tier, path, data)]
    return ("not a valid concept: " + "; ".join(found)) if found else ""


def _working_files(root: Path) -> dict[str, Path]:
    """Every file and symlink under ``root`` by KB path (``text_path``), leaving out ``.git``
    and other dot-names."""
    out: dict[str, Path] = {}
    stack = [("", root)]
    while stack:
        rel, folder = stack.pop()
        try:
            found = list(os.scandir(folder))
        except OSError:
            continue
        for entry in found:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((f"{rel}{entry.name}/", Path(entry.path)))
            elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                out[text_path(rel + entry.name)] = Path(entry.path)
    return out


def commit_plan(edits: WorkingEdits) -> Plan:
    """The one commit of the edits sync takes (with the indexes of their folders), made as the
    agent's (empty when there is none)."""
    taken = edits.committable
    if not taken:
        return Plan()
    tier = edits.tier
    snap = snapshot(tier)
    changes: dict[str, bytes | None] = {e.path: e.data for e in taken}
    changes.update(index.regenerate(snap, changes, index.affected_folders(list(changes))))
    count = len(taken)
    body = "\n".join(f"- {e.change}: {e.path}" for e in taken)
    return Plan(commits=[TierCommit(
        tier, "sync", f"okf: commit {count} edited file{'s' if count != 1 else ''} of run {tier.run}", changes,
        trailers=(("Okf-Run", tier.run or ""),), body=body,
        old={p: snap.blob(p) if p in snap.entries else None for p in changes}, base=snap.commit, actor=edits.actor)])


def commit_edits(ctx: Context, ws: Workspace) -> WorkingEdits | None:
    """Commit the active run's edits sync takes (``working_edits``), under the job tier's write
    lock; the report says what was committed and what waits."""
    tier = ws.tier("job") if ws.run else None
    if tier is None or not tier.exists():
        return None
    with writing(ctx, tier):
        edits = working_edits(ctx, ws)
        if edits is not None and edits.committable:
            apply(ctx, commit_plan(edits)).raise_failed()
    return edits


def log_title(tier: Tier) -> str:
    return f"# Run {tier.run} log"


def log_plan(ctx: Context, ws: Workspace, text: str) -> tuple[Tier, Plan]:
    """Plan the commit that adds one entry to the active run's ``log.md``."""
    okf.check_utf8({"text": text})
    tier = ws.require("job")
    snap = snapshot(tier)
    old = snap.blob(LOG) if LOG in snap.entries else None
    new = log_md.add_entry(old, ctx.today(), text, log_title(tier))
    store.read_back(lambda: log_md.read(new, f"{tier.label}:{LOG}"))
    changes: dict[str, bytes | None] = {LOG: new}
    summary = " ".join(text.split())
    subject = f"okf: log {summary[:60]}" + ("..." if len(summary) > 60 else "")
    return tier, Plan(commits=[TierCommit(tier, "log", subject, changes, old={LOG: old}, base=snap.commit,
                                          actor=store.actor(ctx, tier))])


def log(ctx: Context, ws: Workspace, make: Callable[[], tuple[Tier, Plan]]) -> RunChange:
    """Add one entry to the run's ``log.md`` as one commit (``make``: a call of ``log_plan``)."""
    tier, commit = _commit(ctx, ws, make)
    return RunChange(tier, LOG, commit, f"logged in {tier.label}:{LOG}")


# -- notes --------------------------------------------------------------------------


def check_note_type(value: str) -> str:
    for name in NOTE_TYPES:
        if value.strip().lower() == name.lower():
            return name
    raise UsageError(f"unknown note type {value!r}: use one of {', '.join(NOTE_TYPES)}")


def check_generalizes(value: str) -> str:
    if value.strip().lower() not in GENERALIZES:
        raise UsageError(f"--generalizes must be one of {', '.join(GENERALIZES)}, not {value!r}")
    return value.strip().lower()


def note_body(title: str, claim: str, why: str | None, evidence: str | None) -> str:
    def section(text: str | None) -> str:
        return text.strip() if text and text.strip() else "_Not recorded._"

    return (f"\n# {title}\n\n{claim}\n\n"
            f"## Why\n\n{section(why)}\n\n"
            f"## Evidence\n\n{section(evidence)}\n")


def note_plan(
    ctx: Context,
    ws: Workspace,
    type_: str,
    title: str,
    *,
    claim: str | None = None,
    why: str | None = None,
    evidence: str | None = None,
    generalizes: str = "unsure",
    tags: tuple[str, ...] = (),
    slug: str | None = None,
    cites: str | None = None,
    relation: str | None = None,
) -> store.NewConcept:
    """Plan the commit that adds ``notes/<slug>.md``, its index and a log entry.

    ``cites`` (a REF in the project tier, else the global one; ``tier:REF`` picks the tier)
    and ``relation`` record which concept the note bears on, and how (``format/cites``).
    """
    okf.check_utf8({"title": title, "claim": claim, "why": why, "evidence": evidence})
    tier = ws.require("job")
    type_ = check_note_type(type_)
    extra: dict[str, object] = {"generalizes": check_generalizes(generalizes)}
    if (cites is None) != (relation is None):
        raise UsageError("--cites and --relation go together: the concept a note bears on, and how "
                         f"({', '.join(cite_format.RELATIONS)})")
    if cites is not None and relation is not None:
        try:
            relation = cite_format.check_relation(relation)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        cited = cited_concept(ws, cites)
        extra["cites"] = [cite_format.Cite(cited.citation, cited.okf_id, relation).to_json()]
    title = " ".join(title.split())
    if not title:
        raise ValidationError("a note needs a title")
    sentence = " ".join((claim or title).split())
    if claim is not None and "\n" in claim.strip():
        raise ValidationError("--claim is one sentence on one line")
    name = okf.check_slug(slug) if slug else okf.slugify(title)
    planned = store.new_plan(
        ctx, ws, name, "job", type_=type_, title=title, description=sentence, tags=tags,
        folder=NOTES, extra=extra, body=note_body(title, sentence, why, evidence),
    )
    plan, path = planned.plan, planned.path
    commit = plan.commits[0]
    snap = snapshot(tier)
    old_log = snap.blob(LOG) if LOG in snap.entries else None
    entry = f"**{type_}**: [{title}]({path})" + (f": {sentence}" if sentence != title else "")
    changes = dict(commit.changes)
    changes[LOG] = log_md.add_entry(old_log, ctx.today(), entry, log_title(tier))
    old = dict(commit.old)
    old[LOG] = old_log
    plan.commits[0] = dataclasses.replace(
        commit, operation="note", subject=f"okf: note {type_.lower()} {path}", changes=changes, old=old,
    )
    return planned


def cited_concept(ws: Workspace, ref: str) -> TierCard:
    """The concept ``--cites`` names, by the one REF grammar (``knowledge.refs``) over the project
    and global tiers (project first; ``project:REF`` or ``global:REF`` picks one). A stale
    citation is refused: the note would record a blob other than the one its author read."""
    view = Merged([TierCards(ws.tier(name)) for name in ("project", "global")
                   if name != "project" or ws.project_repo is not None])
    try:
        found = refs.resolve_concept(view, ref)
    except UsageError as exc:
        if "ambiguous" in str(exc):
            raise
        raise UsageError(f"--cites {ref!r} names no concept: {exc}") from exc
    if found.stale:
        raise UsageError(f"--cites: {found.stale}; cite what HEAD has (nothing was written)")
    return found.concept


def note(ctx: Context, ws: Workspace, make: Callable[[], store.NewConcept]) -> RunChange:
    """Plan (``make``: a call of ``note_plan``) and commit under the job tier's write lock."""
    done = store.create(ctx, ws.require("job"), make)
    return RunChange(done.tier, done.path, done.commit, f"noted {done.citation}", done.okf_id)


# -- status and end -----------------------------------------------------------------


def status(ws: Workspace) -> RunStatus:
    """The run's concepts (which are promotable) and the promotions already made."""
    tier = ws.require("job")
    repo = project_repo(ws)
    snap = snapshot(tier)
    out = RunStatus(tier, repo.config_get(ACTIVE_KEY) == tier.run, "")
    for concept in snap.concepts():
        if concept.path == STATE:
            out.state = concept.description
        out.concepts.append(RunConcept(concept, generalizes_of(concept), is_promotable(concept)))
    out.problems = snap.problems()
    out.promoted = promotions(tier)
    return out


def promotions(tier: Tier) -> list[Promoted]:
    """Promotions out of this tier, oldest first, from its commits' ``Okf-Promoted-To`` trailers."""
    repo = tier.open()
    head = repo.head_commit()
    if head is None:
        return []
    found: list[Promoted] = []
    for oid, _, message in repo.log(None, head):
        parsed = trailers.parse_trailers(message)
        if trailers.values(parsed, "Okf-Operation") != ["promote"]:
            continue
        for okf_id, where in zip(trailers.values(parsed, "Okf-Id"), trailers.values(parsed, "Okf-Promoted-To")):
            found.append(Promoted(okf_id, where, oid))
    return list(reversed(found))


@dataclass(frozen=True, slots=True)
class Ended:
    tier: Tier
    cleared: bool
    still_active_by: str | None
    pending: list[RunConcept]


def end(ws: Workspace) -> Ended:
    """Clear the active run (``git config --unset okf.run``); report what was not promoted.

    The run's repository stays where it is: it is the run's history.
    """
    tier = ws.require("job")
    repo = project_repo(ws)
    current = repo.config_get(ACTIVE_KEY)
    cleared = current == tier.run and repo.config_unset(ACTIVE_KEY)
    env_run = ws.ctx.environ.get("OKF_RUN")
    still = "$OKF_RUN" if env_run == tier.run else None
    return Ended(tier, cleared, still, status(ws).pending)
