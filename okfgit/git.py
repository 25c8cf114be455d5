"""Git plumbing: the only module that imports pygit2.

Reads come from tree objects at a revision, never from the working tree. Writes are
one commit built from an in-memory tree (HEAD tree + changed blobs); the branch ref
moves by compare-and-swap on the old HEAD (``git update-ref <ref> <new> <old>``), and
then exactly the written paths are updated in the working tree and the index, like
``git commit --only <paths>``. Anything else the user had staged stays staged.

The write protocol (spec/okf-writes.md): the repository's write lock is held for the
whole commit; git's own ``index.lock`` is created (O_EXCL, as git does) before the index
is read and the new index is renamed over ``index`` from it; the intent (ref, old and
new commit, paths) is journalled before the ref moves, so that a commit whose process
died after the ref moved is finished by the next okfgit write (``Repo.recover``).
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from pathlib import Path

import pygit2
from pygit2.enums import FileMode, RepositoryState

from pygit2.ffi import C, ffi  # type: ignore[attr-defined]

from okfgit import fsutil
from okfgit.plumbing import FILE_MODE, LINK_MODE, Change, Entry, blob_oid, clean_git_env, git_missing, main_workdir
from okfgit.local import fastpath, journal, lock
from okfgit.local.noop import operation
from okfgit.local import paths as okf_paths
from okfgit.context import Context
from okfgit.errors import (BusyError, IntegrityError, OkfError, RecoveryPending, RepoStateError, UnwritableError,
                           UsageError)

ZERO = "0" * 40
WRITE_LOCK_WAIT_S = lock.WRITE_WAIT_S
INDEX_LOCK_WAIT_S = 2.0  # git holds index.lock for a moment; longer means someone is busy
INDEX_SCRATCH = journal.INDEX_SCRATCH
INDEX_LOCK_SCRATCH = journal.INDEX_LOCK_SCRATCH
# A commit of up to this many paths fsyncs each file it writes into the working tree; a
# bigger one writes them without and makes its objects durable with one filesystem sync
# before the ref moves (spec/okf-writes.md §2): the committed bytes outlive a power cut
# either way, and a few fsyncs cost less than a flush of a busy filesystem.
FSYNC_EACH_UP_TO = 32
CRASH_ENV = "OKFGIT_TEST_CRASH_AT"  # tests only: die by SIGKILL at a named step of a commit

_STATE_NAMES = {
    RepositoryState.MERGE: "a merge",
    RepositoryState.REVERT: "a revert",
    RepositoryState.REVERT_SEQUENCE: "a revert",
    RepositoryState.CHERRYPICK: "a cherry-pick",
    RepositoryState.CHERRYPICK_SEQUENCE: "a cherry-pick",
    RepositoryState.BISECT: "a bisect",
    RepositoryState.REBASE: "a rebase",
    RepositoryState.REBASE_INTERACTIVE: "a rebase",
    RepositoryState.REBASE_MERGE: "a rebase",
    RepositoryState.APPLY_MAILBOX: "git am",
    RepositoryState.APPLY_MAILBOX_OR_REBASE: "a rebase",
}


class Repo:
    """A git repository with a working tree."""

    def __init__(self, raw: pygit2.Repository) -> None:
        self.raw = raw
        if raw.workdir is None:
            raise UsageError(f"{raw.path}: bare repositories are not supported")
        self.workdir = Path(raw.workdir).resolve()
        self.gitdir = Path(raw.path).resolve()

    # -- opening --------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path) -> "Repo":
        """The repository whose working tree root is exactly ``path``."""
        try:
            raw = pygit2.Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        except pygit2.GitError as exc:
            raise UsageError(f"{path}: not a git repository") from exc
        return cls(raw)

    @classmethod
    def discover(cls, start: Path) -> "Repo | None":
        """The repository containing ``start``, or None."""
        try:
            found = pygit2.discover_repository(str(start))
            if found is None:
                return None
            raw = pygit2.Repository(found)
        except pygit2.GitError as exc:
            raise UsageError(f"{start}: the git repository here cannot be opened ({exc})") from exc
        if raw.workdir is None:
            return None
        return cls(raw)

    @classmethod
    def init(cls, path: Path) -> "Repo":
        path.mkdir(parents=True, exist_ok=True)
        raw = pygit2.init_repository(str(path), initial_head="main")
        return cls(raw)

    # -- identity of the repository ------------------------------------------------

    @property
    def common_dir(self) -> Path:
        """The main repository's git dir (differs from ``gitdir`` in a linked worktree)."""
        return Path(fastpath.common_dir(str(self.gitdir)))

    @property
    def main_workdir(self) -> Path:
        """The main working tree's root: linked worktrees map to it."""
        return main_workdir(self.workdir, self.gitdir, self.common_dir)

    def config_get(self, key: str) -> str | None:
        try:
            value = self.raw.config[key]
        except (KeyError, pygit2.GitError):
            return None
        return str(value)

    def config_set(self, key: str, value: str) -> None:
        """Set ``key`` in the repository's own config (like ``git config KEY VALUE``)."""
        try:
            self.raw.config[key] = value
        except pygit2.GitError as exc:
            raise UnwritableError(f"{self.workdir}: git config {key} could not be written ({exc})") from exc

    def config_unset(self, key: str) -> bool:
        """Remove ``key`` from the repository's own config; False when it was not set."""
        try:
            del self.raw.config[key]
        except (KeyError, pygit2.GitError):
            return False
        return True

    def remote_names(self) -> list[str]:
        """The names of the repository's remotes (``git remote``)."""
        return [name for name in self.raw.remotes.names() if name]

    # -- reading --------------------------------------------------------------------

    def head_commit(self) -> str | None:
        """The commit HEAD points at, or None for an unborn branch."""
        if self.raw.head_is_unborn:
            return None
        return str(self.raw.head.target)

    def head_branch(self) -> str | None:
        """``refs/heads/<name>`` that HEAD names, or None when HEAD is detached."""
        if self.raw.head_is_detached:
            return None
        ref = self.raw.references.get("HEAD")
        if ref is None:
            return None
        target = ref.target
        return str(target) if isinstance(target, str) else None

    def resolve(self, rev: str) -> str:
        """A revision to its commit OID; UsageError if it does not resolve."""
        try:
            obj = self.raw.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
            raise UsageError(f"{rev!r} does not resolve to a commit in {self.workdir}") from exc
        return str(commit.id)

    def symbolic_target(self, ref: str) -> str | None:
        """The ref a symbolic ref points at (``refs/remotes/origin/HEAD`` -> ``refs/remotes/origin/main``)."""
        found = self.raw.references.get(ref)
        if found is None:
            return None
        target = found.target
        return target if isinstance(target, str) else None

    def remotes(self) -> list[str]:
        """The names of the configured remotes."""
        return [r.name for r in self.raw.remotes if r.name]

    def branch_exists(self, name: str) -> bool:
        return f"refs/heads/{name}" in self.raw.references

    @staticmethod
    def valid_branch_name(name: str) -> bool:
        """``name`` is a branch name git accepts (``git check-ref-format --branch``)."""
        return not name.startswith("-") and pygit2.reference_is_valid_name(f"refs/heads/{name}")

    def parents(self, commit: str) -> list[str]:
        """The parent commit OIDs of ``commit``, first parent first."""
        return [str(p) for p in self.raw[commit].peel(pygit2.Commit).parent_ids]

    def tree_oid(self, commit: str | None, prefix: str = "") -> str | None:
        """The OID of the tree at ``prefix`` in ``commit``; None when absent."""
        if commit is None:
            return None
        tree = self.raw[commit].peel(pygit2.Tree)
        if not prefix:
            return str(tree.id)
        try:
            entry = tree[prefix]
        except KeyError:
            return None
        return str(entry.id) if entry.type_str == "tree" else None

    def tree_entries(self, commit: str | None, prefix: str = "") -> dict[str, Entry]:
        """Every blob under ``prefix`` at ``commit``, keyed by path relative to ``prefix``."""
        if commit is None:
            return {}
        tree = self.raw[commit].peel(pygit2.Tree)
        if prefix:
            try:
                sub = tree[prefix]
            except KeyError:
                return {}
            if sub.type_str != "tree":
                return {}
            tree = self.raw[sub.id].peel(pygit2.Tree)
        out: dict[str, Entry] = {}
        self._walk(tree, "", out)
        return out

    def entry_at(self, commit: str | None, path: str) -> Entry | None:
        """The tree entry at ``path`` in ``commit`` (blob, tree, link or submodule), or None.

        One lookup, no walk: for reading a single settings file on every sync.
        """
        if commit is None:
            return None
        tree = self.raw[commit].peel(pygit2.Tree)
        try:
            item = tree[path]
        except KeyError:
            return None
        return Entry(str(item.id), int(item.filemode))

    def entries_in(self, tree: str, paths: list[str]) -> dict[str, Entry | None]:
        """The entry at each of ``paths`` inside the tree ``tree`` (an OID), None where absent.

        The tree is looked up once: for a diff's changed paths, without re-reading the
        commit (whose message can be large) once per path.
        """
        root = self.raw[tree].peel(pygit2.Tree)
        folders: dict[str, dict[str, Entry]] = {}
        out: dict[str, Entry | None] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            if folder not in folders:  # each folder's listing read once, not once per path in it
                folders[folder] = self._listing(root, folder)
            out[path] = folders[folder].get(name)
        return out

    def listing(self, tree: str, folder: str = "") -> dict[str, Entry]:
        """The entries directly in ``folder`` of the tree ``tree`` (an OID), by name, of every
        kind (blobs, trees, submodules); empty when there is no such folder. One folder read,
        no walk: for looking paths up in a tree without listing all of it."""
        return self._listing(self.raw[tree].peel(pygit2.Tree), folder)

    def _listing(self, root: pygit2.Tree, folder: str) -> dict[str, Entry]:
        try:
            sub = root[folder] if folder else root
        except KeyError:
            return {}
        if sub.type_str != "tree":
            return {}
        return {item.name or "": Entry(str(item.id), int(item.filemode)) for item in self.raw[sub.id].peel(pygit2.Tree)}

    def _walk(self, tree: pygit2.Tree, base: str, out: dict[str, Entry]) -> None:
        for item in tree:
            path = base + (item.name or "")
            if item.type_str == "tree":
                self._walk(self.raw[item.id].peel(pygit2.Tree), path + "/", out)
            elif item.type_str == "blob":
                out[path] = Entry(str(item.id), int(item.filemode))

    def store_blob(self, data: bytes) -> str | None:
        """Put ``data`` in the object database as a blob no tree refers to (until gc prunes
        it), so okfgit can read back later what it wrote outside any tier; None when it
        cannot (a read-only repository: it is only a memory aid)."""
        try:
            return str(self.raw.create_blob(data))
        except (pygit2.GitError, OSError):
            return None

    def read_blob(self, oid: str) -> bytes:
        # Straight from the object database: about 40% cheaper than Repository[oid], which
        # counts when doctor reads 10,000 blobs.
        return bytes(self.raw.odb.read(oid)[1])

    def read_blobs(self, oids: Iterable[str]) -> dict[str, bytes]:
        return {oid: self.read_blob(oid) for oid in dict.fromkeys(oids)}

    def iter_blobs(self, oids: Iterable[str]) -> Generator[tuple[str, bytes], None, None]:
        for oid in dict.fromkeys(oids):
            yield oid, self.read_blob(oid)

    def diff_paths(self, old_tree: str | None, new_tree: str | None) -> list[Change]:
        """Blob paths that differ between two trees (renames not detected)."""
        empty = self.raw[self.raw.TreeBuilder().write()].peel(pygit2.Tree)
        a = self.raw[old_tree].peel(pygit2.Tree) if old_tree else empty
        b = self.raw[new_tree].peel(pygit2.Tree) if new_tree else empty
        diff = a.diff_to_tree(b)
        out: list[Change] = []
        for patch_delta in diff.deltas:
            old = None if patch_delta.old_file.id == pygit2.Oid(hex=ZERO) else str(patch_delta.old_file.id)
            new = None if patch_delta.new_file.id == pygit2.Oid(hex=ZERO) else str(patch_delta.new_file.id)
            path = patch_delta.new_file.path if new else patch_delta.old_file.path
            out.append(Change(path, old, new))
        return out

    def log(self, base: str | None, head: str) -> Iterator[tuple[str, str, str]]:
        """Commits reachable from ``head`` and not from ``base``: (oid, author, message)."""
        walker = self.raw.walk(head, pygit2.enums.SortMode.TOPOLOGICAL)
        if base:
            walker.hide(base)
        for commit in walker:
            yield str(commit.id), f"{commit.author.name} <{commit.author.email}>", commit.message

    def last_change(self, path: str, limit: int = 500) -> float | None:
        """The commit time of the newest commit that gave ``path`` the blob it has at HEAD
        (first parents, at most ``limit`` commits back), or None when HEAD has no such path
        or the walk ends first."""
        head = self.head_commit()
        if head is None:
            return None
        commit = self.raw[head]
        assert isinstance(commit, pygit2.Commit)
        wanted = _entry_oid(commit, path)
        if wanted is None:
            return None
        for _ in range(limit):
            if not commit.parents:
                return float(commit.commit_time)
            parent = commit.parents[0]
            if _entry_oid(parent, path) != wanted:
                return float(commit.commit_time)
            commit = parent
        return None

    def merge_base(self, a: str, b: str) -> str | None:
        found = self.raw.merge_base(a, b)
        return str(found) if found else None

    # -- writing --------------------------------------------------------------------

    def check_writable_state(self) -> str:
        """The branch ref a commit would move; RepoStateError when the repo is mid-operation."""
        state = self.raw.state()
        if state != RepositoryState.NONE:
            what = _STATE_NAMES.get(state, "an operation")
            found = operation(self.gitdir)
            how = f"finish it first ({found.finish})" if found is not None else "finish or abort it"
            raise RepoStateError(f"{self.workdir} is in the middle of {what}; {how}, then retry (nothing was changed)")
        if (self.gitdir / "BISECT_LOG").exists():
            raise RepoStateError(f"{self.workdir} is in the middle of a bisect; nothing was changed")
        branch = self.head_branch()
        if branch is None:
            raise RepoStateError(
                f"{self.workdir}: HEAD is detached; check out a branch first (nothing was changed)"
            )
        return branch

    def dirty_paths(self, paths: Mapping[str, bytes | None], commit: str | None,
                    index: pygit2.Index | None = None) -> list[str]:
        """Paths among ``paths`` whose working-tree or staged content differs from ``commit``.

        A file that already holds exactly the bytes to be written is not in the way.
        ``index`` is the index to compare with (the one read under ``index.lock``).
        """
        head: dict[str, str | None] = {}
        if commit is not None:
            at = _Paths(self.raw[commit].peel(pygit2.Tree))
            head = {path: at.oid(path) for path in paths}
        if index is None:
            index = self.raw.index
            index.read(False)
        dirty: list[str] = []
        root = str(self.workdir)
        for path, new in paths.items():
            want = blob_oid(new) if new is not None else None
            at_head = head.get(path)
            file = os.path.join(root, path)  # strings: a Path per written file adds up at 1,000 files
            mode = _lstat_mode(file)
            if mode is not None:
                if stat.S_ISDIR(mode):
                    dirty.append(path)
                    continue
                current = blob_oid(os.readlink(file).encode() if stat.S_ISLNK(mode) else _read_file(file))
                if current not in (at_head, want):
                    dirty.append(path)
                    continue
            elif at_head is not None:
                dirty.append(path)  # deleted in the working tree but not committed
                continue
            staged = index[path].id if path in index else None
            if (str(staged) if staged else None) not in (at_head, want):
                dirty.append(path)
        return dirty

    # -- the write protocol ---------------------------------------------------------------

    def write_lock(self, ctx: Context, wait_s: float = WRITE_LOCK_WAIT_S) -> lock.Lock:
        """The repository's write lock (``<git common dir>/okf/sync.lock``): ``lock.write_lock``."""
        return lock.write_lock(self.common_dir, self.workdir, wait_s, now=ctx.clock)

    @property
    def journal_file(self) -> Path:
        return okf_paths.journal(self.common_dir, self.gitdir)

    def commit_paths(
        self,
        ctx: Context,
        changes: Mapping[str, bytes | None],
        message: str,
        *,
        branch: str | None = None,
        new_branch: bool = False,
        merge_parent: str | None = None,
        base: str | None = None,
    ) -> str:
        """Commit ``changes`` (repo path -> bytes, None to delete) as one commit.

        With ``branch`` the commit goes on that branch (created from HEAD with
        ``new_branch``) and the working tree is not touched. With ``merge_parent`` it is
        a merge commit: that commit is its second parent (the tree is still HEAD's tree
        plus ``changes``). ``base``, when given, is the commit the changes were planned
        from: if the branch moved since, nothing is written (BusyError). Returns the new
        commit OID.

        Either the ref does not move (an exception, nothing changed), or the index and
        working tree show the new commit when this returns; a failure after the ref moved
        raises RecoveryPending, and the journal lets the next okfgit write finish it.
        """
        for path in changes:
            fsutil.safe_relpath(path)
        with self.write_lock(ctx) as held:
            self.recover(ctx)
            self.sweep(held.since_ns, {self.workdir / d for d in {p.rpartition("/")[0] for p in changes}})
            if branch is not None:
                return self._commit_to_branch(ctx, changes, message, branch, new_branch, base, merge_parent)
            return self._land(ctx, changes, message, base,
                              lambda parent: self._make_commit(ctx, parent, changes, message, merge_parent))

    def _commit_to_branch(self, ctx: Context, changes: Mapping[str, bytes | None], message: str, branch: str,
                          new_branch: bool, base: str | None, merge_parent: str | None) -> str:
        ref = f"refs/heads/{branch}"
        if new_branch:
            if self.branch_exists(branch):
                raise UsageError(f"branch {branch!r} already exists in {self.workdir}")
            parent = self.head_commit()
        else:
            parent = self.resolve(ref)
        self._check_base(base, parent, ref)
        self._check_folders(changes, parent, on_disk=False)
        commit = self._make_commit(ctx, parent, changes, message, merge_parent)
        self._cas_ref(ctx, ref, commit, "" if new_branch else (parent or ""), message)
        return commit

    def _land(self, ctx: Context, changes: Mapping[str, bytes | None], message: str, base: str | None,
              make: Callable[[str | None], str]) -> str:
        """Move the checked-out branch to ``make(parent)`` and update ``changes`` in the working
        tree and index: the protocol of spec/okf-writes.md §2 (the caller holds the write lock)."""
        ref = self.check_writable_state()
        with _IndexLock(self, ctx) as held:
            parent = self.head_commit()
            self._check_base(base, parent, ref)
            self._check_folders(changes, parent, on_disk=True)
            self._check_writable(changes)
            dirty = self.dirty_paths(changes, parent, held.index)
            if dirty:
                raise RepoStateError(
                    f"{self.workdir}: uncommitted edits in {', '.join(sorted(dirty))}; "
                    "commit or stash them first (nothing was changed)"
                )
            commit = make(parent)
            if len(changes) > FSYNC_EACH_UP_TO:
                fsutil.sync_filesystem(self.common_dir / "objects")  # the bytes outlive a power cut here
            lookup = _Paths(self.raw[commit].peel(pygit2.Tree))
            paths: dict[str, tuple[str, int] | None] = {}
            for path, data in changes.items():
                item = lookup(path) if data is not None else None
                paths[path] = (str(item.id), int(item.filemode)) if item is not None else None
            held.record.intent = journal.Intent(ref, parent, commit, paths)
            journal.save(self.journal_file, held.record, durable=True)
            crash_point(ctx, "before-ref")
            try:
                self._cas_ref(ctx, ref, commit, parent or "", message)
            except IntegrityError:
                held.record.intent = None
                journal.save(self.journal_file, held.record, durable=False)
                raise
            crash_point(ctx, "after-ref")
            try:
                self._update_worktree(ctx, held, paths, changes)
                held.commit()
                return commit
            except (OSError, OkfError) as exc:
                failure: Exception = exc
        # The ref moved: finish on the spot (the journal still holds the intent), or say so.
        try:
            self.recover(ctx)
        except (OSError, OkfError) as exc:
            failure = exc
        else:
            if not journal.pending(self.journal_file):
                return commit
        raise RecoveryPending(
            f"{self.workdir}: the commit {commit[:12]} landed on {ref}, but updating the working tree "
            f"and index did not finish ({failure}); the next okfgit command finishes it (`okfgit status` "
            "will), and until then do not commit in this repository"
        ) from failure

    def sweep(self, since_ns: int, folders: Iterable[Path] = ()) -> list[Path]:
        """Remove what killed okfgit writes left (``journal.sweep``)."""
        return journal.sweep(self.common_dir, self.gitdir, self.workdir, since_ns, folders)

    def sweep_objects(self) -> list[Path]:
        return journal.sweep_objects(self.journal_file, self.common_dir / "objects")

    def _check_base(self, base: str | None, parent: str | None, ref: str) -> None:
        if base is not None and base != (parent or ""):
            raise BusyError(
                f"{self.workdir}: {ref} moved while okfgit was preparing this change (another write "
                "landed); nothing was changed, run it again"
            )

    def _check_writable(self, changes: Mapping[str, bytes | None]) -> None:
        """Refuse before committing when a written file or its folder cannot be written:
        after the ref moved it would be too late to say "nothing was changed"."""
        problems: list[str] = []
        folder_ok: dict[str, bool] = {}  # each folder judged once, however many files go in it
        for path, data in sorted(changes.items()):
            parent = path.rpartition("/")[0]
            if parent not in folder_ok:
                folder = self.workdir / parent
                while not folder.exists() and folder != self.workdir:
                    folder = folder.parent
                folder_ok[parent] = os.access(folder, os.W_OK | os.X_OK) and _owner_writable(folder)
                if not folder_ok[parent]:
                    problems.append(f"{folder} is not writable")
            if not folder_ok[parent]:
                continue
            mode = _lstat_mode(os.path.join(self.workdir, path))
            if data is not None and mode is not None and not stat.S_ISLNK(mode) and not mode & 0o200:
                file = self.workdir / path
                problems.append(f"{file} is read-only (chmod u+w {file})")
        if problems:
            raise UnwritableError(
                f"{self.workdir}: cannot write there: {'; '.join(sorted(set(problems)))} (nothing was changed)"
            )

    def _make_commit(self, ctx: Context, parent: str | None, changes: Mapping[str, bytes | None],
                     message: str, merge_parent: str | None = None) -> str:
        tree = self._build_tree(parent, changes)
        sig_author, sig_committer = self._signatures(ctx)
        parents = [pygit2.Oid(hex=parent)] if parent else []
        if merge_parent is not None:
            parents.append(pygit2.Oid(hex=merge_parent))
        return str(self.raw.create_commit(None, sig_author, sig_committer, message, tree, parents))

    def fast_forward(self, ctx: Context, target: str) -> list[str]:
        """Move the current branch forward to ``target`` (a descendant of HEAD, or any commit
        on an unborn branch) and update exactly the paths that differ, like ``commit_paths``:
        refuses, changing nothing, when the repository is busy or a path to be updated has
        uncommitted edits. Returns the paths updated."""
        with self.write_lock(ctx) as held:
            self.recover(ctx)
            parent = self.head_commit()
            changes: dict[str, bytes | None] = {
                c.path: (self.read_blob(c.new) if c.new else None)
                for c in self.diff_paths(self.tree_oid(parent), self.tree_oid(target))
            }
            for path in changes:
                fsutil.safe_relpath(path)  # a tree from elsewhere may hold a path git would never write
            self.sweep(held.since_ns, {self.workdir / d for d in {p.rpartition("/")[0] for p in changes}})
            self._land(ctx, changes, f"fast-forward to {target[:12]}", parent or "", lambda _: target)
            return sorted(changes)

    def _check_folders(self, changes: Mapping[str, bytes | None], parent: str | None, *, on_disk: bool) -> None:
        """Refuse, before anything is written, paths that would go through a file or a symlink.

        Every folder above a written path must be a folder at ``parent`` (or absent) and,
        in the working tree, a real folder (or absent); a written path must not be a
        symlink or a folder. Otherwise the commit would silently replace a committed link
        or file, or the working-tree update would write outside the repository.
        """
        at = _Paths(self.raw[parent].peel(pygit2.Tree) if parent is not None else None)
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
                    mode = _lstat_mode(os.path.join(self.workdir, prefix))
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
            raise RepoStateError(f"{self.workdir}: cannot write there: {'; '.join(unique)} (nothing was changed)")

    def _build_tree(self, parent: str | None, changes: Mapping[str, bytes | None]) -> pygit2.Oid:
        index = pygit2.Index()
        if parent is not None:
            index.read_tree(self.raw[parent].peel(pygit2.Tree))
        for path, data in sorted(changes.items()):
            if data is None:
                if path in index:
                    index.remove(path)
                continue
            oid = self.raw.create_blob(data)
            # Keep an executable bit the file already has at HEAD.
            mode = index[path].mode if path in index and index[path].mode == FileMode.BLOB_EXECUTABLE else FileMode.BLOB
            index.add(pygit2.IndexEntry(path, oid, mode))
        return index.write_tree(self.raw)

    def _signatures(self, ctx: Context) -> tuple[pygit2.Signature, pygit2.Signature]:
        env = ctx.environ

        def one(kind: str) -> pygit2.Signature:
            name = env.get(f"GIT_{kind}_NAME") or self.config_get("user.name") or "okfgit"
            email = env.get(f"GIT_{kind}_EMAIL") or self.config_get("user.email") or "okfgit@localhost"
            when, offset = _parse_git_date(env.get(f"GIT_{kind}_DATE"), ctx.now())
            return pygit2.Signature(name, email, when, offset)

        return one("AUTHOR"), one("COMMITTER")

    def _cas_ref(self, ctx: Context, ref: str, new: str, old: str, message: str) -> None:
        subject = message.split("\n", 1)[0]
        proc = run_git(ctx, [f"--git-dir={self.gitdir}", "update-ref", "-m", f"okfgit: {subject}", ref, new,
                             old or ZERO])
        if proc.returncode != 0:
            raise IntegrityError(
                f"{self.workdir}: {ref} moved while okfgit was writing; nothing was changed "
                f"({proc.stderr.strip()})"
            )

    def _update_worktree(self, ctx: Context, held: "_IndexLock", paths: Mapping[str, tuple[str, int] | None],
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
            file = self.workdir / path
            folders.add(file.parent)
            if entry is None:
                if file.exists() or file.is_symlink():
                    file.unlink()
                    _prune_empty_dirs(file.parent, self.workdir)
                if path in held.index:
                    held.index.remove(path)
                continue
            data = changes.get(path)
            if data is None:
                data = self.read_blob(entry[0])
            fsutil.atomic_write(file, data, fsync=each)
            crash_point(ctx, "mid-worktree")
            _add_entry(held.index, path, entry[0], entry[1], os.lstat(file))
        if not each:
            fsutil.fsync_dirs(folders)

    def needs_recovery(self) -> bool:
        """A journal record, or a temp file of one a killed writer left half-written."""
        return journal.needs_recovery(self.journal_file)

    def recover(self, ctx: Context, wait_s: float = WRITE_LOCK_WAIT_S) -> list[str]:
        """Finish what a killed okfgit write left in this working tree's journal.

        Call it holding the write lock (``commit_paths`` does): the journal's writer is then
        known to be gone. An intent whose commit the ref still points at gets its working
        tree and index update done (a file a person changed since is left alone and named);
        an intent whose ref never moved is dropped; a stale ``index.lock`` okfgit created
        is removed. Returns what was done, for the caller to report.
        """
        file = self.journal_file
        if not self.needs_recovery():
            return []
        with self.write_lock(ctx, wait_s) as held:
            # A killed writer's half-written journal record (or any temp file of its in
            # <git common dir>/okf/) goes first, whatever the record says.
            self.sweep(held.since_ns)
            record = journal.load(file)
            if record is None:
                return []
            notes: list[str] = []
            if record.intent is not None:
                # the killed commit's temp files are in the folders it was writing
                self.sweep(held.since_ns, {(self.workdir / p).parent for p in record.intent.paths})
            lock_file = self.gitdir / "index.lock"
            if record.index_lock is not None:
                try:
                    st = os.lstat(lock_file)
                    if (st.st_dev, st.st_ino) == record.index_lock:
                        lock_file.unlink()
                        notes.append(f"removed the {lock_file} a killed okfgit left")
                except FileNotFoundError:
                    pass
            intent = record.intent
            if intent is not None:
                notes.extend(self._finish(ctx, intent))
            journal.clear(file)
            return notes

    def _finish(self, ctx: Context, intent: journal.Intent) -> list[str]:
        try:
            current: str | None = self.resolve(intent.ref)
        except UsageError:
            current = None
        if current != intent.new:
            if current == intent.old:
                return []  # the ref never moved: nothing landed, nothing to finish
            return self._reverted_after(intent, current)
        before_at = _Paths(self.raw[intent.old].peel(pygit2.Tree) if intent.old else None)
        left: list[str] = []
        with _IndexLock(self, ctx, intent) as held:
            todo: dict[str, tuple[str, int] | None] = {}
            for path, entry in sorted(intent.paths.items()):
                allowed = {before_at.oid(path), entry[0] if entry else None}
                file = self.workdir / path
                on_disk: str | None
                if file.is_symlink():
                    on_disk = blob_oid(os.readlink(file).encode())
                elif file.is_file():
                    on_disk = blob_oid(file.read_bytes())
                elif file.exists():
                    on_disk = "folder"
                else:
                    on_disk = None
                staged = str(held.index[path].id) if path in held.index else None
                if on_disk in allowed and staged in allowed:
                    todo[path] = entry
                elif staged in allowed:
                    # a person's bytes in the file: keep them, stage okfgit's commit only
                    left.append(path)
                    if entry is None:
                        if path in held.index:
                            held.index.remove(path)
                    else:
                        _add_entry(held.index, path, entry[0], entry[1], None)
                else:
                    left.append(path)
            self._update_worktree(ctx, held, todo, {})
            held.commit()
        notes = [f"finished okfgit's interrupted commit {intent.new[:12]}: the index and working tree of "
                 f"{self.workdir} now show it"]
        if left:
            notes.append(f"left alone (changed since by someone else): {', '.join(left)}")
        return notes

    def _reverted_after(self, intent: journal.Intent, current: str | None) -> list[str]:
        """The ref moved on after a killed okfgit commit: say when a later commit reverted it."""
        if current is None:
            return []
        try:
            descends = self.raw.descendant_of(current, intent.new)
        except (pygit2.GitError, KeyError, ValueError):
            return []
        if not descends:
            return []
        at = _Paths(self.raw[current].peel(pygit2.Tree))
        lost = [p for p, e in sorted(intent.paths.items()) if at.oid(p) != (e[0] if e else None)]
        if not lost:
            return []
        quoted = " ".join(lost)
        return [f"okfgit's commit {intent.new[:12]} was interrupted before the index was updated, and a later "
                f"commit changed {', '.join(lost)} back; to restore okfgit's version: "
                f"git checkout {intent.new[:12]} -- {quoted}"]


def run_git(ctx: Context, args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run git (outside any hook's repository variables); IntegrityError when git cannot be run."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, env=clean_git_env(ctx.environ), capture_output=True,
                              text=True)
    except OSError as exc:
        raise git_missing(exc) from exc


class _Paths:
    """The entries of one tree (None: an empty one) by path, each folder's tree resolved once.

    libgit2 keeps no tree over 4 KiB in its object cache, so ``tree[path]`` reads and parses
    every folder on the way again for each path: capturing n files into one folder cost n
    parses of a folder of n entries. Here a folder is parsed once and each name is a binary
    search in it.
    """

    def __init__(self, tree: pygit2.Tree | None) -> None:
        self._folders: dict[str, pygit2.Tree | None] = {"": tree}

    def __call__(self, path: str) -> pygit2.Object | None:
        folder, _, name = path.rpartition("/")
        tree = self._folder(folder)
        if tree is None:
            return None
        try:
            return tree[name]
        except KeyError:
            return None

    def oid(self, path: str) -> str | None:
        found = self(path)
        return str(found.id) if found is not None else None

    def _folder(self, folder: str) -> pygit2.Tree | None:
        if folder not in self._folders:
            found = self(folder)
            self._folders[folder] = found if isinstance(found, pygit2.Tree) else None
        return self._folders[folder]


def _kind(mode: int) -> str:
    kinds: dict[int, str] = {int(FileMode.LINK): "symlink", int(FileMode.TREE): "folder",
                             int(FileMode.COMMIT): "submodule"}
    return kinds.get(int(mode), "file")


class _IndexLock:
    """git's ``index.lock`` for one working tree, held from reading the index to writing it.

    Created with O_CREAT|O_EXCL exactly as git creates it, so git and okfgit exclude each
    other; its device and inode go into the journal first thing, so a lock a killed
    okfgit left is told apart from a live git process's. The index is read from a copy
    (libgit2 writes an index file only through its own ``<file>.lock``), modified, and its
    bytes written into ``index.lock``, which is then renamed over ``index``. Leaving the
    block without ``commit()`` removes the lock and leaves ``index`` as it was.
    """

    def __init__(self, repo: Repo, ctx: Context, intent: journal.Intent | None = None) -> None:
        self.repo = repo
        self.ctx = ctx
        self.path = repo.gitdir / "index.lock"
        self.scratch = repo.gitdir / INDEX_SCRATCH
        self.fd = -1
        self.linked = False  # index.lock is ours (linked from the scratch file)
        self.record = journal.Record(os.getpid(), ctx.clock(), intent=intent)
        self.index: pygit2.Index

    def __enter__(self) -> "_IndexLock":
        # The lock file is made under okfgit's own scratch name first and its identity put in
        # the journal, then linked to index.lock (a link fails when the name exists, as
        # O_EXCL does): a kill at any point leaves either no index.lock or one the journal
        # names, never one the next run cannot tell from a live git process's.
        made = self.repo.gitdir / INDEX_LOCK_SCRATCH
        try:
            self.fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
            st = os.fstat(self.fd)
        except OSError as exc:
            raise UnwritableError(f"cannot create {self.path}: {exc.strerror or exc} (nothing was changed)") from exc
        self.record.index_lock = (st.st_dev, st.st_ino)
        try:
            journal.save(self.repo.journal_file, self.record, durable=False)
            deadline = time.monotonic() + INDEX_LOCK_WAIT_S
            while True:
                try:
                    os.link(made, self.path)
                    self.linked = True
                    break
                except FileExistsError:
                    if time.monotonic() >= deadline:
                        raise BusyError(
                            f"{self.path} exists: another git process seems to be running in {self.repo.workdir}; "
                            "nothing was changed. Retry when it is done (if no git process is running, remove "
                            "that file first)"
                        ) from None
                    time.sleep(0.05)
                except OSError as exc:
                    raise UnwritableError(f"cannot create {self.path}: {exc.strerror or exc} (nothing was changed)") from exc
            made.unlink()
        except BaseException:
            self._drop()
            made.unlink(missing_ok=True)
            raise
        try:
            crash_point(self.ctx, "index-locked")
            current = self.repo.gitdir / "index"
            for left in (self.scratch, self.scratch.with_name(self.scratch.name + ".lock")):
                try:
                    left.unlink()  # a killed okfgit's (this repository's write lock is held)
                except FileNotFoundError:
                    pass
            if current.exists():
                fsutil.atomic_write(self.scratch, current.read_bytes(), fsync=False)
            self.index = pygit2.Index(str(self.scratch))
        except BaseException:
            self._drop()
            raise
        return self

    def commit(self) -> None:
        """Write the index into ``index.lock`` and rename it over ``index``."""
        self.index.write()
        data = self.scratch.read_bytes()
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]
        os.fsync(self.fd)  # one fsync: an index lost to a power cut would be behind HEAD
        os.close(self.fd)
        self.fd = -1
        os.replace(self.path, self.repo.gitdir / "index")
        crash_point(self.ctx, "index-written")
        # ref, working tree and index agree now: the intent is done
        self.record.intent = None
        self._cleanup()

    def _drop(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            if self.linked:  # never another process's index.lock
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass
        self._cleanup()

    def _cleanup(self) -> None:
        try:
            self.scratch.unlink()
        except FileNotFoundError:
            pass
        if self.record.index_lock is None and self.record.intent is None:
            return
        self.record.index_lock = None
        if self.record.intent is None:
            journal.clear(self.repo.journal_file)
        else:
            # the index was not written: the intent stays for the next run to finish
            journal.save(self.repo.journal_file, self.record, durable=False)

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: object) -> None:
        self._drop()


def _add_entry(index: pygit2.Index, path: str, oid: str, mode: int, st: os.stat_result | None) -> None:
    """Add ``path`` -> ``oid`` to ``index`` with the file's stat data, as ``git add`` records it.

    pygit2's IndexEntry carries no stat data, and an entry without it looks modified to
    git's plumbing until the next refresh; so the C entry is filled here.
    """
    entry = ffi.new("git_index_entry *")
    if st is not None:
        entry.ctime.seconds = int(st.st_ctime) & 0x7FFFFFFF
        entry.ctime.nanoseconds = st.st_ctime_ns % 1_000_000_000
        entry.mtime.seconds = int(st.st_mtime) & 0x7FFFFFFF
        entry.mtime.nanoseconds = st.st_mtime_ns % 1_000_000_000
        entry.dev = st.st_dev & 0xFFFFFFFF
        entry.ino = st.st_ino & 0xFFFFFFFF
        entry.uid = st.st_uid & 0xFFFFFFFF
        entry.gid = st.st_gid & 0xFFFFFFFF
        entry.file_size = st.st_size & 0xFFFFFFFF
    entry.mode = int(mode)
    ffi.buffer(ffi.addressof(entry, "id"))[:] = pygit2.Oid(hex=oid).raw[:]
    name = ffi.new("char[]", os.fsencode(path))
    entry.path = name
    err = C.git_index_add(index._index, entry)
    if err < 0:
        raise IntegrityError(f"cannot stage {path} in the index (libgit2 error {err})")


def _lstat_mode(path: str | Path) -> int | None:
    """The mode of ``path`` itself (a link is not followed), None when nothing is there:
    one system call where ``is_symlink``, ``exists`` and ``is_dir`` make three."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _read_file(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _owner_writable(path: Path) -> bool:
    """The owner's write bit is set: root could write anyway, but a read-only mode is a person's
    "do not change this", and okfgit honours it for everyone alike."""
    try:
        return bool(os.stat(path).st_mode & 0o200)
    except OSError:
        return True


def crash_point(ctx: Context, name: str) -> None:
    """For the crash tests only (``OKFGIT_TEST_CRASH_AT=<name>``): die at a named step, as a
    kill -9 would. Nothing else reads the variable."""
    if ctx.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


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


def _entry_oid(commit: pygit2.Commit, path: str) -> str | None:
    try:
        return str(commit.tree[path].id)
    except KeyError:
        return None
