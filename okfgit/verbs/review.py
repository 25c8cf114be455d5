"""Review: the knowledge diff of a branch, checked, with a verdict for its pull request.

Reads two trees of the project tier (``.okf/`` at the base and at the head of a range),
never the working tree. Concepts are matched by ``okf_id`` so a move is a rename, not a
removal plus an addition. Doctor runs on both trees and only the findings the branch
introduces count; then the review rules (spec/okf-runs-promote-review.md) apply:

- one canonical home: one ``okf_id`` per tier, one title per folder;
- supersession is explicit: a Decision is never removed or rewritten in place; the old
  one gets ``status: deprecated`` and ``superseded_by``, the new one ``supersedes``;
- a human-reviewed concept (a ``verified`` entry by a ``human:`` actor, OKF §5.3) is never
  changed, removed or superseded without a person: verdict ``needs-human``;
- a leftover ``needs-merge`` sibling blocks (doctor's ``needs-merge`` finding).

Verdict: ``request-changes`` when any error, else ``needs-human`` when any, else ``merge``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from okfgit import TOOL
from okfgit.verbs import doctor
from okfgit.verbs import harvest
from okfgit.format import index_md as index
from okfgit.format import cites
from okfgit.format import lifecycle
from okfgit.format import concept as okf
from okfgit.format import markdown as links
from okfgit.format import trailers
from okfgit.format.findings import ERROR, WARNING, Finding
from okfgit.context import Context
from okfgit.errors import UsageError, ValidationError
from okfgit.git import Repo
from okfgit.knowledge.snapshot import Concept, Snapshot, snapshot
from okfgit.knowledge.tiers import Tier, Workspace

HUMAN = "needs-human"
APPROVED = "approved"  # a needs-human finding a person approved (``--approved-by``)
MERGE = "merge"
REQUEST_CHANGES = "request-changes"
REVIEW_VERSION = 2  # 2: findings in the one shape doctor prints too (code, file)
# Never ``@{upstream}``: a pushed pull request branch's upstream is the branch itself.
FALLBACK_BASES = ("main", "origin/main", "master", "origin/master")
# What a needs-human finding asks for: the one act that clears it.
APPROVAL = "a person must approve the pull request (review --approved-by human:<id>)"
# Keys whose change rewrites what a concept claims (a Decision must not be rewritten in place).
CLAIM_KEYS = ("title", "description")
# What a superseded concept may still change: its lifecycle (OKF §5.4, §5.5), nothing it claims.
LIFECYCLE_KEYS = ("status", "superseded_by", "stale_after")
# The project's okfgit settings (the capture opt-out among them): a person decides them.
SETTINGS = "okfgit.toml"


@dataclass(frozen=True)
class FieldChange:
    key: str
    change: str  # added | removed | changed
    old: Any = None
    new: Any = None


@dataclass(frozen=True)
class ConceptChange:
    """One concept added, modified, removed or renamed (matched by ``okf_id``)."""

    change: str
    path: str
    old_path: str | None
    okf_id: str | None
    type: str
    title: str
    description: str
    oid: str | None
    old_oid: str | None
    fields: tuple[FieldChange, ...] = ()
    body_diff: str = ""
    body: str | None = None  # the head version's body (None when removed): what is being accepted
    linked_from: tuple[str, ...] = ()  # concepts at the head that link to this one

    def summary(self) -> dict[str, Any]:
        return {"change": self.change, "path": self.path, "old_path": self.old_path, "okf_id": self.okf_id,
                "oid": self.oid}

    def to_json(self) -> dict[str, Any]:
        out = self.summary()
        out.update(type=self.type, title=self.title, description=self.description, old_oid=self.old_oid,
                   fields=[{"key": f.key, "change": f.change, "old": f.old, "new": f.new} for f in self.fields],
                   body_diff=self.body_diff, body=self.body, linked_from=list(self.linked_from))
        return out


@dataclass(frozen=True)
class CommitInfo:
    """A commit in the range that touched ``.okf/``, and who made it."""

    oid: str
    subject: str
    author: str
    trailers: tuple[tuple[str, str], ...]

    @property
    def operation(self) -> str | None:
        found = trailers.values(self.trailers, "Okf-Operation")
        return found[0] if found else None

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.oid, "subject": self.subject, "author": self.author,
                "by": "okfgit" if self.operation else "person", "operation": self.operation,
                "trailers": [[k, v] for k, v in self.trailers if k.lower().startswith("okf-")]}


@dataclass
class Review:
    base: str
    head: str
    range: str
    concepts: list[ConceptChange] = field(default_factory=list)
    files: list[tuple[str, str]] = field(default_factory=list)  # (change, path) of index.md, log.md, others
    findings: list[Finding] = field(default_factory=list)
    commits: list[CommitInfo] = field(default_factory=list)
    preexisting: int = 0
    harvest: dict[str, Any] | None = None
    approved_by: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        severities = {f.severity for f in self.findings}
        if ERROR in severities:
            return REQUEST_CHANGES
        if HUMAN in severities:
            return HUMAN
        return MERGE

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict == MERGE else 2

    def counts(self) -> dict[str, int]:
        out = {"added": 0, "modified": 0, "removed": 0, "renamed": 0}
        for c in self.concepts:
            out[c.change] += 1
        return out

    def block(self) -> dict[str, Any]:
        """The ``okf-review`` block: verdict, findings and concepts, for a PR comment."""
        return {"version": REVIEW_VERSION, "verdict": self.verdict, "base": self.base, "head": self.head,
                "approved_by": list(self.approved_by), "findings": [f.to_json() for f in self.findings],
                "concepts": [c.summary() for c in self.concepts], "tool": TOOL}

    def to_json(self) -> dict[str, Any]:
        out = self.block()
        out.update(range=self.range, counts=self.counts(), concepts=[c.to_json() for c in self.concepts],
                   files=[{"change": c, "path": p} for c, p in self.files],
                   commits=[c.to_json() for c in self.commits], preexisting_findings=self.preexisting,
                   harvest=self.harvest)
        return out


# -- the range -------------------------------------------------------------------------


def resolve_range(repo: Repo, spec: str | None, base: str | None = None,
                  environ: Mapping[str, str] | None = None) -> tuple[str, str, str]:
    """(base commit, head commit, label) for ``BASE...HEAD``, ``BASE..HEAD`` or ``BASE``.

    ``A...B`` and a bare ``A`` compare against the merge base, like ``git diff A...B``.
    Without a range the base is the pull request's base branch (``default_base``), never
    the branch's own upstream. An empty range (nothing on HEAD that the base lacks) is a
    UsageError: there is nothing to judge, and "merge" would be a lie.
    """
    if spec is not None and base is not None:
        raise UsageError("pass either a range or --base, not both")
    if spec is None:
        spec = (base or default_base(repo, environ or {})) + "...HEAD"
    if "..." in spec:
        a, b = spec.split("...", 1)
        a, b = a or "HEAD", b or "HEAD"
        head = repo.resolve(b)
        found = _merge_base(repo, repo.resolve(a), head, a, b), head, f"{a}...{b}"
    elif ".." in spec:
        a, b = spec.split("..", 1)
        a, b = a or "HEAD", b or "HEAD"
        found = repo.resolve(a), repo.resolve(b), f"{a}..{b}"
    else:
        head = repo.resolve("HEAD")
        found = _merge_base(repo, repo.resolve(spec), head, spec, "HEAD"), head, f"{spec}...HEAD"
    if next(repo.log(found[0], found[1]), None) is None:
        raise UsageError(f"nothing to review: {found[2]} is empty (no commit on the head side that the base "
                         "lacks); is the branch pushed and checked out, and is the base the pull request's base?")
    return found


def default_base(repo: Repo, environ: Mapping[str, str]) -> str:
    """The pull request's base: ``$GITHUB_BASE_REF`` in CI, else ``origin/HEAD``'s branch, else main/master."""
    pr_base = environ.get("GITHUB_BASE_REF", "").strip()
    if pr_base:
        for candidate in (f"origin/{pr_base}", pr_base):
            if _resolves(repo, candidate):
                return candidate
        raise UsageError(f"GITHUB_BASE_REF is {pr_base!r}, but neither origin/{pr_base} nor {pr_base} is in this "
                         "clone; fetch it (actions/checkout with fetch-depth: 0) or pass --base")
    target = repo.symbolic_target("refs/remotes/origin/HEAD")
    if target and _resolves(repo, target):
        return target.removeprefix("refs/remotes/")
    for candidate in FALLBACK_BASES:
        if _resolves(repo, candidate):
            return candidate
    raise UsageError("no base to compare with (no origin/HEAD, main or master); pass --base BRANCH or a range, "
                     "e.g. `okfgit review origin/main...HEAD`")


def _head_branch(repo: Repo, label: str) -> str | None:
    """The branch the range's head side names (``HEAD``: the checked-out branch), or None."""
    head = label.split("..")[-1].lstrip(".")
    if head == "HEAD":
        return (repo.head_branch() or "").removeprefix("refs/heads/") or None
    return head if repo.branch_exists(head) else None


def _resolves(repo: Repo, rev: str) -> bool:
    try:
        repo.resolve(rev)
    except UsageError:
        return False
    return True


def _merge_base(repo: Repo, a: str, b: str, a_name: str, b_name: str) -> str:
    found = repo.merge_base(a, b)
    if found is None:
        raise UsageError(f"{a_name} and {b_name} have no common ancestor; pass BASE..HEAD to compare them directly")
    return found


def check_approvers(actors: Iterable[str]) -> tuple[str, ...]:
    """``--approved-by`` values: ``human:<id>`` actors (OKF), each once, in the order given."""
    out: list[str] = []
    for actor in actors:
        actor = actor.strip()
        if not actor.startswith("human:") or not actor[len("human:"):].strip():
            raise UsageError(f"--approved-by takes a person as an OKF actor, human:<id> (e.g. human:alice), "
                             f"not {actor!r}")
        if actor not in out:
            out.append(actor)
    return tuple(out)


def approve(findings: list[Finding], approvers: tuple[str, ...]) -> list[Finding]:
    """Needs-human findings become approved ones, naming who approved them."""
    if not approvers:
        return findings
    who = ", ".join(approvers)
    return [f.with_severity(APPROVED, f"{f.message} (approved by {who})") if f.severity == HUMAN else f
            for f in findings]


# -- the review ------------------------------------------------------------------------


def review(ctx: Context, ws: Workspace, spec: str | None = None, pr_body: str | None = None, *,
           base_ref: str | None = None, approved_by: Iterable[str] = ()) -> Review:
    """Review the project tier's changes in ``spec`` (see ``resolve_range``).

    ``approved_by``: ``human:`` actors whose approval turns needs-human findings into
    approved ones (the pull request's approving reviews, in CI).
    """
    approvers = check_approvers(approved_by)
    tier = ws.tier("project")
    repo = tier.open()
    base, head, label = resolve_range(repo, spec, base_ref, ctx.environ)
    old = snapshot(tier, base)
    new = snapshot(tier, head)
    out = Review(base, head, label)
    facts = doctor.checked_facts(new)
    out.concepts = diff_concepts(old, new, facts)
    out.files = _other_files(old, new)
    today = dt.date.fromisoformat(ctx.today())
    introduced, out.preexisting = _doctor_findings(old, new, today, _scope(out.concepts, out.files, facts), facts)
    out.findings = introduced + rules(old, new, out.concepts) + _settings(out.files)
    out.commits = provenance(repo, tier, base, head)
    if pr_body is not None:
        claimed = {c.path for c in out.concepts if c.change != "removed"}
        out.harvest, problems = harvest.check(pr_body, new, claimed, {c.oid: c.trailers for c in out.commits},
                                              ctx.environ.get("GITHUB_HEAD_REF") or _head_branch(repo, label))
        out.findings += problems
    out.findings = _sorted(approve(_dedupe(out.findings), approvers))
    out.approved_by = approvers
    return out


def diff_concepts(old: Snapshot, new: Snapshot, facts: dict[str, doctor.Checked] | None = None) -> list[ConceptChange]:
    """Concepts added, modified, removed, and renamed (an ``okf_id`` that changed path).

    ``facts``: ``doctor.checked_facts(new)`` when the caller has them (the links they hold
    find the concepts linking to the changed ones without parsing the tree)."""
    before = {p: e.oid for p, e in old.entries.items() if okf.is_concept_path(p)}
    after = {p: e.oid for p, e in new.entries.items() if okf.is_concept_path(p)}
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    renames: dict[str, str] = {}
    ids_added: dict[str, str] = {}
    for path in added:
        okf_id = _okf_id(new, path)
        if okf_id:
            ids_added.setdefault(okf_id, path)
    for path in removed:
        okf_id = _okf_id(old, path)
        if okf_id and okf_id in ids_added and ids_added[okf_id] not in renames.values():
            renames[path] = ids_added[okf_id]
    out: list[ConceptChange] = []
    for path in sorted(set(before) & set(after)):
        if before[path] != after[path]:
            out.append(_change("modified", old, new, path, path))
    for path in added:
        if path not in renames.values():
            out.append(_change("added", old, new, None, path))
    for path in removed:
        if path in renames:
            out.append(_change("renamed", old, new, path, renames[path]))
        else:
            out.append(_change("removed", old, new, path, None))
    out = sorted(out, key=lambda c: (c.path or c.old_path or ""))
    linked = backlinks(new, {p for c in out for p in (c.path, c.old_path) if p}, facts)
    return [dataclasses.replace(c, linked_from=tuple(sorted(set(linked.get(c.path, []) + linked.get(c.old_path or "", []))
                                                           - {c.path})))
            if c.path in linked or (c.old_path or "") in linked else c for c in out]


def backlinks(snap: Snapshot, targets: set[str], facts: dict[str, doctor.Checked] | None = None
              ) -> dict[str, list[str]]:
    """For each of ``targets``, the concepts in ``snap`` whose body links to it (markdown or ``[[name]]``),
    read from doctor's facts of ``snap`` (cached by blob OID: nothing unchanged is parsed)."""
    facts = doctor.checked_facts(snap) if facts is None else facts
    concepts = [(p, f) for p, f in sorted(facts.items()) if f.readable and f.has_frontmatter]
    names = links.wiki_names((p, f.name) for p, f in concepts)
    # A markdown link reaches a target only if it ends in the target's file name (unless it is
    # written with escapes, a fragment or a dot segment): the rest need no resolving.
    ends = {t.rsplit("/", 1)[-1] for t in targets}
    out: dict[str, list[str]] = {}
    for source, fact in concepts:
        for kind, target, *_ in fact.links:
            if kind != "wiki" and target.rsplit("/", 1)[-1] not in ends and not _unusual(target):
                continue
            path = names.get(target) if kind == "wiki" else links.resolve(source, target).path
            if path in targets and source not in out.setdefault(path, []):
                out[path].append(source)
    return out


def _unusual(target: str) -> bool:
    last = target.rstrip("/").rsplit("/", 1)[-1]
    return last in (".", "..", "") or any(c in target for c in "%#?")


def _scope(changes: list[ConceptChange], files: list[tuple[str, str]], facts: dict[str, doctor.Checked]) -> set[str]:
    """The files doctor looks at for a review: the changed ones, the concepts linking to a
    changed concept or linked from one, and the index files of the changed concepts' folders."""
    scope = {p for c in changes for p in (c.path, c.old_path, *c.linked_from) if p} | {p for _, p in files}
    for change in changes:
        fact = facts.get(change.path)
        for kind, target, *_ in fact.links if fact is not None and change.change != "removed" else ():
            if kind == "md":
                resolved = links.resolve(change.path, target).path
                if resolved:
                    scope.add(resolved)
    scope |= {index.index_path(index.parent(p)) for p in list(scope) if okf.is_concept_path(p)}
    return scope


def _okf_id(snap: Snapshot, path: str) -> str | None:
    concept = _concept(snap, path)
    return concept.okf_id if concept else None


def _concept(snap: Snapshot, path: str | None) -> Concept | None:
    if path is None or path not in snap.entries:
        return None
    try:
        return snap.concept(path)
    except ValidationError:
        return None


def _change(kind: str, old: Snapshot, new: Snapshot, old_path: str | None, path: str | None) -> ConceptChange:
    a = _concept(old, old_path)
    b = _concept(new, path)
    shown = b or a
    fields: tuple[FieldChange, ...] = ()
    body = ""
    if kind in ("modified", "renamed"):
        if a is not None and b is not None:
            fields = field_changes(a.meta, b.meta)
            body = unified(a.body, b.body)
        else:
            body = unified(old.blob(old_path or ""), new.blob(path or ""))
    return ConceptChange(
        kind, path or old_path or "", old_path if kind in ("renamed",) else None,
        shown.okf_id if shown else None, shown.type if shown else "", shown.title if shown else (path or ""),
        shown.description if shown else "",
        new.entries[path].oid if path else None, old.entries[old_path].oid if old_path else None, fields, body,
        b.body.decode("utf-8", errors="replace") if b is not None else None,
    )


def field_changes(old: dict[str, Any], new: dict[str, Any]) -> tuple[FieldChange, ...]:
    """Frontmatter keys added, removed or changed, in okfgit's key order."""
    keys = list(okf.ordered({**old, **new}))
    out = []
    for key in keys:
        if key not in old:
            out.append(FieldChange(key, "added", None, new[key]))
        elif key not in new:
            out.append(FieldChange(key, "removed", old[key], None))
        elif old[key] != new[key]:
            out.append(FieldChange(key, "changed", old[key], new[key]))
    return tuple(out)


def unified(old: bytes, new: bytes) -> str:
    """The hunks of a unified diff (no file header lines); empty when equal."""
    a = old.decode("utf-8", errors="replace").splitlines()
    b = new.decode("utf-8", errors="replace").splitlines()
    lines = list(difflib.unified_diff(a, b, lineterm="", n=3))
    return "\n".join(lines[2:])


def _other_files(old: Snapshot, new: Snapshot) -> list[tuple[str, str]]:
    out = []
    for path in sorted(set(old.entries) | set(new.entries)):
        if okf.is_concept_path(path):
            continue
        a, b = old.entries.get(path), new.entries.get(path)
        if a is None:
            out.append(("added", path))
        elif b is None:
            out.append(("removed", path))
        elif a.oid != b.oid:
            out.append(("modified", path))
    return out


# -- doctor: only what the branch introduces ----------------------------------------------


def _doctor_findings(old: Snapshot, new: Snapshot, today: dt.date, scope: set[str] | None = None,
                     facts: dict[str, doctor.Checked] | None = None) -> tuple[list[Finding], int]:
    """Doctor findings at the head that were not on the base (lines may move; messages do not),
    about the files in ``scope`` (None: every file).

    The base is only checked when the head has findings: a clean head needs one pass.
    """
    def check(snap: Snapshot, facts: dict[str, doctor.Checked] | None = None) -> list[Finding]:
        return doctor.check_snapshot(snap, today, facts=facts, only=scope).findings if snap.entries else []

    found = check(new, facts)
    before = {(f.code, f.file, f.message) for f in check(old)} if found else set()
    introduced: list[Finding] = []
    kept = 0
    for f in found:
        if (f.code, f.file, f.message) in before:
            kept += 1
            continue
        introduced.append(f.with_severity(ERROR if f.severity == ERROR else WARNING))
    return introduced, kept


# -- the review rules ---------------------------------------------------------------------


def rules(old: Snapshot, new: Snapshot, changes: list[ConceptChange]) -> list[Finding]:
    """Canonical home, explicit supersession, human-reviewed concepts, identity."""
    out: list[Finding] = []
    for change in changes:
        before = _concept(old, change.old_path or change.path) if change.change != "added" else None
        after = _concept(new, change.path) if change.change != "removed" else None
        out += _human_reviewed(change, before)
        out += _verified(change, before, after)
        out += _decision(change, before, after)
        out += _superseded_rewrite(change, before, after)
        if before and after and before.okf_id and after.okf_id != before.okf_id:
            out.append(Finding("okf-id-changed", ERROR, change.path, f"okf_id changed from {before.okf_id} to "
                               f"{after.okf_id}; an okf_id is the concept's identity and never changes"))
        if after is not None:
            out += _supersession(after, old, new)
            out += _contradictions(after, new)
    out += _duplicate_titles(new, changes)
    return out


def human_reviewed(concept: Concept) -> list[str]:
    """Who makes the concept human-reviewed (OKF §5.3, read by ``format.lifecycle``); an unreadable
    ``verified`` counts, fail closed, as a person's."""
    trust = lifecycle.trust(concept.meta)
    if trust.humans:
        return list(trust.humans)
    return ["an unreadable verified entry"] if trust.problem else []


def _verified(change: ConceptChange, before: Concept | None, after: Concept | None) -> list[Finding]:
    """A change to ``verified`` claims (or withdraws) a person's acceptance: a person approves it."""
    if after is None:
        return []
    was = before.meta.get("verified") if before is not None else None
    now = after.meta.get("verified")
    if was == now:
        return []
    what = "adds" if was is None else "removes" if now is None else "changes"
    return [Finding("verified-changed", HUMAN, change.path, f"{what} verified (a claim that someone checked this "
                    f"concept); {APPROVAL}")]


def _settings(files: list[tuple[str, str]]) -> list[Finding]:
    return [Finding("settings-changed", HUMAN, path, f"{kind} the project's okfgit settings (what okfgit may "
                    f"capture into this repository among them); {APPROVAL}")
            for kind, path in files if path == SETTINGS]


def _human_reviewed(change: ConceptChange, before: Concept | None) -> list[Finding]:
    if before is None or change.change == "added":
        return []
    people = human_reviewed(before)
    if not people:
        return []
    who = ", ".join(people)
    if change.change == "removed":
        return [Finding("human-reviewed-removed", HUMAN, change.path, f"removes a concept reviewed by {who}; "
                        f"{APPROVAL}")]
    if change.oid != change.old_oid:
        return [Finding("human-reviewed-changed", HUMAN, change.path, f"changes a concept reviewed by {who}; "
                        f"{APPROVAL}")]
    return []


def is_decision(concept: Concept) -> bool:
    return concept.type.casefold() == "decision"


def _decision(change: ConceptChange, before: Concept | None, after: Concept | None) -> list[Finding]:
    if before is None or not is_decision(before):
        return []
    if change.change == "removed":
        return [Finding("decision-removed", ERROR, change.path, "removes a Decision; keep it, with status: deprecated "
                        "and superseded_by naming the decision that replaces it (if one does)")]
    if after is None:
        return []
    rewritten = before.body != after.body or any(before.meta.get(k) != after.meta.get(k) for k in CLAIM_KEYS)
    if rewritten and not _superseded(after):
        return [Finding("decision-rewritten", ERROR, change.path, "rewrites a Decision in place; write the new "
                        "decision as its own concept with supersedes, and mark this one status: deprecated with "
                        "superseded_by")]
    return []


def _superseded(concept: Concept) -> bool:
    state = lifecycle.lifecycle(concept.meta)
    return state.deprecated and bool(state.superseded_by)


def _superseded_rewrite(change: ConceptChange, before: Concept | None, after: Concept | None) -> list[Finding]:
    """A concept superseded in this change (or before it) keeps what it said: only its lifecycle moves."""
    if before is None or after is None or not _superseded(after):
        return []
    changed = [f.key for f in change.fields if f.key not in LIFECYCLE_KEYS]
    if before.body != after.body:
        changed.append("the body")
    if not changed:
        return []
    return [Finding("decision-rewritten", ERROR, change.path, f"is superseded, yet this change rewrites "
                    f"{', '.join(changed)}; a superseded concept keeps its words (history), and may change only "
                    f"{', '.join(LIFECYCLE_KEYS)}: put the new content in the concept that supersedes it")]


def _refs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int))]
    return []


def _matches(concept: Concept, ref: str, source: str = "") -> bool:
    """``ref``, written in the concept at ``source``, names ``concept`` (``format.lifecycle``
    tries a bundle-absolute path from each folder above ``source`` too: an adopted bundle)."""
    ref = ref.strip()
    path = ref.lstrip("/")
    if ref == concept.okf_id or path == concept.path or path + ".md" == concept.path:
        return True
    return bool(source) and concept.path in lifecycle.ref_candidates(ref, source)


def _find(snap: Snapshot, ref: str, source: str = "") -> Concept | None:
    """The concept a ``supersedes``/``superseded_by`` value written in ``source`` names: a KB
    path, else an ``okf_id``."""
    path = ref.strip().lstrip("/")
    extra = lifecycle.ref_candidates(ref, source) if source else []
    for candidate in (path, path + ".md", *extra):
        concept = _concept(snap, candidate) if okf.is_concept_path(candidate) else None
        if concept is not None:
            return concept
    for concept in snap.concepts():
        if _matches(concept, ref):
            return concept
    return None


def _supersession(concept: Concept, old: Snapshot, new: Snapshot) -> list[Finding]:
    out: list[Finding] = []
    for ref in _refs(concept.meta.get("supersedes")):
        target = _find(new, ref, concept.path)
        if target is None:
            gone = " (it was removed: keep it, deprecated)" if _find(old, ref, concept.path) else ""
            out.append(Finding("supersession", ERROR, concept.path, f"supersedes {ref}, which is not in the "
                               f"knowledge base{gone}"))
            continue
        missing = []
        if target.meta.get("status") != "deprecated":
            missing.append("status: deprecated")
        if not any(_matches(concept, r, target.path) for r in _refs(target.meta.get("superseded_by"))):
            missing.append(f"superseded_by: {concept.okf_id or concept.path}")
        if missing:
            out.append(Finding("supersession", ERROR, concept.path, f"supersedes {target.path}, which needs "
                               f"{' and '.join(missing)}"))
        if human_reviewed(target) and _find(old, ref, concept.path) is not None:
            out.append(Finding("human-reviewed-superseded", HUMAN, concept.path, f"supersedes {target.path}, "
                               f"reviewed by {', '.join(human_reviewed(target))}; {APPROVAL}"))
    successors = _refs(concept.meta.get("superseded_by"))
    if successors and concept.meta.get("status") != "deprecated":
        out.append(Finding("supersession", ERROR, concept.path, "has superseded_by but not status: deprecated"))
    for ref in successors:
        target = _find(new, ref, concept.path)
        if target is None:
            out.append(Finding("supersession", ERROR, concept.path, f"superseded_by names {ref}, which is not in "
                               "the knowledge base"))
        elif not any(_matches(concept, r, target.path) for r in _refs(target.meta.get("supersedes"))):
            out.append(Finding("supersession", ERROR, concept.path, f"superseded_by names {target.path}, which "
                               f"does not say supersedes: {concept.okf_id or concept.path}"))
    return out


def _contradictions(concept: Concept, new: Snapshot) -> list[Finding]:
    """A concept that says another is wrong (``cites`` with ``relation: contradicts``) needs a person,
    unless this change already supersedes that concept by it."""
    out = []
    for cite in cites.read(concept.meta):
        if cite.relation != cites.CONTRADICTS:
            continue
        target = (_find(new, cite.okf_id) if cite.okf_id else None) or (_find(new, cite.path) if cite.path else None)
        if target is None:
            out.append(Finding("contradiction", WARNING, concept.path, f"contradicts {cite.ref or cite.okf_id}, "
                               "which is not in the project knowledge base (the global tier's, or gone)"))
            continue
        resolved = (_superseded(target)
                    and any(_matches(concept, r, target.path) for r in _refs(target.meta.get("superseded_by")))
                    and any(_matches(target, r, concept.path) for r in _refs(concept.meta.get("supersedes"))))
        if not resolved:
            out.append(Finding("contradiction", HUMAN, concept.path, f"contradicts {target.path} ({target.title}), "
                               "which still stands: supersede it by this concept, or drop the claim; "
                               f"{APPROVAL}"))
    return out


def _duplicate_titles(new: Snapshot, changes: list[ConceptChange]) -> list[Finding]:
    """Two concepts with one title in one folder; only the folders of changed concepts are read."""
    touched = {c.path for c in changes if c.change != "removed"}
    folders = {index.parent(p) for p in touched}
    by_title: dict[tuple[str, str], list[str]] = {}
    for path in new.concept_paths():
        if index.parent(path) not in folders or index.is_needs_merge(path):
            continue
        concept = _concept(new, path)
        if concept is not None:
            by_title.setdefault((index.parent(path), concept.title.casefold()), []).append(path)
    out = []
    for paths in by_title.values():
        for path in sorted(touched & set(paths)) if len(paths) > 1 else []:
            others = ", ".join(p for p in paths if p != path)
            out.append(Finding("duplicate-title", ERROR, path, f"has the same title as {others} in its folder; "
                               "one concept, one canonical home"))
    return out


# -- provenance ---------------------------------------------------------------------------


def provenance(repo: Repo, tier: Tier, base: str, head: str) -> list[CommitInfo]:
    """Commits in ``base..head`` that changed the tier, oldest first, with their okfgit trailers."""
    out = []
    for oid, author, message in repo.log(base, head):
        parents = repo.parents(oid)
        before = repo.tree_oid(parents[0], tier.prefix) if parents else None
        if before == repo.tree_oid(oid, tier.prefix):
            continue
        subject = message.split("\n", 1)[0].strip()
        out.append(CommitInfo(oid, subject, author, tuple(trailers.parse_trailers(message))))
    return list(reversed(out))


# -- helpers ------------------------------------------------------------------------------


def _dedupe(findings: Iterable[Finding]) -> list[Finding]:
    seen: dict[tuple[str, str, str, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.severity, f.code, f.file, f.message), f)
    return list(seen.values())


_ORDER = {ERROR: 0, HUMAN: 1, APPROVED: 2, WARNING: 3}


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (_ORDER.get(f.severity, 3), f.file, f.line or 0, f.code, f.message))
