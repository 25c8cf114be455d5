"""``okfgit mcp``: the read verbs, ``status``, ``note``, ``log`` and ``state`` as MCP tools.

This module knows nothing of the MCP SDK (``mcp_stdio`` is the adapter): each tool is a
function from its arguments to a ``ToolResult`` (the text the CLI prints, the JSON
``--json`` prints) and a thin call into the library the CLI uses. Failures are
``OkfError``s carrying the CLI's message; the adapter turns them into tool errors.

A ``Reader`` keeps the read model between calls: each call re-reads which tiers are in
view (the active run may change) and each tier's HEAD, and reads again only the tiers
whose HEAD moved (their store brought forward by a tree diff), so a commit made by anyone
between two calls is seen by the next one. The write rule: ``note``, ``log`` and ``state`` write to the active run's job tier
and nowhere else; no tool writes to the project or global tier.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from okfgit import TOOL
from okfgit.context import Context
from okfgit.errors import IntegrityError, OkfError, UsageError
from okfgit.format import actors
from okfgit.format import cites as cites_format
from okfgit.format import index_md as index
from okfgit.git.repository import Repo
from okfgit.knowledge import refs
from okfgit.knowledge.cards import TierCards
from okfgit.knowledge.merged import Merged
from okfgit.knowledge.tiers import Tier, Workspace, check_scope, open_workspace
from okfgit.plan import Plan
from okfgit.verbs import nav
from okfgit.render import nav as nav_render
from okfgit.flows import runs
from okfgit.flows.concepts import NewConcept

SCHEME = "okf"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns: text for the agent to read, and the same as JSON."""

    text: str
    data: dict[str, Any]
    extra: tuple[str, ...] = ()  # more text blocks (``cat``: its citation, apart from the bytes)
    blob: bytes | None = None  # ``cat`` of bytes that are not UTF-8: returned as a blob


@dataclass(frozen=True, slots=True)
class Resource:
    uri: str
    name: str
    description: str


class Reader:
    """The tiers in view, read at HEAD, kept between calls and refreshed when a HEAD moves."""

    def __init__(self, ctx: Context, repo: Path | None = None, run: str | None = None) -> None:
        self.ctx = ctx
        self.repo = repo
        self.run = run
        self._repos: dict[Path, Repo] = {}
        self._tiers: dict[tuple[str, Path], tuple[str | None, TierCards]] = {}
        self._views: dict[str, tuple[tuple[tuple[str, str | None], ...], Merged]] = {}
        self.actor = actors.MCP  # who writes: the client, once its ``initialize`` named it

    def meet(self, client: str | None) -> None:
        """The client's name from the MCP ``initialize`` request (``clientInfo.name``): its
        notes and log entries are ``agent:<name>``'s, never a person's (``agent:mcp`` unnamed)."""
        self.actor = actors.agent(client) if client else actors.MCP

    @property
    def writer(self) -> Context:
        """The context a tool writes with: ``ctx`` acting as the client, whatever ``$OKF_ACTOR`` says."""
        return self.ctx._replace(actor=self.actor)

    def workspace(self) -> Workspace:
        """Read again on every call: ``okfgit run start`` may have changed the active run."""
        return open_workspace(self.ctx, self.repo, self.run)

    def view(self, scope: str = "all", ws: Workspace | None = None) -> Merged:
        tiers = (ws or self.workspace()).selected(check_scope(scope, allow_all=True))
        heads = tuple((tier.label, self._head(tier)) for tier in tiers)
        cached = self._views.get(scope)
        if cached is not None and cached[0] == heads:
            return cached[1]
        view = Merged([self._cards(tier, head) for tier, (_, head) in zip(tiers, heads)], self.ctx.now)
        self._views[scope] = (heads, view)
        return view

    def _repo(self, tier: Tier) -> Repo:
        repo = self._repos.get(tier.repo_path)
        if repo is None:
            repo = self._repos[tier.repo_path] = tier.open()
        return repo

    def _head(self, tier: Tier) -> str | None:
        return self._repo(tier).head_commit()

    def _cards(self, tier: Tier, head: str | None) -> TierCards:
        """The tier at ``head`` (read again after a move: its store brought forward by a tree diff)."""
        key = (tier.label, tier.repo_path)
        known = self._tiers.get(key)
        if known is not None and known[0] == head:
            return known[1]
        cards = TierCards(tier, repo=self._repo(tier), commit=head)
        self._tiers[key] = (cards.commit, cards)
        return cards


# -- the tools ----------------------------------------------------------------------


def search(reader: Reader, args: Mapping[str, Any]) -> ToolResult:
    view = reader.view(_scope(args))
    like = _text(args, "similar")
    if like is not None:
        if _words(args, "words"):
            raise UsageError("search: similar takes no words: it compares the concept's own words")
        found_ref = refs.resolve_concept(view, like)
        alike = nav.similar(view, found_ref.concept, _text(args, "type"), _strings(args, "tags"),
                            limit=_count(args, "limit", nav.LIMIT))
        return ToolResult("\n".join(nav_render.similar_lines(view, found_ref.concept, alike)),
                          nav_render.similar_json(view, alike))
    found = nav.search(view, _words(args, "words"), _text(args, "type"), _strings(args, "tags"),
                       limit=_count(args, "limit", nav.LIMIT))
    # Lifecycle (deprecated last and marked, stale marked) comes with the line and the JSON.
    lines = [nav_render.concept_line(view, c) for c in found.hits] or ["no matching concepts"]
    if found.more_note:
        lines.append(found.more_note)
    return ToolResult("\n".join(lines), {"results": [nav.concept_json(view, c) for c in found.hits],
                                          "more": found.more})


def cat(reader: Reader, args: Mapping[str, Any]) -> ToolResult:
    view = reader.view(_scope(args))
    ref = _required(args, "ref")
    found = refs.resolve(view, ref)
    hit = found.hit
    data = view.tier(hit.tier).blob(hit.path)
    out = nav_render.cat_json(view, hit, data)
    notes = [f"citation: {hit.citation}"]
    if hit.concept is not None:
        notes += [f"shadows: {c.citation}" for c in view.shadows(hit.concept)]
        notes += nav_render.lifecycle_notes(view, hit.concept)
    warnings = [w for w in (found.stale, hit.problem) if w]
    notes += [f"warning: {w}" for w in warnings]
    if warnings:
        out["warnings"] = warnings
    text = out.get("content")
    if text is None:
        return ToolResult("", out, ("\n".join(notes),), blob=data)
    return ToolResult(text, out, ("\n".join(notes),))


def ls(reader: Reader, args: Mapping[str, Any]) -> ToolResult:
    view = reader.view(_scope(args))
    listing = nav.ls(view, _text(args, "path") or "")
    return ToolResult("\n".join(nav_render.listing_lines(view, listing)), nav.listing_json(view, listing))


def links(reader: Reader, args: Mapping[str, Any]) -> ToolResult:
    view = reader.view(_scope(args))
    report = nav.link_report(view, refs.resolve_concept(view, _required(args, "ref")).concept)
    return ToolResult("\n".join(nav_render.links_lines(view, report)), nav.links_json(view, report))


def status(reader: Reader, args: Mapping[str, Any]) -> ToolResult:
    from okfgit.verbs import status as status_mod  # capture and projection: loaded when asked

    ws = reader.workspace()
    st = status_mod.status(reader.ctx, ws)
    data = {"run": ws.run, **st.to_json(), "warnings": list(st.projection.warnings)}
    head = f"active run: {ws.run}" if ws.run else "active run: none (`okfgit run start SLUG` starts one)"
    return ToolResult(head + "\n" + status_mod.render(st), data)


def note(reader: Reader, args: Mapping[str, Any]) -> ToolResult:
    ws = reader.workspace()

    def make() -> NewConcept:
        planned = runs.note_plan(
            reader.writer, ws, _required(args, "type"), _required(args, "title"),
            claim=_text(args, "claim"), why=_text(args, "why"), evidence=_text(args, "evidence"),
            generalizes=_text(args, "generalizes") or "unsure", tags=tuple(_strings(args, "tags")),
            slug=_text(args, "slug"), cites=_text(args, "cites"), relation=_text(args, "relation"),
        )
        _job_only(planned.plan)
        return planned

    done = runs.note(reader.writer, ws, make)
    return _written(reader, ws, done, "noted", {"okf_id": done.okf_id})


def log(reader: Reader, args: Mapping[str, Any]) -> ToolResult:
    ws = reader.workspace()

    def make() -> tuple[Tier, Plan]:
        tier, plan = runs.log_plan(reader.writer, ws, _required(args, "text"))
        return tier, _job_only(plan)

    return _written(reader, ws, runs.log(reader.writer, ws, make), "logged in")


def state(reader: Reader, args: Mapping[str, Any]) -> ToolResult:
    ws = reader.workspace()

    def make() -> tuple[Tier, Plan]:
        tier, plan = runs.state_plan(reader.writer, ws, task=_text(args, "task"), where=_text(args, "where"),
                                     next_steps=_strings(args, "next") if "next" in args else None,
                                     questions=_strings(args, "questions") if "questions" in args else None)
        return tier, _job_only(plan)

    done = runs.write_state(reader.writer, ws, make)
    if done.commit is None:
        return ToolResult(f"{done.tier.label}:{runs.STATE} already says that; nothing was committed",
                          {"run": done.tier.run, "path": runs.STATE, "commit": None})
    return _written(reader, ws, done, "rewrote")


def _job_only(plan: Plan) -> Plan:
    """``plan``, refused unless it commits only to a job tier and writes nothing else
    (spec/okf-mcp.md, the write rule)."""
    if plan.writes or any(c.tier.name != "job" for c in plan.commits):
        raise IntegrityError("an MCP tool writes only to the active run's job tier; nothing was changed")
    return plan


def _written(reader: Reader, ws: Workspace, done: runs.RunChange, verb: str,
             more: Mapping[str, Any] = {}) -> ToolResult:
    """A write tool's result: what it wrote, cited as HEAD has it now, and the commit."""
    hit = reader.view("all", ws).hit(done.tier.label, done.path)
    cited = hit.citation if hit else f"{done.tier.label}:{done.path}"
    data = {"run": done.tier.run, "path": done.path, **more, "commit": done.commit, "citation": cited}
    return ToolResult(f"{verb} {cited} ({(done.commit or '')[:7]})", data)


Tool = Callable[[Reader, Mapping[str, Any]], ToolResult]

_SCOPE = {"type": "string", "enum": ["all", "job", "project", "global"],
          "description": "Which tiers: all (default: every active tier), or one tier."}
_REF = {"type": "string", "description": "A slug, frontmatter name, okf_id, KB path (folder/ = its index.md), "
                                         "tier:REF, or a citation pasted back (project:x.md@1234567)."}
_WORDS = {"type": "array", "items": {"type": "string"}}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    properties: dict[str, Any]
    run: Tool
    required: tuple[str, ...] = ()
    writes: bool = False
    schema: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        schema: dict[str, Any] = {"type": "object", "properties": self.properties, "additionalProperties": False}
        if self.required:
            schema["required"] = list(self.required)
        object.__setattr__(self, "schema", schema)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search",
        "Find concepts in every tier (job > project > global) whose type and tags match and whose title or "
        "description contains every word (case-insensitive). Each hit is cited tier:path@oid; deprecated "
        "and stale concepts are marked. Bodies are not searched: cat a hit to read it. The best `limit` hits "
        "are shown and `more` says how many matched beyond them: narrow with more words, a type or tags. "
        "With `similar` (a REF) it lists instead the concepts whose words are most like that concept's, with how "
        "alike (0 to 1; 0.85 or more: a near-duplicate, one fact said twice): check it before writing a note.",
        {"words": {**_WORDS, "description": "Words that must all appear in the title or description."},
         "similar": {**_REF, "description": "A concept (any REF) to find the concepts most alike; no words then."},
         "type": {"type": "string", "description": "Only concepts of this OKF type (Decision, Lesson, ...)."},
         "tags": {**_WORDS, "description": "Only concepts carrying every one of these tags."},
         "limit": {"type": "integer", "minimum": 0,
                   "description": f"Show at most this many hits (default {nav.LIMIT}; 0: all); `more` counts the rest."},
         "scope": _SCOPE},
        search,
    ),
    ToolSpec(
        "cat",
        "Read one concept (or an index.md, log.md or any file of a tier) exactly as committed at HEAD, "
        "with its citation tier:path@oid. An unknown or ambiguous REF lists candidates.",
        {"ref": _REF, "scope": _SCOPE}, cat, required=("ref",),
    ),
    ToolSpec(
        "ls",
        "List the folders and concepts at a KB path (default: the root) across the tiers in view, each "
        "concept cited tier:path@oid with its type, title and description.",
        {"path": {"type": "string", "description": "A KB folder such as decisions, or tier:path (project:decisions)."},
         "scope": _SCOPE},
        ls,
    ),
    ToolSpec(
        "links",
        "A concept's outgoing links (each resolved and cited, or dangling, external, escapes) and its "
        "backlinks from every tier in view.",
        {"ref": _REF, "scope": _SCOPE}, links, required=("ref",),
    ),
    ToolSpec(
        "status",
        "The tiers in view, the active run, and what needs a person: pending captures, conflicts, "
        "unreadable memory files, stale projections, hooks (what `okfgit status` shows).",
        {}, status,
    ),
    ToolSpec(
        "note",
        "Write one insight of the active run to its job tier (notes/<slug>.md, its index and a log.md "
        "entry) as one commit, as `okfgit note` does. Never writes to the project or global tier; "
        "without an active run it fails and names `okfgit run start`.",
        {"type": {"type": "string", "enum": list(runs.NOTE_TYPES)},
         "title": {"type": "string"},
         "claim": {"type": "string", "description": "The one-line claim (default: the title)."},
         "why": {"type": "string"},
         "evidence": {"type": "string", "description": "What shows it: a command, a measurement, a citation."},
         "generalizes": {"type": "string", "enum": list(runs.GENERALIZES),
                         "description": "Likely true beyond this run? `no` keeps it out of promotion."},
         "tags": {**_WORDS, "description": "Kebab-case tags."},
         "slug": {"type": "string", "description": "File name under notes/ (default: from the title)."},
         "cites": {"type": "string", "description": "The concept the note bears on (a REF in the project tier, "
                                                    "else global; project:REF or global:REF picks). Needs relation."},
         "relation": {"type": "string", "enum": list(cites_format.RELATIONS),
                      "description": "How the note bears on cites; contradicts makes promote propose a supersession."}},
        note, required=("type", "title"), writes=True,
    ),
    ToolSpec(
        "state",
        "Rewrite the active run's STATE.md, the current picture of its task, as one commit (as `okfgit state` "
        "does): each field given replaces that section, the others stay. Job tier only.",
        {"task": {"type": "string", "description": "What the run is for; its first sentence becomes the description."},
         "where": {"type": "string", "description": "Where the work stands now."},
         "next": {**_WORDS, "description": "The next steps, in order (replaces the list)."},
         "questions": {**_WORDS, "description": "The open questions (replaces the list)."}},
        state, writes=True,
    ),
    ToolSpec(
        "log",
        "Add a dated entry to the active run's log.md (job tier) as one commit, as `okfgit log` does.",
        {"text": {"type": "string"}}, log, required=("text",), writes=True,
    ),
)


def call(reader: Reader, name: str, args: Mapping[str, Any] | None) -> ToolResult:
    """Run tool ``name``; an OkfError (the CLI's message) for anything that goes wrong."""
    spec = next((t for t in TOOLS if t.name == name), None)
    if spec is None:
        raise UsageError(f"unknown tool {name!r}: use one of {', '.join(t.name for t in TOOLS)}")
    args = dict(args or {})
    unknown = sorted(set(args) - set(spec.properties))
    if unknown:
        raise UsageError(f"{name}: unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    return spec.run(reader, args)


# -- resources: every index.md of every tier in view ----------------------------------


def resources(reader: Reader) -> list[Resource]:
    view = reader.view()
    out = []
    for label in view.labels:
        tier = view.tier(label)
        for path in sorted(tier.entries):
            folder = index.parent(path)
            if path != index.index_path(folder):
                continue
            out.append(Resource(resource_uri(label, path), f"{label}:{path}",
                                f"The index of {label}:{folder + '/' if folder else '/'}"))
    return out


def read_resource(reader: Reader, uri: str) -> tuple[str, bytes]:
    """(the citation, the blob's bytes) of ``okf://<tier>/<path>``."""
    label, path = parse_uri(uri)
    view = reader.view()
    if label not in view.labels:
        raise UsageError(f"{uri}: the {label} tier is not in view (tiers in view: {', '.join(view.labels) or 'none'})")
    hit = view.hit(label, path)
    if hit is None:
        raise UsageError(f"{uri}: no such file in {label} at HEAD")
    return hit.citation, view.tier(label).blob(path)


def resource_uri(label: str, path: str) -> str:
    return f"{SCHEME}://{label}/{urllib.parse.quote(path)}"


def parse_uri(uri: str) -> tuple[str, str]:
    prefix = f"{SCHEME}://"
    if not uri.startswith(prefix):
        raise UsageError(f"{uri}: not an {SCHEME}:// resource")
    rest = urllib.parse.unquote(uri[len(prefix):])
    parts = rest.split("/", 2) if rest.startswith("job/") else rest.split("/", 1)
    if len(parts) < (3 if rest.startswith("job/") else 2):
        raise UsageError(f"{uri}: expected {prefix}<tier>/<path>")
    label = "/".join(parts[:-1])
    return label, parts[-1]


# -- marks and arguments --------------------------------------------------------------


def _scope(args: Mapping[str, Any]) -> str:
    return _text(args, "scope") or "all"


def _text(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{key} must be a string, not {json.dumps(value)}")
    return value


def _required(args: Mapping[str, Any], key: str) -> str:
    value = _text(args, key)
    if value is None or not value.strip():
        raise UsageError(f"{key} is required")
    return value


def _strings(args: Mapping[str, Any], key: str) -> list[str]:
    value = args.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{key} must be a list of strings")
    return list(value)


def _count(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{key} must be a whole number, 0 or more, not {json.dumps(value)}")
    return value


def _words(args: Mapping[str, Any], key: str) -> list[str]:
    """A list of words, or one string of words separated by spaces."""
    return [w for item in _strings(args, key) for w in item.split()]


def server_name() -> str:
    return "okfgit"


def server_version() -> str:
    return TOOL.split()[-1]


def check_error(exc: BaseException) -> str:
    """The text of a tool error: the CLI's message for an OkfError, a plain line otherwise."""
    if isinstance(exc, OkfError):
        return str(exc)
    return f"internal error: {type(exc).__name__}: {exc}"
