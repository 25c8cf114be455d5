"""Finishing what a killed okfgit write left, from the write journal (spec/okf-writes.md §4)."""

from __future__ import annotations

import os

import pygit2

from okfgit.context import Context
from okfgit.errors import UsageError
from okfgit.git.index import IndexLock
from okfgit.git.repository import Paths, Repo, worktree_oid
from okfgit.local import journal


def recover(repo: Repo, ctx: Context, wait_s: float) -> list[str]:
    """Finish what a killed okfgit write left in this working tree's journal.

    Takes the write lock (``commit_paths`` already holds it): the journal's writer is then
    known to be gone. What it left half-written goes first (temp files, libgit2's temp
    objects, a stale ``index.lock`` the journal names). An intent whose commit the ref
    points at gets its working tree and index update done (a file a person changed since is
    left alone and named); an intent whose ref never moved is dropped. Returns what was done,
    for the caller to report.
    """
    if not repo.needs_recovery():
        return []
    file = repo.journal_file
    with repo.write_lock(ctx, wait_s) as held:
        record = journal.load(file)
        intent = record.intent if record is not None else None
        # the killed commit's temp files are in the folders it was writing
        folders = {(repo.workdir / p).parent for p in intent.paths} if intent is not None else set()
        journal.sweep(repo.common_dir, repo.gitdir, repo.workdir, held.since_ns, folders)
        if record is None:
            return []
        notes: list[str] = []
        lock_file = repo.gitdir / "index.lock"
        if record.index_lock is not None:
            try:
                st = os.lstat(lock_file)
                if (st.st_dev, st.st_ino) == record.index_lock:
                    lock_file.unlink()
                    notes.append(f"removed the {lock_file} a killed okfgit left")
            except FileNotFoundError:
                pass
        if intent is not None:
            notes.extend(_finish(repo, ctx, intent))
        journal.clear(file)
        return notes


def _finish(repo: Repo, ctx: Context, intent: journal.Intent) -> list[str]:
    try:
        current: str | None = repo.resolve(intent.ref)
    except UsageError:
        current = None
    if current != intent.new:
        if current == intent.old:
            return []  # the ref never moved: nothing landed, nothing to finish
        return _reverted_after(repo, intent, current)
    before_at = Paths(repo.raw[intent.old].peel(pygit2.Tree) if intent.old else None)
    left: list[str] = []
    from okfgit.git.commit import update_worktree

    with IndexLock(repo, ctx, intent) as held:
        todo: dict[str, tuple[str, int] | None] = {}
        for path, entry in sorted(intent.paths.items()):
            allowed = {before_at.oid(path), entry[0] if entry else None}
            on_disk = worktree_oid(str(repo.workdir / path))
            staged = held.staged(path)
            if on_disk in allowed and staged in allowed:
                todo[path] = entry
            elif staged in allowed:
                # a person's bytes in the file: keep them, stage okfgit's commit only
                left.append(path)
                if entry is None:
                    held.remove(path)
                else:
                    held.stage(path, entry[0], entry[1])
            else:
                left.append(path)
        update_worktree(repo, ctx, held, todo, {})
        held.commit()
    notes = [f"finished okfgit's interrupted commit {intent.new[:12]}: the index and working tree of "
             f"{repo.workdir} now show it"]
    if left:
        notes.append(f"left alone (changed since by someone else): {', '.join(left)}")
    return notes


def _reverted_after(repo: Repo, intent: journal.Intent, current: str | None) -> list[str]:
    """The ref moved on after a killed okfgit commit: say when a later commit reverted it."""
    if current is None or not repo.descends(current, intent.new):
        return []
    at = Paths(repo.raw[current].peel(pygit2.Tree))
    lost = [p for p, e in sorted(intent.paths.items()) if at.oid(p) != (e[0] if e else None)]
    if not lost:
        return []
    quoted = " ".join(lost)
    return [f"okfgit's commit {intent.new[:12]} was interrupted before the index was updated, and a later "
            f"commit changed {', '.join(lost)} back; to restore okfgit's version: "
            f"git checkout {intent.new[:12]} -- {quoted}"]
