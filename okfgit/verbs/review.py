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
import json
import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from okfgit import TOOL
from okfgit.knowledge import checks
from okfgit.flows import harvest
from okfgit.format import index_md as index
from okfgit.format import cites
from okfgit.format import actors as okf_actors
from okfgit.format import lifecycle, log_md
from okfgit.format import concept as okf
from okfgit.format import markdown as links
from okfgit.format import trailers
from okfgit.format.findings import ERROR, WARNING, Finding
from okfgit.context import Context
from okfgit.errors import UsageError, ValidationError
from okfgit.git.objects import Entry
from okfgit.git.repository import Repo
from okfgit.knowledge import cards, catalog
from okfgit.knowledge.catalog import TierCatalog
from okfgit.knowledge.snapshot import Concept, Lookup, Snapshot, TreeEntries
from okfgit.knowledge.tiers import Tier, Workspace
from okfgit.local.store import Store
from okfgit.progress import Progress, silent

HUMAN = "needs-human"
APPROVED = "approved"  # a needs-human finding a person approved (``--approved-by``)
MERGE = "merge"
REQUEST_CHANGES = "request-changes"
# What a maintainer may decide instead of merging the head as it stands (``review --verdict``):
# amend it, then merge the amended head once a review says merge; or close the pull request.
AMEND = "amend"
CLOSE = "close"
OUTCOMES = (AMEND, CLOSE)
REVIEW_VERSION = 3  # 2: findings in the one shape doctor prints too (code, file); 3: concepts by id, counts
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



@dataclass(frozen=True, slots=True)
class FieldChange:
    key: str
    change: str  # added | removed | changed
    old: Any = None
    new: Any = None


@dataclass(frozen=True, slots=True)
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

    @property
    def ident(self) -> str:
        """What the ``okf-review`` block names the concept by: its ``okf_id``, else its path."""
        return self.okf_id or self.path

    def to_json(self) -> dict[str, Any]:
        out = self.summary()
        out.update(type=self.type, title=self.title, description=self.description, old_oid=self.old_oid,
                   fields=[{"key": f.key, "change": f.change, "old": f.old, "new": f.new} for f in self.fields],
                   body_diff=self.body_diff, body=self.body, linked_from=list(self.linked_from))
        return out


@dataclass(frozen=True, slots=True)
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


@dataclass(slots=True)
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
    approvals_checked: str = ""  # what checked ``approved_by`` ("" : asserted on the command line)

    @property
    def approval_note(self) -> str:
        """How far the approvals are to be trusted, said next to them."""
        if self.approvals_checked:
            return f"checked: {self.approvals_checked}"
        return "asserted with --approved-by; okfgit did not verify it"
    outcome: str | None = None  # a maintainer's amend or close (``--verdict``), which decides over the checks

    @property
    def verdict(self) -> str:
        """The maintainer's outcome when one was given, else what the checks say."""
        return self.outcome or self.checked

    @property
    def checked(self) -> str:
        """What the findings say: request-changes, needs-human or merge."""
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
        """The ``okf-review`` block of a PR comment, kept small: verdict, the reviewed head,
        counts, findings and the ids of the concepts changed (``ConceptChange.ident``)."""
        outcome = {"outcome": {"verdict": self.outcome, "checks": self.checked}} if self.outcome else {}
        return {"version": REVIEW_VERSION, "verdict": self.verdict, **outcome, "base": self.base, "head": self.head,
                "approved_by": list(self.approved_by), "counts": self.counts(),
                "findings": [f.to_json() for f in self.findings], "concepts": [c.ident for c in self.concepts],
                "tool": TOOL}

    def to_json(self) -> dict[str, Any]:
        out = self.block()
        out.update(range=self.range, concepts=[c.to_json() for c in self.concepts],
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
        side = found[2].split(".")[0]
        branch = (repo.head_branch() or "").removeprefix("refs/heads/")
        if branch and side.removeprefix("origin/") == branch:
            hint = (f"HEAD is {branch} itself, the base: review compares a pull request's branch with its base, so "
                    f"check that branch out and run it there, or name what to review (`okfgit review HEAD~1..HEAD` "
                    "for the last commit)")
        else:
            hint = "is the branch pushed and checked out, and is the base the pull request's base?"
        raise UsageError(f"nothing to review: {found[2]} is empty (no commit on the head side that the base "
                         f"lacks); {hint}")
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
    for given in actors:
        actor = okf_actors.check(given, "--approved-by")
        if not lifecycle.is_human(actor):
            raise UsageError(f"--approved-by takes a person as an OKF actor, human:<id> (e.g. human:alice), "
                             f"not {given!r}")
        if actor not in out:
            out.append(actor)
    return tuple(out)


def approve(findings: list[Finding], approvers: tuple[str, ...], checked: str = "") -> list[Finding]:
    """Needs-human findings become approved ones, naming who approved them and, unless
    something ``checked`` the approvals (the Action: a person's review of this head), saying
    that they are only asserted."""
    if not approvers:
        return findings
    who = ", ".join(approvers) + ("" if checked else ", asserted")
    return [f.with_severity(APPROVED, f"{f.message} (approved by {who})") if f.severity == HUMAN else f
            for f in findings]


# -- the review ------------------------------------------------------------------------


def review(ctx: Context, ws: Workspace, spec: str | None = None, pr_body: str | None = None, *,
           base_ref: str | None = None, approved_by: Iterable[str] = (), approvals_checked: str = "",
           outcome: str | None = None) -> Review:
    """Review the project tier's changes in ``spec`` (see ``resolve_range``).

    ``approved_by``: ``human:`` actors whose approval turns needs-human findings into
    approved ones; ``approvals_checked`` says what checked them (the Action: approving
    reviews of the head by people other than the author), else they are reported as asserted.
    ``outcome``: a maintainer's ``amend`` or ``close``, recorded with the checks' own verdict
    and deciding over it.
    """
    approvers = check_approvers(approved_by)
    if outcome is not None and outcome not in OUTCOMES:
        raise UsageError(f"--verdict takes a maintainer's outcome, {' or '.join(OUTCOMES)}, not {outcome!r} "
                         "(merge, request-changes and needs-human come from the checks)")
    tier = ws.tier("project")
    repo = tier.open()
    base, head, label = resolve_range(repo, spec, base_ref, ctx.environ)
    graph = Graph(tier, repo, ctx.progress)
    old = Side(graph, base)
    new = Side(graph, head, keep=True)
    changed = changed_paths(old, new)
    out = Review(base, head, label)
    out.concepts = diff_concepts(old, new, changed)
    out.files = _other_files(changed)
    today = dt.date.fromisoformat(ctx.today())
    introduced, out.preexisting = _doctor_findings(old, new, today, _scope(out.concepts, out.files, new))
    out.findings = introduced + rules(old, new, out.concepts) + _settings(out.files) + _log_rewrites(old, new, out.files)
    out.commits = provenance(repo, tier, base, head)
    if pr_body is not None:
        claimed = {c.path for c in out.concepts if c.change != "removed"}
        out.harvest, problems = harvest.check(pr_body, new.snap, claimed, {c.oid: c.trailers for c in out.commits},
                                              ctx.environ.get("GITHUB_HEAD_REF") or _head_branch(repo, label))
        out.findings += problems
    out.findings = _sorted(approve(_dedupe(out.findings), approvers, approvals_checked))
    out.approved_by = approvers
    out.approvals_checked = approvals_checked
    out.outcome = outcome
    return out


# -- what a change reaches ----------------------------------------------------------------


class Node(NamedTuple):
    """What review needs of every concept of a tree, to find the concepts a change reaches
    without reading the others: who links to a changed concept, who shares its ``okf_id``,
    what a ``[[name]]`` names. Made from doctor's facts of the blob (``checks.checked_of``);
    an index's or a log's node holds only its blob OID."""

    oid: str
    okf_id: str | None
    name: str | None  # the frontmatter ``name`` when it is a string
    readable: bool
    frontmatter: bool
    links: list[str]  # where each markdown link of the body leads in the tier (a KB path)
    wiki: list[str]  # the target of each ``[[name]]`` link of the body
    similar: str | None  # its near-duplicate keys, packed (``checks.Checked.similar``)


def node_of(fact: checks.Checked | checks.Page) -> Node:
    if not isinstance(fact, checks.Checked):
        return Node(fact.oid, None, None, False, False, [], [], None)  # an index or a log: no concept
    return _node(fact.oid, fact.okf_id, fact.name, fact.readable, fact.has_frontmatter, fact.links, fact.similar)


def _node(oid: str, okf_id: str | None, name: str | None, readable: bool, frontmatter: bool,
          found: list[Any], keys: str | None) -> Node:
    return Node(oid, okf_id, name, bool(readable), bool(frontmatter),
                [where for kind, _, _, where in found if kind != "wiki" and where and where != "/"],
                [target for kind, target, *_ in found if kind == "wiki"], keys)


_FIELDS = ("oid", "okf_id", "name", "readable", "has_frontmatter", "links", "similar")
# A node's fields of each stored doctor fact, picked out by SQLite (a concept's fact is a JSON list
# in Checked's order; an index's or a log's is shorter): review parses these, not every finding.
_NODE_VIEW = (f"CASE WHEN json_array_length(value) = {len(checks.Checked._fields)} THEN json_array("
              + ", ".join(f"json_extract(value, '$[{checks.Checked._fields.index(f)}]')" for f in _FIELDS)
              + ") ELSE json_array(json_extract(value, '$[0]')) END")


def _node_from_view(value: list[Any]) -> Node:
    return _node(*value) if len(value) == len(_FIELDS) else Node(value[0], None, None, False, False, [], [], None)


Doctored = checks.Checked | checks.Page


class Graph:
    """Every concept's ``Node`` at the trees a review reads, from doctor's facts in the tier's
    store (``checks.doctor_kind``: a view of their rows, ``_NODE_VIEW``), updated from a tree
    diff with doctor's facts of each blob that changed (each checked once); the head's are
    stored back as doctor's facts, where the next review of the branch and the next doctor start."""

    def __init__(self, tier: Tier, repo: Repo, progress: Progress = silent) -> None:
        self.tier = tier
        self.repo = repo
        self.progress = progress  # told of a graph built from many blobs (the first review in a clone)
        doctor = checks.doctor_kind(tier)
        self.kind: catalog.Kind[Node] = catalog.Kind(doctor.name, self._node, _node_from_view, doctor.wants,
                                                       _NODE_VIEW)
        self.store = Store(repo.common_dir)
        self._facts: dict[tuple[str, str, int], Doctored] = {}
        self._last: TierCatalog[Node] | None = None

    def fact(self, path: str, entry: Entry, read: Callable[[str], bytes]) -> Doctored:
        """Doctor's facts of the markdown blob at ``path`` (``checks.fact_of``: a concept's
        ``Checked``, an index's or log's ``Page``): as stored for this blob, else checked here
        (each blob once)."""
        key = (path, entry.oid, entry.mode)
        fact = self._facts.get(key)
        if fact is None:
            fact = self._stored(path, entry)
            if fact is None:
                data = b"" if entry.is_link else read(entry.oid)
                fact = checks.fact_of(self.tier.name, path, entry, data)
            self._facts[key] = fact
        return fact

    def _stored(self, path: str, entry: Entry) -> Doctored | None:
        row = (self.store.rows(self.kind.name, self.tier.label, None, [path]) or {}).get(path)
        if row is None or row.value is None or row.oid != entry.oid:
            return None
        try:
            fact = checks.fact_from_json(json.loads(row.value))
        except (ValueError, TypeError):
            return None
        # A fact holds the blob's OID; a symlink's alone has neither a reading nor a finding.
        return fact if entry.is_link == (not fact.readable and not fact.findings) else None

    def _node(self, _label: str, path: str, entry: Entry, data: bytes) -> Node:
        return node_of(self.fact(path, entry, lambda _oid: data))

    def at(self, commit: str, tree: str | None, keep: bool) -> TierCatalog[Node]:
        """The nodes of the tree ``tree`` (at ``commit``), from the tree read last, else the
        store; ``keep``: store doctor's facts of it (the head's)."""
        if tree is None:
            return TierCatalog("")
        start = self._last or catalog.load(self.kind, self.store, self.tier.label)
        built = catalog.build_kind(self.kind, self.repo, self.tier, commit, tree, start, progress=self.progress)
        self._last = built
        if keep:
            entries = (self.repo.entries_in(tree, sorted(built.delta)) if built.base is not None
                       else self.repo.tree_entries(commit, self.tier.prefix))

            def fact_at(path: str) -> Doctored | None:
                entry = entries.get(path)
                return self._facts.get((path, entry.oid, entry.mode)) if entry is not None else None

            catalog.remember(self.kind, self.store, self.tier.label, built, fact_at)
            self.store.save()  # only a cache: never fails
        return built


class _Pages(Lookup["checks.Page"]):
    """Doctor's pages of one side's index and log files, each read when doctor asks for it
    (a scoped check reads a few; one that meets an index the root does not reach, all)."""

    def __init__(self, side: Side) -> None:
        super().__init__()
        self._side = side

    def _look(self, path: str) -> checks.Page | None:
        return self._side.page(path)


class Side:
    """One side of the range: the project tier at one commit, read as far as the change reaches.

    ``snap`` is a snapshot whose entries are looked up, not walked (``TreeEntries``); ``nodes`` every
    concept's ``Node``; ``keep``: the head, whose nodes are worth saving."""

    def __init__(self, graph: Graph, commit: str, keep: bool = False) -> None:
        self.graph = graph
        self.commit = commit
        self.keep = keep
        tier = graph.tier
        self.tree = graph.repo.tree_oid(commit, tier.prefix)
        self.entries = TreeEntries(graph.repo, commit, tier.prefix, self.tree)
        self.snap = Snapshot(tier, commit, self.entries, graph.repo.read_blob)

    @cached_property
    def _catalog(self) -> TierCatalog[Node]:
        return self.graph.at(self.commit, self.tree, self.keep)

    @cached_property
    def nodes(self) -> dict[str, Node]:
        """Every concept path's node (a path that could not be read has none)."""
        return {path: node for path, node in self._catalog.facts.items() if okf.is_concept_path(path)}

    @cached_property
    def _folders(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for where in (self.nodes, [p for p in self._catalog.problems if okf.is_concept_path(p)]):
            for path in where:
                out.setdefault(path.rpartition("/")[0], []).append(path)
        return out

    @cached_property
    def _owners(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for path, node in self.nodes.items():
            if node.okf_id:
                out.setdefault(node.okf_id, []).append(path)
        return out

    def in_folder(self, folder: str) -> list[str]:
        """The concept paths directly in ``folder``, in path order."""
        return sorted(self._folders.get(folder, ()))

    def owners(self, okf_id: str) -> list[str]:
        """The concept paths whose frontmatter ``okf_id`` is ``okf_id``, in path order."""
        return sorted(self._owners.get(okf_id, ()))

    def checked(self, path: str) -> checks.Checked | None:
        """Doctor's facts of the concept at ``path``; None when there is none."""
        fact = self._fact(path) if okf.is_concept_path(path) else None
        return fact if isinstance(fact, checks.Checked) else None

    def page(self, path: str) -> checks.Page | None:
        """Doctor's page of the ``index.md`` or ``log.md`` at ``path`` (not a symlink); None when there is none."""
        fact = self._fact(path) if okf.is_reserved(path) and path.endswith(".md") else None
        return fact if isinstance(fact, checks.Page) and not self.entries[path].is_link else None

    def _fact(self, path: str) -> Doctored | None:
        entry = self.entries.get(path)
        return self.graph.fact(path, entry, self.graph.repo.read_blob) if entry is not None else None

    def facts_for(self, only: set[str]) -> checks.Facts:
        """Doctor's facts of what its findings about ``only`` involve (``checks.check_snapshot``):
        the pages it reads (each read when it asks), the concepts in ``only``, every concept of
        a folder whose index is in ``only`` or that one of those indexes lists, the concepts
        sharing an ``okf_id`` with one in ``only`` or named by its ``superseded_by``, and those
        whose ``name`` a ``[[name]]`` link there may use."""
        want = {p for p in only if okf.is_concept_path(p)}
        wiki: set[str] = set()
        for path in sorted(p for p in only if p.rsplit("/", 1)[-1] == "index.md"):
            want.update(self.in_folder(index.parent(path)))
            page = self.page(path)
            if page is not None:
                want.update(where for _, _, where, *_ in page.entries if where and okf.is_concept_path(where))
                wiki.update(target for kind, target, _ in page.links if kind == "wiki")
        ids: set[str] = set()
        for path in sorted(p for p in only if okf.is_concept_path(p)):
            fact = self.checked(path)
            if fact is None:
                continue
            ids.update(fact.superseded_by, [fact.okf_id] if fact.okf_id else [])
            wiki.update(target for kind, target, *_ in fact.links if kind == "wiki")
        names = {c for name in wiki for c in (name.strip(), name.strip().removesuffix(".md"))}
        # One pass over the nodes finds them all (an index of every okf_id would cost more).
        want.update(p for p, node in self.nodes.items() if node.okf_id in ids or (names and node.name in names))
        concepts = {}
        for path in sorted(want):
            fact = self.checked(path)
            if fact is not None:
                concepts[path] = fact
        return checks.Facts(concepts, _Pages(self))

    def doctor(self, only: set[str], today: dt.date) -> list[Finding]:
        """Doctor's findings about the files in ``only`` (none when the tier is not in the tree)."""
        if self.tree is None:
            return []
        near = checks.near_pairs(self.snap, {p: n.similar for p, n in self.nodes.items()})
        return checks.check_snapshot(self.snap, today, facts=self.facts_for(only), only=only, near=near).findings


def changed_paths(old: Side, new: Side) -> list[tuple[str, Entry | None, Entry | None]]:
    """The blobs that differ between the two trees, in path order: (path, base entry, head
    entry), None where the path holds no blob (a tree diff: nothing unchanged is read)."""
    out = []
    for change in old.graph.repo.diff_paths(old.tree, new.tree) if old.tree != new.tree else []:
        a, b = old.entries.get(change.path), new.entries.get(change.path)
        if (a is None) != (b is None) or (a is not None and b is not None and a.oid != b.oid):
            out.append((change.path, a, b))
    return sorted(set(out), key=lambda c: c[0])


def diff_concepts(old: Side, new: Side, changed: list[tuple[str, Entry | None, Entry | None]]) -> list[ConceptChange]:
    """Concepts added, modified, removed, and renamed (an ``okf_id`` that changed path)."""
    concepts = [(p, a, b) for p, a, b in changed if okf.is_concept_path(p)]
    added = [p for p, a, b in concepts if a is None]
    removed = [p for p, a, b in concepts if b is None]
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
    for path in [p for p, a, b in concepts if a is not None and b is not None]:
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
    linked = backlinks(new, {p for c in out for p in (c.path, c.old_path) if p})
    return [dataclasses.replace(c, linked_from=tuple(sorted(set(linked.get(c.path, []) + linked.get(c.old_path or "", []))
                                                           - {c.path})))
            if c.path in linked or (c.old_path or "") in linked else c for c in out]


def backlinks(side: Side, targets: set[str]) -> dict[str, list[str]]:
    """For each of ``targets``, the concepts of ``side`` whose body links to it (markdown or
    ``[[name]]``), read from its nodes (nothing is parsed)."""
    nodes = side.nodes
    # A [[name]] reaches a target only by the target's file stem or frontmatter name.
    names = {n for t in targets if t in nodes for n in (cards.slug_of(t), nodes[t].name) if n}
    wiki: dict[str, str] | None = None
    out: dict[str, list[str]] = {}
    for source, node in nodes.items():
        if not (node.readable and node.frontmatter):
            continue
        found = [where for where in node.links if where in targets]
        for name in node.wiki:
            if name in names:
                if wiki is None:  # the names as doctor's facts give them, in path order (the last name wins)
                    wiki = links.wiki_names((p, n.name) for p, n in sorted(nodes.items())
                                            if n.readable and n.frontmatter)
                found.append(wiki.get(name, ""))
        for path in found:
            if path in targets and source not in out.setdefault(path, []):
                out[path].append(source)
    return out


def _scope(changes: list[ConceptChange], files: list[tuple[str, str]], new: Side) -> set[str]:
    """The files doctor looks at for a review: the changed ones, the concepts linking to a
    changed concept or linked from one, and the index files of the changed concepts' folders."""
    scope = {p for c in changes for p in (c.path, c.old_path, *c.linked_from) if p} | {p for _, p in files}
    for change in changes:
        node = new.nodes.get(change.path) if change.change != "removed" else None
        scope.update(node.links if node is not None else ())
    scope |= {index.index_path(index.parent(p)) for p in list(scope) if okf.is_concept_path(p)}
    return scope


def _okf_id(side: Side, path: str) -> str | None:
    concept = _concept(side, path)
    return concept.okf_id if concept else None


def _concept(side: Side, path: str | None) -> Concept | None:
    if path is None or path not in side.entries:
        return None
    try:
        return side.snap.concept(path)
    except ValidationError:
        return None


def _change(kind: str, old: Side, new: Side, old_path: str | None, path: str | None) -> ConceptChange:
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
            body = unified(old.snap.blob(old_path or ""), new.snap.blob(path or ""))
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


def _other_files(changed: list[tuple[str, Entry | None, Entry | None]]) -> list[tuple[str, str]]:
    return [("added" if a is None else "removed" if b is None else "modified", path)
            for path, a, b in changed if not okf.is_concept_path(path)]


# -- doctor: only what the branch introduces ----------------------------------------------


def _doctor_findings(old: Side, new: Side, today: dt.date, scope: set[str]) -> tuple[list[Finding], int]:
    """Doctor findings at the head that were not on the base (lines may move; messages do not),
    about the files in ``scope``.

    The base is only checked when the head has findings: a clean head needs one pass.
    """
    found = new.doctor(scope, today)
    before = {(f.code, f.file, f.message) for f in old.doctor(scope, today)} if found else set()
    introduced: list[Finding] = []
    kept = 0
    for f in found:
        if (f.code, f.file, f.message) in before:
            kept += 1
            continue
        introduced.append(f.with_severity(ERROR if f.severity == ERROR else WARNING))
    return introduced, kept


# -- the review rules ---------------------------------------------------------------------


def rules(old: Side, new: Side, changes: list[ConceptChange]) -> list[Finding]:
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


def _log_rewrites(old: Side, new: Side, files: list[tuple[str, str]]) -> list[Finding]:
    """A ``log.md`` entry the base had that the head changed or removed (OKF §9: entries are
    never edited; a correction is a new entry)."""
    out: list[Finding] = []
    for kind, path in files:
        if posixpath.basename(path) != log_md.NAME or kind == "added":
            continue
        try:
            gone = log_md.rewritten(old.snap.blob(path), new.snap.blob(path) if kind == "modified" else None, path)
        except ValidationError as exc:  # fail closed: what cannot be read cannot be shown kept
            out.append(Finding("log-rewritten", ERROR, path, f"{kind} a log okfgit cannot read as text ({exc}); "
                               "a log is append-only: restore it as it was and add entries"))
            continue
        for day, text in gone[:5]:
            line = text.split("\n", 1)[0]
            shown = line if len(line) <= 80 else line[:77] + "..."
            out.append(Finding("log-rewritten", ERROR, path, f"{'removes' if kind == 'removed' else 'changes or removes'} "
                               f"the entry {shown!r}{f' of {day}' if day else ''}: a log is append-only; keep the "
                               "entry as it was and add a correcting entry"))
        if len(gone) > 5:
            out.append(Finding("log-rewritten", ERROR, path, f"and {len(gone) - 5} more entries changed or removed"))
    return out


def _human_reviewed(change: ConceptChange, before: Concept | None) -> list[Finding]:
    if before is None or change.change == "added":
        return []
    people = lifecycle.verifiers(before.meta)
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


def _decision(change: ConceptChange, before: Concept | None, after: Concept | None) -> list[Finding]:
    if before is None or not lifecycle.is_decision(before.meta):
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


def _find(side: Side, ref: str, source: str = "") -> Concept | None:
    """The concept a ``supersedes``/``superseded_by`` value written in ``source`` names: a KB
    path, else an ``okf_id`` (the first concept carrying it, in path order)."""
    path = ref.strip().lstrip("/")
    extra = lifecycle.ref_candidates(ref, source) if source else []
    for candidate in (path, path + ".md", *extra):
        concept = _concept(side, candidate) if okf.is_concept_path(candidate) else None
        if concept is not None:
            return concept
    for candidate in side.owners(ref.strip()):
        concept = _concept(side, candidate)
        if concept is not None and _matches(concept, ref):
            return concept
    return None


def _supersession(concept: Concept, old: Side, new: Side) -> list[Finding]:
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
        if lifecycle.verifiers(target.meta) and _find(old, ref, concept.path) is not None:
            out.append(Finding("human-reviewed-superseded", HUMAN, concept.path, f"supersedes {target.path}, "
                               f"reviewed by {', '.join(lifecycle.verifiers(target.meta))}; {APPROVAL}"))
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


def _contradictions(concept: Concept, new: Side) -> list[Finding]:
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


def _duplicate_titles(new: Side, changes: list[ConceptChange]) -> list[Finding]:
    """Two standing concepts with one title in one folder (a superseded one does not count);
    only the folders of changed concepts are read."""
    touched = {c.path for c in changes if c.change != "removed"}
    folders = {index.parent(p) for p in touched}
    by_title: dict[tuple[str, str], list[str]] = {}
    for path in sorted(p for folder in folders for p in new.in_folder(folder)):
        if index.is_needs_merge(path):
            continue
        concept = _concept(new, path)
        # A superseded concept is history, not a second home: its successor may keep its title.
        if concept is not None and not _superseded(concept):
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
