"""What projection needs to know about each concept of a tier, kept up to date by tree diffs.

A ``Fact`` is a pure function of one blob (and its path): its OID, ``okf_id``, origin
filename, title, one-line hook and lifecycle (``status``, ``stale_after``). A tier's catalog maps every concept path of its KB
tree to its fact. It is cached in ``<git common dir>/okf/catalog.json`` keyed by the tree
OID, so when one concept changed, only that blob is read and parsed again (a tree diff
between the cached tree and the new one), which keeps projection's cost proportional to
the change and not to the KB (DESIGN.md rule 4). The cache can be deleted at any time.

The same machinery keeps other per-concept caches: a ``Kind`` names the cache file, its
version and how one blob becomes its fact (the read verbs keep theirs, see ``navcards``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from okfgit import TOOL, fsutil
from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.errors import OkfError, ValidationError
from okfgit.git import Entry, Repo
from okfgit.knowledge.tiers import Tier
from okfgit.local import paths
from okfgit.progress import Progress, silent

VERSION = 4  # 2: a concept without a string type is a problem, not a fact; 3: status and stale_after; 4: what Claude's recall order needs
CATALOG_FILE = paths.CATALOG
# Rewriting the whole cache costs as much as parsing this many concepts again, so a cache
# only this far behind its tree is left as it is: the next run diffs from the older tree.
SAVE_AFTER = 64
LINK_MODE = 0o120000


class Fact(NamedTuple):
    """One concept as projection sees it (a tuple: 10,000 of them load fast)."""

    oid: str
    okf_id: str | None
    origin: str | None
    title: str
    hook: str
    status: str  # OKF status as ``format.lifecycle`` reads it ("stable" when absent)
    stale_after: str  # the instant it goes stale, as okfgit shows it ("" when none or unreadable)
    type: str = ""
    captured: bool = False  # okf_source: claude-memory (an agent wrote it first)
    verified: bool = False  # human-reviewed (OKF `verified` by a human: actor, or unreadable: fail closed)
    summary_line: int = 0  # the last line holding a SUMMARY_KEYS key (Claude reads only the first 30)


F = TypeVar("F")


@dataclass
class TierCatalog(Generic[F]):
    """Every concept of one tier's KB tree: facts, and the paths that could not be read."""

    tree: str
    facts: dict[str, F] = field(default_factory=dict)
    problems: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (oid, why)
    reread: int = 0  # paths read from the repository to build this (not saved)

    @property
    def worth_saving(self) -> bool:
        """A cache this far behind its tree is worth rewriting (see ``SAVE_AFTER``)."""
        return self.reread > SAVE_AFTER


def fact_of(label: str, path: str, entry: Entry, data: bytes) -> Fact:
    """The fact for the blob at ``path``; ValidationError naming ``label:path`` when it is not a concept."""
    parsed = okf.parse_concept(data, f"{label}:{path}", is_link=entry.mode == LINK_MODE)
    meta = parsed.meta
    kind = meta.get("type")
    if not isinstance(kind, str) or not kind.strip():
        what = "has no type" if kind is None or isinstance(kind, str) else f"has a type that is not a string ({kind!r})"
        raise ValidationError(f"{label}:{path}: invalid frontmatter: {what}")
    okf_id = meta.get("okf_id")
    origin = meta.get("okf_origin")
    hook = okf.one_line(meta.get("description"))
    if not hook:
        hook = okf.first_sentence(parsed.body.decode("utf-8", errors="replace"))
    life = lifecycle.lifecycle(meta)
    return Fact(
        oid=entry.oid,
        okf_id=okf_id if isinstance(okf_id, str) and okf_id else None,
        origin=origin if isinstance(origin, str) and origin else None,
        title=okf.one_line(meta.get("title")) or okf.title_from_path(path),
        hook=hook,
        status=life.status,
        stale_after=life.stale_label() or "",
        type=okf.one_line(meta.get("type")),
        captured=meta.get("okf_source") == "claude-memory",
        verified=lifecycle.trust(meta).human_reviewed,
        summary_line=max(okf.key_lines(data).values(), default=0),
    )


@dataclass(frozen=True)
class Kind(Generic[F]):
    """One per-concept cache: its file under ``<git common dir>/okf/``, its format version,
    how a blob becomes a fact (raising OkfError when it is not a concept) and how a fact
    comes back from its JSON list."""

    file: str
    version: int
    fact: Callable[[str, str, Entry, bytes], F]
    from_json: Callable[[list[Any]], F]


def _fact_from_json(value: list[Any]) -> Fact:
    return Fact(*value)


PROJECTION: Kind[Fact] = Kind(CATALOG_FILE, VERSION, fact_of, _fact_from_json)


def build(repo: Repo, tier: Tier, commit: str, tree: str, cached: TierCatalog[Fact] | None,
          blobs: dict[str, bytes] | None = None, progress: Progress = silent) -> TierCatalog[Fact]:
    """Projection's catalog of ``tier`` at ``commit`` (see ``build_kind``)."""
    return build_kind(PROJECTION, repo, tier, commit, tree, cached, blobs, progress)


def build_kind(kind: Kind[F], repo: Repo, tier: Tier, commit: str, tree: str, cached: TierCatalog[F] | None,
               blobs: dict[str, bytes] | None = None, progress: Progress = silent) -> TierCatalog[F]:
    """The ``kind`` catalog of ``tier`` at ``commit`` (whose KB tree is ``tree``).

    Reuses ``cached`` as is when its tree is ``tree``, updates it from a tree diff when it
    is another tree still in the repository, and reads the whole tree otherwise. Every
    blob read on the way is added to ``blobs`` (OID -> bytes), so a projection that goes
    on to write the files does not read them twice.
    """
    blobs = {} if blobs is None else blobs
    if cached is not None and cached.tree == tree:
        return cached
    if cached is not None:
        try:
            changes = repo.diff_paths(cached.tree, tree)
        except Exception:  # noqa: BLE001 - a cached tree gc'd away (or any diff failure): read it all
            changes = None
        if changes is not None:
            return _updated(repo, tier, commit, tree, cached, [c.path for c in changes], blobs, kind, progress)
    return _full(repo, tier, commit, tree, blobs, kind, progress)


def _full(repo: Repo, tier: Tier, commit: str, tree: str, blobs: dict[str, bytes], kind: Kind[F],
          progress: Progress = silent) -> TierCatalog[F]:
    entries = repo.tree_entries(commit, tier.prefix)
    out: TierCatalog[F] = TierCatalog(tree, reread=len(entries))
    concepts = [p for p in sorted(entries) if okf.is_concept_path(p)]
    what = f"reading {tier.label} concepts"
    for done, path in enumerate(concepts, start=1):
        _add(out, repo, tier, path, entries[path], blobs, kind)
        if not done % 100:
            progress(what, done, len(concepts))
    progress(what, len(concepts), len(concepts))
    return out


def _updated(repo: Repo, tier: Tier, commit: str, tree: str, cached: TierCatalog[F], paths: list[str],
             blobs: dict[str, bytes], kind: Kind[F], progress: Progress = silent) -> TierCatalog[F]:
    out = TierCatalog(tree, dict(cached.facts), dict(cached.problems), reread=len(paths))
    found = repo.entries_in(tree, [p for p in paths if okf.is_concept_path(p)])
    what = f"reading {tier.label} concepts"
    for done, path in enumerate(paths, start=1):
        if not done % 100:
            progress(what, done, len(paths))
        out.facts.pop(path, None)
        out.problems.pop(path, None)
        entry = found.get(path)
        if entry is not None and entry.mode != 0o040000:
            _add(out, repo, tier, path, entry, blobs, kind)
    progress(what, len(paths), len(paths))
    return out


def _add(out: TierCatalog[F], repo: Repo, tier: Tier, path: str, entry: Entry, blobs: dict[str, bytes],
         kind: Kind[F]) -> None:
    try:
        data = repo.read_blob(entry.oid) if entry.mode != LINK_MODE else b""
        blobs[entry.oid] = data
        out.facts[path] = kind.fact(tier.label, path, entry, data)
    except OkfError as exc:
        out.problems[path] = (entry.oid, str(exc))


def path_of(common_dir: Path, kind: Kind[Any] = PROJECTION) -> Path:
    return paths.cache(common_dir, kind.file)


def load(common_dir: Path) -> dict[str, TierCatalog[Fact]]:
    """Projection's cached catalogs by tier label (see ``load_kind``)."""
    return load_kind(PROJECTION, common_dir)


def load_kind(kind: Kind[F], common_dir: Path) -> dict[str, TierCatalog[F]]:
    """The cached catalogs by tier label; empty when missing, stale or damaged (it is a cache)."""
    try:
        data = json.loads(path_of(common_dir, kind).read_bytes())
        if data.get("version") != kind.version or data.get("tool") != TOOL:
            return {}
        out: dict[str, TierCatalog[F]] = {}
        for label, raw in data["tiers"].items():
            facts = {p: kind.from_json(v) for p, v in raw["facts"].items()}
            problems = {p: (v[0], v[1]) for p, v in raw["problems"].items()}
            out[label] = TierCatalog(raw["tree"], facts, problems)
        return out
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return {}


def save(common_dir: Path, catalogs: dict[str, TierCatalog[Fact]]) -> None:
    """Write projection's cache (see ``save_kind``)."""
    save_kind(PROJECTION, common_dir, catalogs)


def save_kind(kind: Kind[F], common_dir: Path, catalogs: dict[str, TierCatalog[F]]) -> None:
    """Write the cache (no fsync: it is rebuilt from git whenever it is missing)."""
    data: dict[str, Any] = {
        "version": kind.version,
        "tool": TOOL,
        "tiers": {
            label: {
                "tree": cat.tree,
                "facts": cat.facts,
                "problems": cat.problems,
            }
            for label, cat in sorted(catalogs.items())
        },
    }
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    fsutil.atomic_write(path_of(common_dir, kind), text.encode("utf-8"), fsync=False)
