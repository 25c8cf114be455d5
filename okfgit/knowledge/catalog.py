"""A per-concept cache of one tier's KB tree, kept up to date by tree diffs.

A tier's catalog maps every concept path of its KB tree to a fact that is a pure function
of the blob (and its path). It is cached under ``<git common dir>/okf/`` keyed by the tree
OID, so when one concept changed, only that blob is read and parsed again (a tree diff
between the cached tree and the new one), which keeps the cost proportional to the change
and not to the KB (DESIGN.md rule 4). The cache can be deleted at any time.

A cache is two files: the whole catalog as of some tree (``cards.json``), and what changed
since (``cards.delta.json``: the few paths later runs redid, with the tree and commit they
were read at). A run that redid a few concepts rewrites only the small second file, so no
run reads or writes more than the change, and the next run starts from the latest tree
without parsing anything again; past ``SAVE_AFTER`` changed paths the whole file is
rewritten and the delta dropped. A delta is used only on the base it was made from.

A ``Kind`` names the cache file, its version and how one blob becomes its fact: the concept
record every reader shares (``cards.CARDS``), the links of its body (``cards.LINKS``) and
doctor's findings of each file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from okfgit import TOOL, fsutil
from okfgit.format import concept as okf
from okfgit.errors import OkfError
from okfgit.git.objects import Entry
from okfgit.git.repository import Repo
from okfgit.knowledge.tiers import Tier
from okfgit.local import journal, paths
from okfgit.progress import Progress, silent

# Past this many paths changed since the whole cache was written, it is written again
# (the delta file would cost more to read than the rewrite saves).
SAVE_AFTER = 256


F = TypeVar("F")


class TierCatalog(Generic[F]):
    """Every concept of one tier's KB tree: facts, and the paths that could not be read.

    ``commit`` is the commit the tree was read at (a later reader at that commit needs no
    tree lookup); ``base`` the tree of the whole cache file this differs from by ``delta``
    (None: not in the file yet). ``reread`` (the paths read from the repository to build it)
    and ``changed`` (when updated from a tree diff: the paths it redid) are not saved.
    (A plain class: a dataclass costs every read verb its generated code at import.)
    """

    __slots__ = ("tree", "facts", "problems", "commit", "base", "delta", "reread", "changed")

    def __init__(self, tree: str, facts: dict[str, F] | None = None,
                 problems: dict[str, tuple[str, str]] | None = None, commit: str | None = None,
                 base: str | None = None, delta: frozenset[str] = frozenset(), *, reread: int = 0,
                 changed: list[str] | None = None) -> None:
        self.tree = tree
        self.facts: dict[str, F] = {} if facts is None else facts
        self.problems: dict[str, tuple[str, str]] = {} if problems is None else problems  # path -> (oid, why)
        self.commit = commit
        self.base = base
        self.delta = delta
        self.reread = reread
        self.changed = changed

    def __repr__(self) -> str:
        return f"TierCatalog(tree={self.tree!r}, {len(self.facts)} facts, {len(self.problems)} problems)"


class Kind(NamedTuple, Generic[F]):
    """One per-concept cache: its file under ``<git common dir>/okf/``, its format version,
    how a blob becomes a fact (raising OkfError when it is not a concept) and how a fact
    comes back from its JSON list."""

    file: str
    version: int
    fact: Callable[[str, str, Entry, bytes], F]
    from_json: Callable[[list[Any]], F]
    wants: Callable[[str], bool] = okf.is_concept_path  # the paths it keeps a fact for


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
        if cached.commit == commit:
            return cached
        return TierCatalog(tree, cached.facts, cached.problems, commit, cached.base, cached.delta)
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
    out: TierCatalog[F] = TierCatalog(tree, commit=commit, reread=len(entries))
    concepts = [p for p in sorted(entries) if kind.wants(p)]
    what = f"reading {tier.label} concepts"
    wanted = [entries[p].oid for p in concepts if not entries[p].is_link and entries[p].oid not in blobs]
    # Each blob parsed as it comes (in the order asked), while git reads the next ones.
    stream = repo.iter_blobs(wanted)
    try:
        for done, path in enumerate(concepts, start=1):
            entry = entries[path]
            if not entry.is_link and entry.oid not in blobs:
                for oid, data in stream:
                    blobs[oid] = data
                    if oid == entry.oid:
                        break
            _add(out, repo, tier, path, entry, blobs, kind)
            if not done % 100:
                progress(what, done, len(concepts))
    finally:
        stream.close()  # stopped part way (a fact that failed): its answers still in the pipe are dropped
    progress(what, len(concepts), len(concepts))
    return out


def _updated(repo: Repo, tier: Tier, commit: str, tree: str, cached: TierCatalog[F], paths: list[str],
             blobs: dict[str, bytes], kind: Kind[F], progress: Progress = silent) -> TierCatalog[F]:
    out = TierCatalog(tree, dict(cached.facts), dict(cached.problems), commit, cached.base,
                      cached.delta | frozenset(paths), reread=len(paths), changed=paths)
    found = repo.entries_in(tree, [p for p in paths if kind.wants(p)])
    what = f"reading {tier.label} concepts"
    for done, path in enumerate(paths, start=1):
        if not done % 100:
            progress(what, done, len(paths))
        out.facts.pop(path, None)
        out.problems.pop(path, None)
        entry = found.get(path)
        if entry is not None and not entry.is_tree:
            _add(out, repo, tier, path, entry, blobs, kind)
    progress(what, len(paths), len(paths))
    return out


def _add(out: TierCatalog[F], repo: Repo, tier: Tier, path: str, entry: Entry, blobs: dict[str, bytes],
         kind: Kind[F]) -> None:
    try:
        data = b"" if entry.is_link else blobs[entry.oid] if entry.oid in blobs else repo.read_blob(entry.oid)
        blobs[entry.oid] = data
        out.facts[path] = kind.fact(tier.label, path, entry, data)
    except OkfError as exc:
        out.problems[path] = (entry.oid, str(exc))


def path_of(common_dir: Path, kind: Kind[Any]) -> Path:
    return paths.cache(common_dir, kind.file)


def load_kind(kind: Kind[F], common_dir: Path) -> dict[str, TierCatalog[F]]:
    """The cached catalogs by tier label, each with what changed since the whole file was
    written; empty when missing, stale or damaged (it is a cache)."""
    try:
        data = json.loads(path_of(common_dir, kind).read_bytes())
        if data.get("version") != kind.version or data.get("tool") != TOOL:
            return {}
        out: dict[str, TierCatalog[F]] = {}
        for label, raw in data["tiers"].items():
            facts = {p: kind.from_json(v) for p, v in raw["facts"].items()}
            problems = {p: (v[0], v[1]) for p, v in raw["problems"].items()}
            out[label] = TierCatalog(raw["tree"], facts, problems, raw.get("commit"), raw["tree"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return {}
    for label, delta in _load_delta(kind, common_dir).items():
        whole = out.get(label)
        if whole is None or delta.get("base") != whole.tree:
            continue  # made from another version of the whole file: of no use
        try:
            facts, problems = dict(whole.facts), dict(whole.problems)
            for path in delta["paths"]:
                facts.pop(path, None)
                problems.pop(path, None)
            facts.update((p, kind.from_json(v)) for p, v in delta["facts"].items())
            problems.update((p, (v[0], v[1])) for p, v in delta["problems"].items())
            out[label] = TierCatalog(delta["tree"], facts, problems, delta.get("commit"), whole.tree,
                                     frozenset(delta["paths"]))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            continue
    return out


def _load_delta(kind: Kind[Any], common_dir: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(paths.cache_delta(common_dir, kind.file).read_bytes())
        if data.get("version") != kind.version or data.get("tool") != TOOL:
            return {}
        tiers = data["tiers"]
        return tiers if isinstance(tiers, dict) else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def remember(kind: Kind[F], common_dir: Path, label: str, built: TierCatalog[F],
             cached: dict[str, TierCatalog[F]]) -> None:
    """Keep ``built`` (tier ``label``) in the cache whose other tiers are ``cached``: nothing
    to do when it is what the cache holds, only the delta file when few paths changed since
    the whole file was written, else the whole file. Never fails: it is only a cache.
    A temp file a killed run left beside the cache goes first (``journal.sweep_okf_dir``)."""
    journal.sweep_okf_dir(common_dir)
    before = cached.get(label)
    if before is not None and before.tree == built.tree and before.commit == built.commit:
        return
    catalogs = {**cached, label: built}
    try:
        if built.base is not None and len(built.delta) <= SAVE_AFTER:
            _save_delta(kind, common_dir, catalogs)
        else:
            save_kind(kind, common_dir, catalogs)
    except (OkfError, OSError):
        pass


def _save_delta(kind: Kind[F], common_dir: Path, catalogs: dict[str, TierCatalog[F]]) -> None:
    tiers: dict[str, Any] = {}
    for label, cat in sorted(catalogs.items()):
        if cat.base is None or not (cat.delta or cat.tree != cat.base):
            continue
        tiers[label] = {"base": cat.base, "tree": cat.tree, "commit": cat.commit, "paths": sorted(cat.delta),
                        "facts": {p: cat.facts[p] for p in sorted(cat.delta) if p in cat.facts},
                        "problems": {p: cat.problems[p] for p in sorted(cat.delta) if p in cat.problems}}
    text = json.dumps({"version": kind.version, "tool": TOOL, "tiers": tiers}, separators=(",", ":"),
                      ensure_ascii=False)
    fsutil.atomic_write(paths.cache_delta(common_dir, kind.file), text.encode("utf-8"), fsync=False)


def save_kind(kind: Kind[F], common_dir: Path, catalogs: dict[str, TierCatalog[F]]) -> None:
    """Write the whole cache and drop its delta (no fsync: it is rebuilt from git whenever
    it is missing)."""
    data: dict[str, Any] = {
        "version": kind.version,
        "tool": TOOL,
        "tiers": {
            label: {
                "tree": cat.tree,
                "commit": cat.commit,
                "facts": cat.facts,
                "problems": cat.problems,
            }
            for label, cat in sorted(catalogs.items())
        },
    }
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    fsutil.atomic_write(path_of(common_dir, kind), text.encode("utf-8"), fsync=False)
    try:
        os.unlink(paths.cache_delta(common_dir, kind.file))
    except FileNotFoundError:
        pass
