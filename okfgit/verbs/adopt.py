"""``adopt``: bring existing knowledge (an OKF bundle, a folder of notes) into a tier.

Adopting only *adds* what okfgit's profile needs and is missing: ``okf_id``, ``scope``,
``title`` (from the filename), ``description`` (the body's first sentence),
``okf_source: authored``, and ``type: Note`` where OKF's required ``type`` is missing.
Every other key keeps its value and its formatting, and every body byte stays, because
keys are added with ``okf.set_keys``. Adopted into a subfolder (``--dir``), a bundle's
bundle-absolute links (``/glossary/term.md``, OKF §6.1, resolved against the bundle root)
are re-rooted (``/retail/glossary/term.md``) so that every link that resolved in the
source resolves in the tier, and so are the paths in its path-valued frontmatter fields
(``sources[].resource`` and the like, ``format/resources.py``: ``policies/x.md`` ->
``retail/policies/x.md``); only those targets change, each is listed in the commit message and
the report, and links that did not resolve in the source are reported as the source's. No
other frontmatter value is rewritten. Missing ``index.md`` files are written;
existing ones keep their form, gaining only missing entries. It all lands as one commit,
or nothing does: any unreadable or unfit input is reported, with every problem listed,
before anything is written.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from okfgit import fsutil
from okfgit.format import index_md as index
from okfgit.format import concept as okf
from okfgit.format import markdown as links
from okfgit.format import resources
from okfgit.format.trailers import path_field
from okfgit.flows.concepts import actor, root_index, runstate_exclusion
from okfgit.context import Context
from okfgit.errors import OkfError, UsageError, ValidationError
from okfgit.knowledge.snapshot import Snapshot, snapshot
from okfgit.plan import Plan, TierCommit, apply, retry_moved, writing
from okfgit.knowledge.tiers import Tier, Workspace
from okfgit.format.words import plural
from okfgit.git.objects import shown

TREE = "tree"


@dataclass(slots=True)
class Adoption:
    """What adopting would do (or did): the plan plus a report of it."""

    tier: Tier
    folder: str
    source: str
    adopted: list[str] = field(default_factory=list)  # concept files added or given keys
    copied: list[str] = field(default_factory=list)  # other files copied byte for byte
    indexes: list[str] = field(default_factory=list)  # index.md files written
    skipped: list[str] = field(default_factory=list)  # hidden source files left out
    notes: list[str] = field(default_factory=list)
    rewrites: list[LinkRewrite] = field(default_factory=list)  # bundle-absolute links re-rooted
    unresolved: list[LinkRewrite] = field(default_factory=list)  # links already dangling in the source
    plan: Plan = field(default_factory=Plan)
    commit: str | None = None


@dataclass(frozen=True, slots=True)
class LinkRewrite:
    """A link in an adopted file: ``new`` is its re-rooted target ("" when left as written)."""

    file: str
    line: int
    old: str
    new: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "target": self.old, **({"new": self.new} if self.new else {})}

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.old}" + (f" -> {self.new}" if self.new else "")


@dataclass(frozen=True, slots=True)
class _Source:
    """One file to adopt: where it lands in the tier, how to name it in messages, its bytes."""

    dest: str
    name: str
    data: bytes
    rel: str = ""  # the path in the source bundle (for resolving its links)


def adopt_plan(ctx: Context, ws: Workspace, src: Path | None, scope: str, folder: str | None = None) -> Adoption:
    """Plan adopting ``src`` (or, when None, what is already committed in the tier) into ``scope``."""
    tier = ws.tier(scope)
    region = fsutil.safe_relpath(folder, "--dir") if folder else ""
    snap = snapshot(tier)
    problems: list[str] = []
    if src is None:
        adoption = Adoption(tier, region, TREE)
        files = list(_tree_files(snap, region, problems))
    else:
        source = _check_source(tier, src)
        adoption = Adoption(tier, region, str(source))
        files = list(_source_files(source, region, adoption, problems))
    rebase = region if src is not None else None
    changes = _concept_changes(tier, snap, files, adoption, problems, rebase)
    if problems:
        lines = "\n".join(f"  {p}" for p in problems)
        raise ValidationError(f"cannot adopt into {tier.label}: {plural(len(problems), 'problem')}, nothing was "
                              f"written:\n{lines}")
    _add_indexes(tier, snap, region, changes, adoption)
    if changes:
        where = f"{region}/" if region else "the root"
        what = "the tier's own files" if src is None else src.name or str(src)
        adoption.plan.commits.append(TierCommit(
            tier, "adopt", f"okf: adopt {plural(len(adoption.adopted), 'concept')} from {what} into {where}", changes,
            trailers=(("Okf-Adopted", str(len(adoption.adopted))), ("Okf-Source", _recorded(adoption.source))),
            body=_links_message(adoption),
            old={p: (snap.blob(p) if p in snap.entries else None) for p in changes}, base=snap.commit,
            actor=actor(ctx, tier),
        ))
    return adoption


def adopt(ctx: Context, ws: Workspace, src: Path | None, scope: str, folder: str | None = None) -> Adoption:
    """Adopt as one commit (see ``adopt_plan``); no commit when there is nothing to add."""
    def adopted() -> Adoption:
        with writing(ctx, ws.tier(scope)):
            adoption = adopt_plan(ctx, ws, src, scope, folder)
            if adoption.plan.empty:
                return adoption
            if adoption.tier.name == "job":
                adoption.plan.writes.extend(runstate_exclusion(ws))
            adoption.commit = apply(ctx, adoption.plan).raise_failed().commits[-1][1]
            return adoption

    return retry_moved(adopted)


# -- reading the input --------------------------------------------------------------


def _recorded(source: str) -> str:
    """The source as the commit records it: the folder's name ("tree" for the tier's own
    files), never the absolute path, which names the adopter's machine and travels with
    every push of the project (spaces written %20, as every trailer value)."""
    if source == TREE:
        return source
    return path_field(Path(source).name or TREE)


def _check_source(tier: Tier, src: Path) -> Path:
    if not src.exists():
        raise UsageError(f"{src}: no such folder")
    if not src.is_dir():
        raise UsageError(f"{src}: not a folder; adopt takes a folder of markdown files (an OKF bundle or notes)")
    source = src.resolve()
    if "\n" in str(source) or "\r" in str(source):
        raise UsageError(f"{src!r}: a source path must be one line")
    inside = fsutil.is_inside(source, tier.root)
    around = tier.root.exists() and fsutil.is_inside(tier.root, source) and not _hidden_below(tier.root, source)
    if inside or around:
        raise UsageError(
            f"{src}: overlaps the {tier.label} tier at {tier.root}; commit the files there and run "
            f"`okfgit adopt --scope {tier.name} [--dir SUBDIR]` without SRC to adopt them in place"
        )
    return source


def _hidden_below(inner: Path, outer: Path) -> bool:
    """``inner`` sits under a hidden folder of ``outer`` (like ``.okf/``), which adopt skips anyway."""
    rel = inner.resolve().relative_to(outer)
    return any(part.startswith(".") for part in rel.parts)


def _source_files(source: Path, region: str, adoption: Adoption, problems: list[str]) -> Iterator[_Source]:
    """Every regular file under ``source``; symlinks are problems, hidden entries are skipped."""
    for folder, dirs, names in os.walk(source):
        base = Path(folder)
        keep = []
        for name in sorted(dirs):
            full = base / name
            rel = full.relative_to(source).as_posix()
            if full.is_symlink():
                problems.append(f"{full}: is a symlink; okfgit never follows links out of the source")
            elif _not_utf8(full, problems):
                continue
            elif name.startswith("."):
                adoption.skipped.append(rel + "/")
            else:
                keep.append(name)
        dirs[:] = keep
        for name in sorted(names):
            full = base / name
            rel = full.relative_to(source).as_posix()
            if _not_utf8(full, problems):
                continue
            if name.startswith("."):
                adoption.skipped.append(rel)
                continue
            mode = full.lstat().st_mode
            if stat.S_ISLNK(mode):
                problems.append(f"{full}: is a symlink; okfgit never follows links out of the source")
                continue
            if not stat.S_ISREG(mode):
                problems.append(f"{full}: not a regular file")
                continue
            try:
                dest = fsutil.safe_relpath(f"{region}/{rel}" if region else rel)
                data = full.read_bytes()
            except (OSError, UsageError) as exc:
                problems.append(f"{full}: cannot be read ({getattr(exc, 'strerror', None) or exc})")
                continue
            yield _Source(dest, str(full), data, rel)


def _not_utf8(full: Path, problems: list[str]) -> bool:
    """A name that is not UTF-8 text is a problem: a tier's paths are text (spec/okf-format.md §1)."""
    if shown(full.name) == full.name:
        return False
    problems.append(f"{shown(str(full))}: its name is not UTF-8 text; rename it to adopt it")
    return True


def _tree_files(snap: Snapshot, region: str, problems: list[str]) -> Iterator[_Source]:
    """The markdown files already committed under ``region`` in the tier."""
    prefix = f"{region}/" if region else ""
    paths = [p for p in sorted(snap.entries) if p.startswith(prefix)]
    if region and not paths:
        raise UsageError(f"{snap.tier.label}:{region}/ has no committed files to adopt")
    for path in paths:
        if not path.endswith(".md"):
            continue  # other files are left exactly as they are
        name = f"{snap.tier.label}:{path}"
        if snap.entries[path].is_link:
            problems.append(f"{name}: is a symlink; okfgit never follows links in a tier")
        else:
            yield _Source(path, name, snap.blob(path))


# -- what changes -------------------------------------------------------------------


def _concept_changes(tier: Tier, snap: Snapshot, files: list[_Source], adoption: Adoption,
                     problems: list[str], rebase: str | None = None) -> dict[str, bytes | None]:
    """New bytes per path for every file that needs writing; problems collected, not raised.

    ``rebase``: the folder a copied bundle lands in ("" for the root), under which its
    bundle-absolute links are re-rooted; None when adopting files already in the tier.
    """
    changes: dict[str, bytes | None] = {}
    in_place = {f.dest for f in files if f.dest in snap.entries and snap.blob(f.dest) == f.data}
    taken = _ids_in_tier(snap, in_place)
    bundle = {f.rel for f in files}
    for file in files:
        existing = snap.blob(file.dest) if file.dest in snap.entries else None
        if existing is not None and existing != file.data:
            problems.append(f"{file.name}: would overwrite {tier.label}:{file.dest}, which differs; "
                            "adopt into another --dir or remove that file first")
            continue
        if not file.dest.endswith(".md"):
            if existing is None:
                changes[file.dest] = file.data
                adoption.copied.append(file.dest)
            continue
        try:
            marks = (len(adoption.rewrites), len(adoption.unresolved))
            if rebase is not None:
                file = _rebased(file, rebase, bundle, adoption)
                if rebase and file.rel == "index.md":
                    file = _without_version(file, adoption)
            parsed = okf.split(file.data, file.name)
            if not okf.is_concept_path(file.dest):
                new = file.data
            else:
                new = _with_profile(tier, file, parsed, taken, adoption.notes)
            _shift_lines(adoption, marks, _head_lines(new, parsed.body) - _head_lines(file.data, parsed.body),
                         _head_lines(file.data, parsed.body) + 1)
        except OkfError as exc:
            problems.append(str(exc))
            continue
        if new != existing:
            changes[file.dest] = new
            if okf.is_concept_path(file.dest):
                adoption.adopted.append(file.dest)
            else:
                adoption.copied.append(file.dest)
    return changes


def _ids_in_tier(snap: Snapshot, in_place: set[str]) -> dict[str, str]:
    """okf_id -> path for the tier's concepts, but those being adopted (checked as they come)."""
    out: dict[str, str] = {}
    for concept in snap.concepts():
        if concept.okf_id and concept.path not in in_place:
            out.setdefault(concept.okf_id, concept.path)
    return out


def _with_profile(tier: Tier, file: _Source, parsed: okf.Parsed, taken: dict[str, str], notes: list[str]) -> bytes:
    """The file with the missing profile keys added (and only those); ValidationError when unfit."""
    meta = parsed.meta
    updates: dict[str, Any] = {}
    if "type" not in meta:
        updates["type"] = "Note"
        if parsed.has_frontmatter:
            notes.append(f"{file.dest}: had frontmatter without the type OKF requires; added type: Note")
    elif not okf.one_line(meta["type"]) or not isinstance(meta["type"], str):
        raise ValidationError(f"{file.name}: type is empty or not text; give it a value by hand")
    if "title" not in meta:
        updates["title"] = okf.title_from_path(file.dest)
    if "description" not in meta:
        sentence = okf.first_sentence(parsed.body.decode("utf-8"))
        if sentence:
            updates["description"] = sentence
    if "scope" not in meta:
        updates["scope"] = tier.name
    elif meta["scope"] != tier.name:
        raise ValidationError(f"{file.name}: scope is {meta['scope']!r} but the target tier is {tier.name}")
    okf_id = meta.get("okf_id")
    if okf_id is None:
        okf_id = updates["okf_id"] = okf.new_okf_id()
    elif not okf.is_valid_okf_id(okf_id):
        raise ValidationError(f"{file.name}: okf_id {okf_id!r} is not a lower-case UUID")
    if okf_id in taken and taken[okf_id] != file.dest:
        raise ValidationError(f"{file.name}: okf_id {okf_id} is already used by {tier.label}:{taken[okf_id]}")
    taken[okf_id] = file.dest
    if "okf_source" not in meta:
        updates["okf_source"] = "authored"
    if not updates:
        return file.data
    return okf.set_keys(file.data, file.name, updates)


def _rebased(file: _Source, folder: str, bundle: set[str], adoption: Adoption) -> _Source:
    """``file`` with its bundle-absolute links re-rooted under ``folder``; its links that do
    not resolve in the source bundle are recorded as the source's (ValidationError when
    the file cannot be read)."""
    parsed = okf.split(file.data, file.name)
    head = file.data[: len(file.data) - len(parsed.body)]
    first = head.count(b"\n")  # body line n is file line first + n
    for link in links.extract(parsed.body):
        if link.kind != "md":
            continue
        target = links.resolve(file.rel, link.target)
        if not target.external and (target.escapes or not links.exists(target.path or "index.md", bundle)):
            adoption.unresolved.append(LinkRewrite(file.dest, first + link.line, link.target))
    head = _rebased_fields(file, parsed, folder, bundle, adoption)
    text, rewrites = links.rebase_absolute(parsed.body.decode("utf-8"), folder)
    adoption.rewrites.extend(LinkRewrite(file.dest, first + r.line, r.old, r.new) for r in rewrites)
    if not rewrites and head == file.data[: len(file.data) - len(parsed.body)]:
        return file
    return _Source(file.dest, file.name, head + text.encode("utf-8"), file.rel)


def _rebased_fields(file: _Source, parsed: okf.Parsed, folder: str, bundle: set[str], adoption: Adoption) -> bytes:
    """The head of ``file`` (up to its body) with its path-valued frontmatter fields re-rooted
    under ``folder`` (``resources.rebase``); the paths that name nothing in the source are
    recorded as the source's."""
    head = file.data[: len(file.data) - len(parsed.body)]
    moves: dict[str, str] = {}
    lines: dict[str, int] = {}
    exists = lambda p: links.exists(p, bundle)  # noqa: E731
    for found in resources.path_fields(parsed.meta):
        line = resources.line_of(file.data, found, _key_line(file.data, found.key)) or 1
        if resources.resolve(file.rel, found.value, exists) is None:
            adoption.unresolved.append(LinkRewrite(file.dest, line, found.value))
        moved = resources.rebase(file.rel, found.value, folder, exists)
        if moved is not None and found.value not in moves:
            moves[found.value] = moved
            lines[found.value] = line
    if not moves:
        return head
    adoption.rewrites.extend(LinkRewrite(file.dest, lines[old], old, new) for old, new in moves.items())
    return resources.rewrite(head, file.name, moves)


def _key_line(data: bytes, key: str) -> int | None:
    """The file line of a top-level frontmatter key."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.startswith(key.encode("ascii")) and line[len(key):].lstrip(b" \t").startswith(b":"):
            return number
        if number > 1 and line.rstrip(b"\r") == b"---":
            return None
    return None


def _without_version(file: _Source, adoption: Adoption) -> _Source:
    """A bundle's root index adopted into a subfolder, less its ``okf_version`` frontmatter:
    OKF §8 allows frontmatter only in the root ``index.md``, which the tier's own is."""
    parsed = okf.split(file.data, file.name)
    if not parsed.has_frontmatter or set(parsed.meta) - {"okf_version"}:
        return file
    body = parsed.body
    while body.startswith((b"\n", b"\r\n")):
        body = body[1:] if body.startswith(b"\n") else body[2:]
    version = parsed.meta.get("okf_version")
    adoption.notes.append(f"{file.dest}: left out its frontmatter (okf_version: {version}); only the tier's root "
                          "index.md may carry one (OKF §8)")
    return _Source(file.dest, file.name, (okf.BOM if parsed.bom else b"") + body, file.rel)


def _head_lines(data: bytes, body: bytes) -> int:
    return data[: len(data) - len(body)].count(b"\n")


def _shift_lines(adoption: Adoption, marks: tuple[int, int], delta: int, body_line: int) -> None:
    """The links just recorded for a file, at their lines in the file as adopted (the
    profile keys added at the end of the frontmatter move the body, from ``body_line`` on,
    down; the paths in the frontmatter stay where they are)."""
    if not delta:
        return
    for found, start in ((adoption.rewrites, marks[0]), (adoption.unresolved, marks[1])):
        found[start:] = [LinkRewrite(r.file, r.line + delta if r.line >= body_line else r.line, r.old, r.new)
                         for r in found[start:]]


def _links_message(adoption: Adoption) -> str:
    """The commit message body: every re-rooted link, and the links the source left dangling."""
    parts = []
    if adoption.rewrites:
        lines = "\n".join(f"- {r}" for r in adoption.rewrites)
        parts.append(f"Re-rooted {plural(len(adoption.rewrites), 'path')} under /{adoption.folder}/ (bundle-absolute "
                     f"links, path-valued frontmatter fields):\n\n{lines}")
    if adoption.unresolved:
        lines = "\n".join(f"- {r}" for r in adoption.unresolved)
        parts.append(f"Links and paths that did not resolve in the source either (kept as written):\n\n{lines}")
    return "\n\n".join(parts)


def _add_indexes(tier: Tier, snap: Snapshot, region: str, changes: dict[str, bytes | None],
                 adoption: Adoption) -> None:
    """Write the index.md files missing under ``region``, and add missing entries to the others.

    An existing index keeps its form (a bundle's ``* [T](p) - d`` under type headings, or
    okfgit's own): only entries it lacks are added, in that form. The folders above
    ``--dir`` are refreshed as ``okfgit new`` does, so the adopted folder is reachable
    from the root index.
    """
    present = set(snap.entries) | {p for p, d in changes.items() if d is not None}
    concepts = [p for p in present if okf.is_concept_path(p)]
    if not concepts:
        return
    new_root = "index.md" not in present
    if new_root:
        changes["index.md"] = root_index(tier)
    wanted = index.folders_of(p for p in concepts if _in_region(p, region))
    written = index.regenerate(snap, changes, wanted)
    changes.update(written)
    adoption.indexes.extend(sorted(set(written) | ({"index.md"} if new_root else set())))


def _in_region(path: str, region: str) -> bool:
    return not region or path.startswith(region + "/")
