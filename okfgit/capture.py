"""Capture: facts agents wrote into Claude Code's memory folder become commits.

Per memory file (recursively; ``MEMORY.md`` excluded):
- its blob OID is one okfgit wrote (projection state) -> skipped: the loop guard;
- a native Claude memory (``name``/``description``/``metadata.type`` or older top-level
  ``type``) -> migrated into OKF by *adding* keys (type, title, scope, okf_id, okf_source,
  okf_origin, generated) to the agent's bytes: every key and body byte it wrote is kept;
- an OKF file whose ``okf_id`` the KB has -> an agent edit: the concept is updated when its
  blob at HEAD is still what okfgit last projected; otherwise the master is kept and the
  agent's variant is committed beside it as ``<stem>.needs-merge.md``, with a warning.

One commit per tier touched (operation ``capture``). The agent's file is not touched here:
the projection that follows rewrites it, after the commit landed.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from okfgit import index, okf, state, switch
from okfgit.claude_home import memory_dir
from okfgit.context import Context
from okfgit.errors import OkfError, UsageError
from okfgit.git import blob_oid
from okfgit.kb import Concept, Snapshot, snapshot
from okfgit.plan import Plan, TierCommit, apply
from okfgit.tiers import Tier, Workspace, check_scope

MAX_BYTES = 1024 * 1024
CAPTURE_FOLDER = "memory"
NATIVE_TYPES = ("user", "feedback", "project", "reference")
AGENT_ACTOR = "claude-code/memory"


@dataclass(frozen=True)
class Captured:
    """One memory file that becomes (part of) a commit."""

    action: str  # "new" | "update" | "conflict"
    origin: str  # path relative to the memory folder
    file_oid: str
    okf_id: str
    tier: Tier
    kb_path: str
    data: bytes


@dataclass
class Report:
    enabled: bool
    reason: str
    memory_dir: Path | None = None
    captured: list[Captured] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (origin, why): bad input
    unchanged: list[str] = field(default_factory=list)  # okfgit's own files
    deleted: list[str] = field(default_factory=list)  # projected files an agent removed
    warnings: list[str] = field(default_factory=list)
    plan: Plan = field(default_factory=Plan)
    commits: list[tuple[str, str]] = field(default_factory=list)  # (tier label, commit)

    @property
    def conflicts(self) -> list[Captured]:
        return [c for c in self.captured if c.action == "conflict"]


def target_tier(ws: Workspace, to: str | None) -> Tier:
    """job when a run is active, else project when the repo has ``.okf/``, else global."""
    if to:
        return ws.tier(check_scope(to))
    if ws.run:
        return ws.tier("job")
    if ws.project_repo is not None:
        project = ws.tier("project")
        if project.exists() and snapshot(project).entries:
            return project
    return ws.tier("global")


def plan_capture(ctx: Context, ws: Workspace, *, to: str | None = None, force: bool = False) -> Report:
    """Read the memory folder and plan the capture commits; writes nothing."""
    if ws.project_repo is None:
        raise UsageError("capture needs a project repository: run it inside one or pass --repo")
    decision = switch.capture_decision(ctx, ws)
    report = Report(enabled=decision.enabled, reason=decision.reason)
    if not decision.enabled and not force:
        return report
    project_repo = ws.tier("project").open()
    choice = memory_dir(project_repo.main_workdir, ctx.environ, ctx.home)
    report.memory_dir = choice.path
    report.warnings.extend(choice.warnings)
    st = state.load(project_repo.common_dir)
    dest = target_tier(ws, to)
    snaps: dict[str, Snapshot] = {t.label: snapshot(t) for t in ws.active()}
    if dest.label not in snaps:
        snaps[dest.label] = snapshot(dest)
    by_id = _concepts_by_id(ws, snaps)
    by_origin = _concepts_by_origin(ws, snaps)
    taken: dict[str, set[str]] = {label: set(s.entries) for label, s in snaps.items()}
    seen: set[str] = set()
    for origin, file in _memory_files(choice.path, report):
        seen.add(origin)
        try:
            data = _read(file, choice.path)
        except OkfError as exc:
            report.skipped.append((origin, str(exc)))
            continue
        oid = blob_oid(data)
        if st.wrote(origin, oid):
            report.unchanged.append(origin)
            continue
        try:
            item = _classify(ctx, origin, data, oid, dest, by_id, by_origin, taken, st)
        except OkfError as exc:
            report.skipped.append((origin, str(exc)))
            continue
        if item is None:
            report.unchanged.append(origin)
            continue
        report.captured.append(item)
        if item.action == "conflict":
            report.warnings.append(
                f"{origin}: the concept changed both in the KB and in Claude memory; kept the KB's "
                f"version and committed the agent's as {item.tier.label}:{item.kb_path} (needs a person to merge)"
            )
    for origin in sorted(st.memory_files):
        if origin not in seen and origin not in {o for o, _ in report.skipped}:
            report.deleted.append(origin)
    for origin, why in report.skipped:
        report.warnings.append(f"skipped {choice.path / origin}: {why}")
    report.plan = _build_plan(report.captured, snaps)
    return report


def capture(ctx: Context, ws: Workspace, *, to: str | None = None, dry_run: bool = False) -> Report:
    """Plan and (unless ``dry_run``) commit the capture; then record the captured files as okfgit's."""
    report = plan_capture(ctx, ws, to=to)
    if dry_run or report.plan.empty:
        return report
    done = apply(ctx, report.plan)
    report.commits = [(c.tier.label, oid) for c, oid in done.commits]
    project_repo = ws.tier("project").open()
    # The agent's bytes are now in a commit: the next projection may replace the file.
    state.record_captured(project_repo.common_dir, {c.origin: c.file_oid for c in report.captured},
                          report.memory_dir)
    return report


def _concepts_by_id(ws: Workspace, snaps: dict[str, Snapshot]) -> dict[str, tuple[Tier, str, str]]:
    """okf_id -> (tier, kb path, blob oid) of the most specific tier holding it."""
    out: dict[str, tuple[Tier, str, str]] = {}
    for tier in reversed(ws.active()):  # global first, so more specific tiers overwrite
        snap = snaps[tier.label]
        for concept in snap.concepts():
            if concept.okf_id and not concept.path.endswith(".needs-merge.md"):
                out[concept.okf_id] = (tier, concept.path, concept.oid)
    return out


def _concepts_by_origin(ws: Workspace, snaps: dict[str, Snapshot]) -> dict[str, Concept]:
    """okf_origin -> the captured concept (most specific tier), to recognise a fact seen before."""
    out: dict[str, Concept] = {}
    for tier in reversed(ws.active()):
        for concept in snaps[tier.label].concepts():
            origin = concept.meta.get("okf_origin")
            if isinstance(origin, str) and not concept.path.endswith(".needs-merge.md"):
                out[origin] = concept
    return out


def _memory_files(root: Path, report: Report) -> list[tuple[str, Path]]:
    if not root.is_dir():
        return []
    out: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            full = Path(folder) / name
            rel = full.relative_to(root).as_posix()
            if rel == "MEMORY.md" or name.startswith(".") or not name.endswith(".md"):
                continue
            out.append((rel, full))
        for name in list(dirs):
            if (Path(folder) / name).is_symlink():
                report.skipped.append(((Path(folder) / name).relative_to(root).as_posix(),
                                       "a symlinked folder; okfgit never follows links"))
                dirs.remove(name)
    return out


def _read(file: Path, root: Path) -> bytes:
    if file.is_symlink():
        target = os.path.realpath(file)
        where = "leaves the memory folder" if not Path(target).is_relative_to(root.resolve()) else "is a symlink"
        raise UsageError(f"{where} ({target}); okfgit never follows links")
    size = file.stat().st_size
    if size > MAX_BYTES:
        raise UsageError(f"over 1 MiB ({size} bytes); not a memory")
    data = file.read_bytes()
    okf.check_text(data, file.name)
    return data


def _classify(
    ctx: Context, origin: str, data: bytes, oid: str, dest: Tier, by_id: dict[str, tuple[Tier, str, str]],
    by_origin: dict[str, Concept], taken: dict[str, set[str]], st: "state.State",
) -> Captured | None:
    parsed = okf.split(data, origin)
    if not parsed.has_frontmatter:
        raise UsageError("no frontmatter; not a Claude memory file")
    meta = parsed.meta
    _check_names(meta)
    okf_id = meta.get("okf_id")
    if okf.is_valid_okf_id(okf_id) and okf_id in by_id:
        tier, kb_path, head_oid = by_id[okf_id]
        if head_oid == oid:
            return None
        return _edit(origin, data, oid, str(okf_id), tier, kb_path, head_oid, taken, st,
                     lambda: _updated(data, origin, meta, tier))
    known = by_origin.get(origin)
    if known is not None and known.okf_id and known.okf_id in by_id:
        # A native file at the origin of a fact captured before: the agent rewrote it.
        if _same_fact(meta, parsed.body, known):
            return None
        tier, kb_path, head_oid = by_id[known.okf_id]
        return _edit(origin, data, oid, known.okf_id, tier, kb_path, head_oid, taken, st,
                     lambda: _migrate(ctx, origin, data, oid, dict(meta, okf_id=known.okf_id), tier, set()).data)
    return _migrate(ctx, origin, data, oid, meta, dest, taken[dest.label])


def _edit(
    origin: str, data: bytes, oid: str, okf_id: str, tier: Tier, kb_path: str, head_oid: str,
    taken: dict[str, set[str]], st: "state.State", updated: Callable[[], bytes],
) -> Captured:
    """An agent's edit: an update when the KB still holds what okfgit projected, else a conflict."""
    projected = st.memory_files.get(origin)
    if projected is not None and projected.get("oid") == head_oid:
        return Captured("update", origin, oid, okf_id, tier, kb_path, updated())
    sibling = _free_path(f"{kb_path[:-3]}.needs-merge.md", taken[tier.label])
    return Captured("conflict", origin, oid, okf_id, tier, sibling, data)


_PROFILE_KEYS = ("type", "title", "scope", "okf_id", "okf_source", "okf_origin", "generated")


def _same_fact(meta: dict[str, Any], body: bytes, concept: Concept) -> bool:
    """The native memory says what the captured concept says (okfgit's added keys aside)."""
    mine = {k: v for k, v in meta.items() if k not in _PROFILE_KEYS}
    theirs = {k: v for k, v in concept.meta.items() if k not in _PROFILE_KEYS}
    return mine == theirs and body == concept.body


def _check_names(meta: dict[str, Any]) -> None:
    for key in ("name", "okf_origin"):
        value = meta.get(key)
        if value is None:
            continue
        text = str(value)
        if "\x00" in text or ".." in text.split("/") or text.startswith("/") or "\\" in text:
            raise UsageError(f"frontmatter {key} {text!r} tries to leave the memory folder")


def _updated(data: bytes, origin: str, meta: dict[str, Any], tier: Tier) -> bytes:
    """An agent's edit of a concept, with the profile keys that must not drift put back."""
    fixes: dict[str, Any] = {}
    if meta.get("scope") != tier.name:
        fixes["scope"] = tier.name
    if not okf.one_line(meta.get("type")):
        fixes["type"] = "Note"
    return okf.set_keys(data, origin, fixes) if fixes else data


def _migrate(
    ctx: Context, origin: str, data: bytes, oid: str, meta: dict[str, Any], dest: Tier, taken: set[str],
) -> Captured:
    native = meta.get("metadata") if isinstance(meta.get("metadata"), dict) else {}
    native_type = okf.one_line(meta.get("type")) or okf.one_line(native.get("type")) or "Note"
    stem = posixpath.basename(origin)[:-3]
    name = okf.one_line(meta.get("name")) or stem
    description = okf.one_line(meta.get("description"))
    okf_id = meta.get("okf_id") if okf.is_valid_okf_id(meta.get("okf_id")) else okf.new_okf_id()
    adds: dict[str, Any] = {}
    if not okf.one_line(meta.get("type")):
        adds["type"] = native_type
    if not okf.one_line(meta.get("title")):
        adds["title"] = okf.title_from_path(name) if name else (description[:80] or stem)
    if "scope" not in meta or meta.get("scope") != dest.name:
        adds["scope"] = dest.name
    if meta.get("okf_id") != okf_id:
        adds["okf_id"] = okf_id
    if "okf_source" not in meta:
        adds["okf_source"] = "claude-memory"
    if meta.get("okf_origin") != origin:
        adds["okf_origin"] = origin
    if "generated" not in meta:
        adds["generated"] = {"by": AGENT_ACTOR, "at": ctx.iso_now()}
    kb_path = _free_path(f"{CAPTURE_FOLDER}/{okf.slugify(name)}.md", taken)
    return Captured("new", origin, oid, str(okf_id), dest, kb_path, okf.set_keys(data, origin, adds))


def _free_path(path: str, taken: set[str]) -> str:
    """``path``, or ``<stem>-2.md``, ``-3`` ... when taken; reserves the result."""
    candidate = path
    n = 2
    while candidate in taken:
        candidate = f"{path[:-3]}-{n}.md"
        n += 1
    taken.add(candidate)
    return candidate


def _build_plan(items: list[Captured], snaps: dict[str, Snapshot]) -> Plan:
    plan = Plan()
    by_tier: dict[str, list[Captured]] = {}
    for item in items:
        by_tier.setdefault(item.tier.label, []).append(item)
    for label, group in by_tier.items():
        tier = group[0].tier
        snap = snaps[label]
        changes: dict[str, bytes | None] = {c.kb_path: c.data for c in group}
        if "index.md" not in snap.entries:
            from okfgit.store import root_index

            changes["index.md"] = root_index(tier)
        changes.update(index.regenerate(snap, changes, index.affected_folders(list(changes))))
        trailers = [("Okf-Source", "claude-memory")]
        trailers += [("Okf-Captured", f"{c.okf_id} {_trailer_path(c.origin)} {c.file_oid}") for c in group]
        count = len(group)
        subject = f"okf: capture {count} fact{'s' if count != 1 else ''} from Claude Code memory"
        body = "\n".join(f"- {c.action}: {c.origin} -> {c.kb_path}" for c in group)
        old = {p: (snap.blob(p) if p in snap.entries else None) for p in changes}
        plan.commits.append(TierCommit(tier, "capture", subject, changes, tuple(trailers), body, old=old))
    return plan


def _trailer_path(origin: str) -> str:
    return origin.replace("%", "%25").replace(" ", "%20")

