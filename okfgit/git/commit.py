"""One commit built from an in-memory tree, the branch moved by compare-and-swap, then exactly
the written paths updated in the working tree and the index (spec/okf-writes.md §2).

Reads come from tree objects; the commit is HEAD's tree plus the changed blobs, never the
user's staging area. The branch ref moves from the old HEAD to the new commit only if it
still points at the old HEAD (``RefMoved`` otherwise), and then the written paths land in the
working tree and the index, like ``git commit --only <paths>``: anything else the user had
staged stays staged. The repository's write lock is held throughout, git's ``index.lock``
from reading the index to replacing it (``index``), and the intent is journalled before the
ref moves, so that the next okfgit write finishes a commit whose process died after it
(``recovery``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from okfgit import fsutil
from okfgit.context import Context
from okfgit.errors import (IntegrityError, OkfError, RecoveryPending, RefMoved, RepoStateError, UnwritableError,
                           UsageError)
from okfgit.git.index import IndexLock
from okfgit.git.repository import Paths, Repo
from okfgit.local import journal

# A commit of up to this many paths fsyncs each file it writes into the working tree; a
# bigger one writes them without and makes its objects durable with one filesystem sync
# before the ref moves (spec/okf-writes.md §2): the committed bytes outlive a power cut
# either way, and a few fsyncs cost less than a flush of a busy filesystem.
FSYNC_EACH_UP_TO = 32


def commit_paths(repo: Repo, ctx: Context, changes: Mapping[str, bytes | None], message: str, *,
                 branch: str | None = None, new_branch: bool = False, merge_parent: str | None = None,
                 base: str | None = None) -> str:
    """Commit ``changes`` (repo path -> bytes, None to delete) as one commit; its OID.

    With ``branch`` the commit goes on that branch (created from HEAD with ``new_branch``)
    and the working tree is not touched. With ``merge_parent`` it is a merge commit: that
    commit is its second parent (the tree is still HEAD's tree plus ``changes``). ``base``,
    when given, is the commit the changes were planned from: if the branch moved since,
    nothing is written (RefMoved), as when another writer moves it during the commit.

    Either the ref does not move (an exception, nothing changed), or the index and working
    tree show the new commit when this returns; a failure after the ref moved raises
    RecoveryPending, and the journal lets the next okfgit write finish it.
    """
    for path in changes:
        fsutil.safe_relpath(path)
    with repo.write_lock(ctx) as held:
        repo.recover(ctx)
        sweep(repo, held.since_ns, changes)
        if branch is not None:
            return _commit_to_branch(repo, ctx, changes, message, branch, new_branch, base, merge_parent)
        return _land(repo, ctx, changes, message, base,
                     lambda parent: _make_commit(repo, ctx, parent, changes, message, merge_parent))


def fast_forward(repo: Repo, ctx: Context, target: str) -> list[str]:
    """Move the current branch forward to ``target`` (a descendant of HEAD, or any commit on
    an unborn branch) and update exactly the paths that differ, like ``commit_paths``:
    refuses, changing nothing, when the repository is busy or a path to be updated has
    uncommitted edits. Returns the paths updated."""
    with repo.write_lock(ctx) as held:
        repo.recover(ctx)
        parent = repo.head_commit()
        changes: dict[str, bytes | None] = {
            c.path: (repo.read_blob(c.new) if c.new else None)
            for c in repo.diff_paths(repo.tree_oid(parent), repo.tree_oid(target))
        }
        for path in changes:
            fsutil.safe_relpath(path)  # a tree from elsewhere may hold a path git would never write
        sweep(repo, held.since_ns, changes)
        _land(repo, ctx, changes, f"fast-forward to {target[:12]}", parent or "", lambda _: target)
        return sorted(changes)


def sweep(repo: Repo, since_ns: int, changes: Mapping[str, object] = {}) -> list[Path]:
    """Remove what killed okfgit writes left (``journal.sweep``), in the folders of ``changes``
    too; the caller holds the write lock taken at ``since_ns``."""
    folders = {repo.workdir / d for d in {p.rpartition("/")[0] for p in changes}}
    return journal.sweep(repo.common_dir, repo.gitdir, repo.workdir, since_ns, folders)


def _commit_to_branch(repo: Repo, ctx: Context, changes: Mapping[str, bytes | None], message: str, branch: str,
                      new_branch: bool, base: str | None, merge_parent: str | None) -> str:
    ref = f"refs/heads/{branch}"
    if new_branch:
        if repo.branch_exists(branch):
            raise UsageError(f"branch {branch!r} already exists in {repo.workdir}")
        parent = repo.head_commit()
    else:
        parent = repo.resolve(ref)
    _check_base(repo, base, parent, ref)
    _check_folders(repo, changes, parent, on_disk=False)
    with _noted(repo, ctx):
        commit = _make_commit(repo, ctx, parent, changes, message, merge_parent)
        move_ref(repo, ctx, ref, commit, None if new_branch else parent, message)
    return commit


@contextmanager
def _noted(repo: Repo, ctx: Context) -> Iterator[None]:
    """A journal record (with no intent) while objects are written outside ``IndexLock``: a
    writer killed here leaves a record, so the next command that opens the repository
    recovers it and sweeps the objects it left half-written."""
    file = repo.journal_file
    journal.save(file, journal.Record(os.getpid(), ctx.clock()), durable=False)
    try:
        yield
    finally:
        journal.clear(file)


def _land(repo: Repo, ctx: Context, changes: Mapping[str, bytes | None], message: str, base: str | None,
          make: Callable[[str | None], str]) -> str:
    """Move the checked-out branch to ``make(parent)`` and update ``changes`` in the working
    tree and index: the protocol of spec/okf-writes.md §2 (the caller holds the write lock)."""
    ref = repo.check_writable_state()
    with IndexLock(repo, ctx) as held:
        parent = repo.head_commit()
        _check_base(repo, base, parent, ref)
        _check_folders(repo, changes, parent, on_disk=True)
        _check_writable(repo, changes)
        dirty = repo.dirty_paths(changes, parent, {p: held.staged(p) for p in changes})
        if dirty:
            raise RepoStateError(
                f"{repo.workdir}: uncommitted edits in {', '.join(sorted(dirty))}; "
                "commit or stash them first (nothing was changed)"
            )
        commit = make(parent)
        if len(changes) > FSYNC_EACH_UP_TO:
            fsutil.sync_filesystem(repo.common_dir / "objects")  # the bytes outlive a power cut here
        lookup = Paths(repo.raw[commit].peel(pygit2.Tree))
        paths: dict[str, tuple[str, int] | None] = {}
        for path, data in changes.items():
            item = lookup(path) if data is not None else None
            paths[path] = (str(item.id), int(item.filemode)) if item is not None else None
        held.record.intent = journal.Intent(ref, parent, commit, paths)
        journal.save(repo.journal_file, held.record, durable=True)
        journal.crash_point(ctx.environ, "before-ref")
        try:
            move_ref(repo, ctx, ref, commit, parent, message)
        except IntegrityError:
            held.record.intent = None
            journal.save(repo.journal_file, held.record, durable=False)
            raise
        journal.crash_point(ctx.environ, "after-ref")
        try:
            update_worktree(repo, ctx, held, paths, changes)
            held.commit()
            return commit
        except (OSError, OkfError) as exc:
            failure: Exception = exc
    # The ref moved: finish on the spot (the journal still holds the intent), or say so.
    try:
        repo.recover(ctx)
    except (OSError, OkfError) as exc:
        failure = exc
    else:
        if not journal.pending(repo.journal_file):
            return commit
    raise RecoveryPending(
        f"{repo.workdir}: the commit {commit[:12]} landed on {ref}, but updating the working tree "
        f"and index did not finish ({failure}); the next okfgit command finishes it (`okfgit status` "
        "will), and until then do not commit in this repository"
    ) from failure


def _check_base(repo: Repo, base: str | None, parent: str | None, ref: str) -> None:
    if base is not None and base != (parent or ""):
        raise RefMoved(
            f"{repo.workdir}: {ref} moved while okfgit was preparing this change (another write "
            "landed); nothing was changed, run it again"
        )


def _check_writable(repo: Repo, changes: Mapping[str, bytes | None]) -> None:
    """Refuse before committing when a written file or its folder cannot be written:
    after the ref moved it would be too late to say "nothing was changed"."""
    problems: list[str] = []
    folder_ok: dict[str, bool] = {}  # each folder judged once, however many files go in it
    for path, data in sorted(changes.items()):
        parent = path.rpartition("/")[0]
        if parent not in folder_ok:
            folder = repo.workdir / parent
            while not folder.exists() and folder != repo.workdir:
                folder = folder.parent
            folder_ok[parent] = os.access(folder, os.W_OK | os.X_OK) and _owner_writable(folder)
            if not folder_ok[parent]:
                problems.append(f"{folder} is not writable")
        if not folder_ok[parent]:
            continue
        mode = _lstat_mode(os.path.join(repo.workdir, path))
        if data is not None and mode is not None and not stat.S_ISLNK(mode) and not mode & 0o200:
            file = repo.workdir / path
            problems.append(f"{file} is read-only (chmod u+w {file})")
    if problems:
        raise UnwritableError(
            f"{repo.workdir}: cannot write there: {'; '.join(sorted(set(problems)))} (nothing was changed)"
        )


def _check_folders(repo: Repo, changes: Mapping[str, bytes | None], parent: str | None, *, on_disk: bool) -> None:
    """Refuse, before anything is written, paths that would go through a file or a symlink.

    Every folder above a written path must be a folder at ``parent`` (or absent) and,
    in the working tree, a real folder (or absent); a written path must not be a
    symlink or a folder. Otherwise the commit would silently replace a committed link
    or file, or the working-tree update would write outside the repository.
    """
    at = Paths(repo.raw[parent].peel(pygit2.Tree) if parent is not None else None)
    problems: list[str] = []
    folders: set[str] = set()  # each folder above a written path checked once
    for path, data in sorted(changes.items()):
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            last = depth == len(parts)
            if not last:
                if prefix in folders:
                    continue
                folders.add(prefix)
            at_head = at(prefix)
            if at_head is not None:
                if not last and at_head.type_str != "tree":
                    problems.append(f"{prefix} is a {_kind(at_head.filemode)} at HEAD, not a folder")
                elif last and data is not None and at_head.type_str != "blob":
                    problems.append(f"{prefix} is a {_kind(at_head.filemode)} at HEAD")
                elif last and data is not None and at_head.filemode == FileMode.LINK:
                    problems.append(f"{prefix} is a symlink at HEAD; okfgit never writes through links")
            if on_disk:
                mode = _lstat_mode(os.path.join(repo.workdir, prefix))
                if mode is None:
                    continue
                if stat.S_ISLNK(mode):
                    problems.append(f"{prefix} is a symlink in the working tree; okfgit never writes through links")
                elif not last and not stat.S_ISDIR(mode):
                    problems.append(f"{prefix} is a file in the working tree, not a folder")
                elif last and data is not None and not stat.S_ISREG(mode):
                    problems.append(f"{prefix} is not a regular file in the working tree")
    if problems:
        unique = sorted(set(problems))
        raise RepoStateError(f"{repo.workdir}: cannot write there: {'; '.join(unique)} (nothing was changed)")


def _make_commit(repo: Repo, ctx: Context, parent: str | None, changes: Mapping[str, bytes | None],
                 message: str, merge_parent: str | None = None) -> str:
    tree = _build_tree(repo, parent, changes)
    author, committer = signatures(repo, ctx)
    parents = [pygit2.Oid(hex=parent)] if parent else []
    if merge_parent is not None:
        parents.append(pygit2.Oid(hex=merge_parent))
    return str(repo.raw.create_commit(None, author, committer, message, tree, parents))


def _build_tree(repo: Repo, parent: str | None, changes: Mapping[str, bytes | None]) -> pygit2.Oid:
    index = pygit2.Index()
    if parent is not None:
        index.read_tree(repo.raw[parent].peel(pygit2.Tree))
    for path, data in sorted(changes.items()):
        if data is None:
            if path in index:
                index.remove(path)
            continue
        oid = repo.raw.create_blob(data)
        # Keep an executable bit the file already has at HEAD.
        mode = FileMode.BLOB_EXECUTABLE if path in index and index[path].mode == FileMode.BLOB_EXECUTABLE \
            else FileMode.BLOB
        index.add(pygit2.IndexEntry(path, oid, mode))
    return index.write_tree(repo.raw)


def signatures(repo: Repo, ctx: Context) -> tuple[pygit2.Signature, pygit2.Signature]:
    """(author, committer) as git makes them: ``GIT_<ROLE>_NAME``/``_EMAIL``/``_DATE`` from the
    environment, else ``user.name``/``user.email`` from git's config, else okfgit's own; the
    time from the context's clock."""
    env = ctx.environ

    def one(kind: str) -> pygit2.Signature:
        name = env.get(f"GIT_{kind}_NAME") or repo.config_get("user.name") or "okfgit"
        email = env.get(f"GIT_{kind}_EMAIL") or repo.config_get("user.email") or "okfgit@localhost"
        when, offset = _parse_git_date(env.get(f"GIT_{kind}_DATE"), ctx.now())
        return pygit2.Signature(name, email, when, offset)

    return one("AUTHOR"), one("COMMITTER")


def move_ref(repo: Repo, ctx: Context, ref: str, new: str, old: str | None, message: str) -> None:
    """Move ``ref`` from ``old`` (None: create it) to ``new``, only if it is still at ``old``
    (libgit2 compares under the ref's lock, as ``git update-ref <ref> <new> <old>`` does);
    RefMoved when it is not, nothing changed. The reflog entry names okfgit's subject."""
    raw = repo.raw
    committer = signatures(repo, ctx)[1]
    raw.set_ident(committer.name, committer.email)  # the reflog's identity, as git's is the committer's
    reflog = f"okfgit: {message.split(chr(10), 1)[0]}"
    try:
        if not old:
            raw.create_reference_direct(ref, new, False, message=reflog)
        else:
            current = raw.references.get(ref)
            if current is None or str(current.target) != old:
                raise RefMoved(f"{repo.workdir}: {ref} moved while okfgit was writing; nothing was changed, "
                               "run it again")
            current.set_target(new, reflog)
    except (pygit2.GitError, ValueError) as exc:  # AlreadyExistsError is a ValueError
        if repo.ref_target(ref) != (old or None):
            raise RefMoved(f"{repo.workdir}: {ref} moved while okfgit was writing; nothing was changed, "
                           "run it again") from exc
        raise IntegrityError(f"{repo.workdir}: cannot move {ref} ({exc}); nothing was changed") from exc


def update_worktree(repo: Repo, ctx: Context, held: IndexLock, paths: Mapping[str, tuple[str, int] | None],
                    changes: Mapping[str, bytes | None]) -> None:
    """Write the committed bytes of ``paths`` into the working tree and their entries into
    the index held under ``index.lock`` (``changes`` has the bytes; the blobs have them too).

    Up to ``FSYNC_EACH_UP_TO`` paths, each file is fsynced before its rename; beyond, the
    commit's objects were made durable before the ref moved, so the files are written
    without (git can check them out again) and their folders are fsynced once at the end.
    """
    each = len(paths) <= FSYNC_EACH_UP_TO
    folders: set[Path] = set()
    for path, entry in sorted(paths.items()):
        file = repo.workdir / path
        folders.add(file.parent)
        if entry is None:
            if file.exists() or file.is_symlink():
                file.unlink()
                _prune_empty_dirs(file.parent, repo.workdir)
            held.remove(path)
            continue
        data = changes.get(path)
        if data is None:
            data = repo.read_blob(entry[0])
        fsutil.atomic_write(file, data, fsync=each)
        journal.crash_point(ctx.environ, "mid-worktree")
        held.stage(path, entry[0], entry[1])
    if not each:
        fsutil.fsync_dirs(folders)


def _kind(mode: int) -> str:
    kinds: dict[int, str] = {int(FileMode.LINK): "symlink", int(FileMode.TREE): "folder",
                             int(FileMode.COMMIT): "submodule"}
    return kinds.get(int(mode), "file")


def _lstat_mode(path: str | Path) -> int | None:
    """The mode of ``path`` itself (a link is not followed), None when nothing is there."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _owner_writable(path: Path) -> bool:
    """The owner's write bit is set: root could write anyway, but a read-only mode is a person's
    "do not change this", and okfgit honours it for everyone alike."""
    try:
        return bool(os.stat(path).st_mode & 0o200)
    except OSError:
        return True


def _prune_empty_dirs(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_relative_to(stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _parse_git_date(value: str | None, default: int) -> tuple[int, int]:
    """``GIT_*_DATE`` as (epoch seconds, offset minutes); accepts ``@<epoch> [+hhmm]`` or ``<epoch> [+hhmm]``."""
    if value:
        parts = value.strip().lstrip("@").split()
        if parts and parts[0].isdigit():
            offset = 0
            if len(parts) > 1 and len(parts[1]) == 5 and parts[1][0] in "+-" and parts[1][1:].isdigit():
                sign = -1 if parts[1][0] == "-" else 1
                offset = sign * (int(parts[1][1:3]) * 60 + int(parts[1][3:5]))
            return int(parts[0]), offset
    return default, 0
