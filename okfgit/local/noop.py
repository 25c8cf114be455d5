"""Is there anything to do? The questions ``sync`` and ``project`` ask before any real work.

Git hooks call ``okfgit sync`` on every checkout, commit and merge, so "nothing to do" must
cost about a process start (DESIGN.md rule 4). This module answers with the standard
library only: the projection stamp (``fastpath``), sync's memory-folder stamp (``stamps``)
and the rule for which git hook invocations do work at all. The commands ask here, then
either print that nothing changed or load the library that does the work.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import NamedTuple

from okfgit.errors import UsageError
from okfgit.local import fastpath, paths, stamps

HOOK_NAMES = ("post-checkout", "post-merge", "post-commit", "post-rewrite")


class Verdict(Enum):
    """What a no-op check found."""

    WORK = "work"  # run the real thing
    UP_TO_DATE = "up-to-date"  # the tiers, the targets and the memory folder are as the last run left them
    HOOK_SKIPS = "hook-skips"  # a git hook invocation that moves nothing (see ``should_run``)


def sync(environ: Mapping[str, str], cwd: str, *, repo: str | None, run: str | None, hook: str | None = None,
         hook_args: Sequence[str] = (), fetch: bool = False, now: float = 0.0) -> Verdict:
    """Whether ``okfgit sync`` with these arguments has anything to do (``now``: the clock,
    for the global remote's fetch interval).

    "Up to date" is checked first, being the cheaper question. A git hook checks the memory
    folders only, not every file: the cost must not grow with the KB, and an in-place edit of
    a memory file is not something git did (the next sync without ``--hook``, such as Claude
    Code's SessionEnd, captures it). A git hook's no-op never touches the network; any other
    sync has work when ``--fetch`` asks for an exchange with the global remote or one is due
    (one small file read: ``local/exchange.py``).
    """
    if fetch or (hook is None and _exchange_due(environ, now)):
        return Verdict.WORK
    start = os.path.join(cwd, repo) if repo else cwd
    try:
        found = fastpath.find_repo(start)
    except (fastpath.Unsure, OSError):
        return Verdict.WORK  # a damaged .git file: the full run says what is wrong
    if found is None:
        return Verdict.WORK
    common = fastpath.common_dir(found[1])
    if os.path.lexists(paths.journal(common, found[1])):
        return Verdict.WORK  # a killed okfgit commit to finish (spec/okf-writes.md §4)
    if hook is None and operation(found[1]) is not None:
        return Verdict.WORK  # a merge under way: the full run says so (a hook never runs mid-merge)
    if fastpath.check(environ, cwd, repo=repo, scope="all", target="all", run=run) \
            and stamps.matches(common, deep=hook is None):
        return Verdict.UP_TO_DATE
    if hook is not None and not should_run(hook, hook_args, Path(found[1])):
        return Verdict.HOOK_SKIPS
    return Verdict.WORK


def _exchange_due(environ: Mapping[str, str], now: float) -> bool:
    """The global tier has a remote and its fetch interval has passed."""
    from okfgit.local import exchange  # only for a sync that is not a git hook's

    data = environ.get("XDG_DATA_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"),
                                                        ".local", "share")
    return exchange.due(os.path.join(data, "okf", ".git"), now)


def project(environ: Mapping[str, str], cwd: str, *, repo: str | None, scope: str, target: str,
            run: str | None) -> Verdict:
    """Whether ``okfgit project`` with these arguments would change nothing."""
    if fastpath.check(environ, cwd, repo=repo, scope=scope, target=target, run=run):
        return Verdict.UP_TO_DATE
    return Verdict.WORK


def should_run(hook: str, args: Sequence[str], gitdir: Path) -> bool:
    """Whether git hook ``hook``, called with ``args`` in the repo whose (per-worktree)
    git dir is ``gitdir``, should sync.

    A file checkout (post-checkout's third argument ``0``) moves nothing. During a rebase
    the checkouts and commits it makes are intermediate: the ``post-rewrite rebase`` at
    its end does the work once (git still has ``rebase-merge`` then, so post-rewrite is
    not subject to the rebase test). ``post-rewrite amend`` follows a post-commit that
    already ran. The shell scripts apply the same rule before starting okfgit at all.
    """
    if hook not in HOOK_NAMES:
        raise UsageError(f"unknown hook {hook!r}: okfgit's hooks are {', '.join(HOOK_NAMES)}")
    if hook == "post-checkout" and len(args) >= 3 and args[2] == "0":
        return False
    if hook == "post-rewrite":
        return bool(args) and args[0] == "rebase"
    if hook in ("post-checkout", "post-commit") and in_rebase(gitdir):
        return False
    return True


class Operation(NamedTuple):
    """What git is in the middle of in a working tree, and how a person finishes it."""

    what: str  # "a merge", "a rebase", ...
    finish: str  # the commands that finish (or abort) it


# Each operation by the file git keeps in the working tree's git dir while it lasts (a
# rebase's first: a conflicted pick in it is the rebase's, not a cherry-pick of its own).
_OPERATIONS = (
    ("rebase-merge", Operation("a rebase", "resolve the conflicts, `git add` them and `git rebase --continue`, "
                                           "or `git rebase --abort`")),
    ("rebase-apply", Operation("a rebase", "resolve the conflicts, `git add` them and `git rebase --continue`, "
                                           "or `git rebase --abort`")),
    ("MERGE_HEAD", Operation("a merge", "resolve the conflicts, `git add` them and `git commit`, or `git merge --abort`")),
    ("CHERRY_PICK_HEAD", Operation("a cherry-pick", "resolve the conflicts, `git add` them and `git cherry-pick "
                                                    "--continue`, or `git cherry-pick --abort`")),
    ("REVERT_HEAD", Operation("a revert", "resolve the conflicts, `git add` them and `git revert --continue`, "
                                          "or `git revert --abort`")),
    ("BISECT_LOG", Operation("a bisect", "`git bisect reset` when the bisect is done")),
)


def operation(gitdir: Path | str) -> Operation | None:
    """The merge, rebase, cherry-pick, revert or bisect git is in the middle of in the working
    tree whose (per-worktree) git dir is ``gitdir``, by the files git itself keeps meanwhile;
    None when git is idle there."""
    for name, found in _OPERATIONS:
        if os.path.exists(os.path.join(gitdir, name)):
            return found
    return None


def in_rebase(gitdir: Path) -> bool:
    """A rebase (either backend) is in progress in this worktree."""
    found = operation(gitdir)
    return found is not None and found.what == "a rebase"
