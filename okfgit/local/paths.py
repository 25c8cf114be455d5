"""The one owner of ``<git common dir>/okf/``: the folder and the name of every file in it.

okfgit keeps its per-repository files next to git's own, in the common git dir, so linked
worktrees share them exactly as they share Claude Code's memory folder. No other module
spells the folder or a file name; each asks here. What each file is for:

- ``state.db``: the store (``local/store.py``), an SQLite database (``state.db-journal`` beside
  it while a write is in progress): the ownership record (every file projection wrote and its
  blob OID: ``local/state.py``; the project repository only), the facts derived from each blob
  (every concept's card and the links of its body, what ``doctor`` finds in each markdown file on
  its own, what ``okfgit index`` needs of each ``index.md``: safe to delete), and a few records
  (the last git index found in step with HEAD, the global tier's exchanges with its remote,
  doctor's errors at a tree: safe to delete);
  ``state.json``: the ownership record as an earlier okfgit kept it, replaced by the database the
  first time the record is saved;
- ``fastpath.json``, ``sync.json``: the no-op stamps of projection and sync, files of their own
  because the git hook's no-op path reads them with nothing but ``open`` (safe to delete);
- ``sync.lock``: the sync lock (never deleted: see ``local/lock.py``);
- ``hook.log`` (and ``hook.log.1``): errors from the git hooks, written by the hook scripts;
- ``drafts/``: text typed into ``okfgit new --edit`` that could not be committed, and lines someone
  wrote into ``MEMORY.md``, kept before it is regenerated;
- ``pr-bodies/``: pull request bodies ``promote --open-pr`` passed to ``gh --body-file`` (kept, so a
  failing push or ``gh`` loses nothing);
- ``journal/``: one record per working tree of a commit in progress (``local/journal.py``),
  removed when the commit is complete; a record left behind is finished by the next write.

An earlier okfgit also kept per-blob caches and records in JSON files here (``LEGACY_CACHES``);
nothing reads them, and the first write of a store removes them.

Standard library only: the no-op fast path imports this on every git checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR = "okf"
STATE = "state.db"
STATE_JOURNAL = "state.db-journal"
LEGACY_STATE = "state.json"
FASTPATH_STAMP = "fastpath.json"
SYNC_STAMP = "sync.json"
LOCK = "sync.lock"
HOOK_LOG = "hook.log"
DRAFTS = "drafts"
PR_BODIES = "pr-bodies"
JOURNAL = "journal"

# Every name above, in the order the README lists them (a test keeps the README complete).
FILES = (STATE, STATE_JOURNAL, LEGACY_STATE, FASTPATH_STAMP, SYNC_STAMP, LOCK, HOOK_LOG, DRAFTS + "/",
         PR_BODIES + "/", JOURNAL + "/")

# What an earlier okfgit kept here and the store now holds: removed by the store's first write.
LEGACY_CACHES = tuple(f"{name}{suffix}" for name in ("cards", "links", "similar", "doctor", "graph", "indexes")
                      for suffix in (".json", ".delta.json")) + ("index.json", "exchange.json")

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


def fastpath_stamp(common_dir: StrPath) -> str:
    """Projection's no-op stamp (a string: the fast path works with ``os.path``)."""
    return os.path.join(os.fspath(common_dir), DIR, FASTPATH_STAMP)


def sync_stamp(common_dir: StrPath) -> str:
    """Sync's no-op stamp of the memory folder."""
    return os.path.join(os.fspath(common_dir), DIR, SYNC_STAMP)


def lock(common_dir: StrPath) -> Path:
    return okf_dir(common_dir) / LOCK


def hook_log(common_dir: StrPath) -> Path:
    """Where the git hook scripts append their errors (they spell it in shell too:
    ``$(git rev-parse --git-common-dir)/okf/hook.log``; a test keeps the two equal)."""
    return okf_dir(common_dir) / HOOK_LOG


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
