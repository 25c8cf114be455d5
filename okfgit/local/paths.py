"""The one owner of ``<git common dir>/okf/``: the folder and the name of every file in it.

okfgit keeps its per-repository files next to git's own, in the common git dir, so linked
worktrees share them exactly as they share Claude Code's memory folder. No other module
spells the folder or a file name; each asks here. What each file is for:

- ``state.db``: the ownership record (every file projection wrote and its blob OID), an
  SQLite database (``state.db-journal`` beside it while a write is in progress);
  ``state.json``: the same record as an earlier okfgit kept it, replaced by the database
  the first time the record is saved;
- ``cards.json``, ``doctor.json``, ``graph.json``, ``indexes.json``: per-file caches keyed by blob
  OID (safe to delete): ``cards.json`` each concept's card (its record for every reader),
  ``doctor.json`` what doctor found in each markdown file on its own, ``graph.json`` what review
  needs to find the concepts a change reaches (each concept's ``okf_id``, name and where its links
  lead), ``indexes.json`` what ``okfgit index`` needs of each ``index.md``; ``cards.delta.json``,
  ``doctor.delta.json``, ``graph.delta.json`` and ``indexes.delta.json`` what changed since (the
  few files a run redid, so that it does not rewrite the whole cache);
- ``fastpath.json``, ``sync.json``: the no-op stamps of projection and sync (safe to delete);
- ``index.json``: the last index found in step with HEAD (``local/index_stamp.py``; safe to delete);
- ``sync.lock``: the sync lock (never deleted: see ``local/lock.py``);
- ``hook.log`` (and ``hook.log.1``): errors from the git hooks, written by the hook scripts;
- ``drafts/``: text typed into ``okfgit new --edit`` that could not be committed, and lines someone
  wrote into ``MEMORY.md``, kept before it is regenerated;
- ``pr-bodies/``: pull request bodies ``promote --open-pr`` passed to ``gh --body-file`` (kept, so a
  failing push or ``gh`` loses nothing);
- ``exchange.json`` (the global tier's repository only, with a remote): the record of its
  exchanges with the remote (``local/exchange.py``; safe to delete);
- ``journal/``: one record per working tree of a commit in progress (``local/journal.py``),
  removed when the commit is complete; a record left behind is finished by the next write.

Standard library only: the no-op fast path imports this on every git checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR = "okf"
STATE = "state.db"
STATE_JOURNAL = "state.db-journal"
LEGACY_STATE = "state.json"
CARDS = "cards.json"
DOCTOR = "doctor.json"
GRAPH = "graph.json"
CARDS_DELTA = "cards.delta.json"
LINKS = "links.json"
LINKS_DELTA = "links.delta.json"
SIMILAR = "similar.json"
SIMILAR_DELTA = "similar.delta.json"
DOCTOR_DELTA = "doctor.delta.json"
GRAPH_DELTA = "graph.delta.json"
INDEXES = "indexes.json"
INDEXES_DELTA = "indexes.delta.json"
FASTPATH_STAMP = "fastpath.json"
SYNC_STAMP = "sync.json"
INDEX_STAMP = "index.json"
LOCK = "sync.lock"
HOOK_LOG = "hook.log"
DRAFTS = "drafts"
PR_BODIES = "pr-bodies"
EXCHANGE = "exchange.json"
JOURNAL = "journal"

# Every name above, in the order the README lists them (a test keeps the README complete).
FILES = (STATE, STATE_JOURNAL, LEGACY_STATE, CARDS, CARDS_DELTA, LINKS, LINKS_DELTA, SIMILAR, SIMILAR_DELTA, DOCTOR,
         DOCTOR_DELTA, GRAPH,
         GRAPH_DELTA, INDEXES, INDEXES_DELTA, FASTPATH_STAMP, SYNC_STAMP, INDEX_STAMP, LOCK, HOOK_LOG, DRAFTS + "/",
         PR_BODIES + "/", EXCHANGE, JOURNAL + "/")

# Without a repository (the global tier outside any project), drafts go here under $HOME.
_HOME_DRAFTS = (".cache", "okfgit", "drafts")

StrPath = str | os.PathLike[str]


def okf_dir(common_dir: StrPath) -> Path:
    """``<git common dir>/okf``."""
    return Path(common_dir) / DIR


def state(common_dir: StrPath) -> Path:
    return okf_dir(common_dir) / STATE


def legacy_state(common_dir: StrPath) -> Path:
    """``state.json``: the record an earlier okfgit kept (read once, then replaced by ``state``)."""
    return okf_dir(common_dir) / LEGACY_STATE


_DELTAS = {CARDS: CARDS_DELTA, LINKS: LINKS_DELTA, SIMILAR: SIMILAR_DELTA, DOCTOR: DOCTOR_DELTA, GRAPH: GRAPH_DELTA,
           INDEXES: INDEXES_DELTA}


def cache(common_dir: StrPath, name: str) -> Path:
    """A per-file cache file (``CARDS``, ``DOCTOR``, ``GRAPH`` or ``INDEXES``)."""
    if name not in _DELTAS:
        raise ValueError(f"not a cache file okfgit keeps: {name!r}")
    return okf_dir(common_dir) / name


def cache_delta(common_dir: StrPath, name: str) -> Path:
    """What changed since the cache file ``name`` was written (``CARDS_DELTA``, ``DOCTOR_DELTA``)."""
    if name not in _DELTAS:
        raise ValueError(f"not a cache file okfgit keeps: {name!r}")
    return okf_dir(common_dir) / _DELTAS[name]


def fastpath_stamp(common_dir: StrPath) -> str:
    """Projection's no-op stamp (a string: the fast path works with ``os.path``)."""
    return os.path.join(os.fspath(common_dir), DIR, FASTPATH_STAMP)


def sync_stamp(common_dir: StrPath) -> str:
    """Sync's no-op stamp of the memory folder."""
    return os.path.join(os.fspath(common_dir), DIR, SYNC_STAMP)


def index_stamp(common_dir: StrPath) -> str:
    """The last index found in step with HEAD (``local/index_stamp.py``)."""
    return os.path.join(os.fspath(common_dir), DIR, INDEX_STAMP)


def lock(common_dir: StrPath) -> Path:
    return okf_dir(common_dir) / LOCK


def hook_log(common_dir: StrPath) -> Path:
    """Where the git hook scripts append their errors (they spell it in shell too:
    ``$(git rev-parse --git-common-dir)/okf/hook.log``; a test keeps the two equal)."""
    return okf_dir(common_dir) / HOOK_LOG


def exchange(common_dir: StrPath) -> str:
    """The global tier's exchange record (a string: sync's no-op check reads it with ``os``)."""
    return os.path.join(os.fspath(common_dir), DIR, EXCHANGE)


def drafts(common_dir: StrPath | None, home: Path) -> Path:
    """Where a draft that could not be committed is kept: in the repository when there is
    one, else under ``$HOME/.cache/okfgit``."""
    if common_dir is None:
        return home.joinpath(*_HOME_DRAFTS)
    return okf_dir(common_dir) / DRAFTS


def pr_body(common_dir: StrPath, branch: str, part: int = 0, full: bool = False) -> Path:
    """Where a pull request body of ``branch`` is kept: ``<branch>.md`` (what ``gh pr create`` gets),
    ``<branch>.part-<n>.md`` (the comments continuing a harvest block too long for one body) and
    ``<branch>.full.md`` (the whole body, when it had to be split). Characters other than letters,
    digits, ``.``, ``_`` and ``-`` in the branch name become ``-``."""
    name = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in branch)
    suffix = ".full" if full else f".part-{part}" if part else ""
    return okf_dir(common_dir) / PR_BODIES / f"{name}{suffix}.md"


def journal(common_dir: StrPath, gitdir: StrPath) -> Path:
    """The write journal of the working tree whose git dir is ``gitdir`` (each working tree
    has its own index and HEAD, so its own record)."""
    main = os.path.realpath(gitdir) == os.path.realpath(common_dir)
    name = "main" if main else "worktree-" + Path(gitdir).name
    return okf_dir(common_dir) / JOURNAL / f"{name}.json"
