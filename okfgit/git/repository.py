"""``Repo``: a repository with a working tree, read through pygit2.

Reads come from objects: refs, trees at a revision, blobs, the differences between two trees,
history. Paths are ``/``-separated and relative to the tree asked about; trees and commits
are named by OID. The writes (``commit_paths``, ``fast_forward``, ``recover``) are methods too,
carried out by ``commit`` and ``recovery``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2
from pygit2.enums import RepositoryOpenFlag, RepositoryState, SortMode

from okfgit.errors import RepoStateError, UnwritableError, UsageError
from okfgit.git import config
from okfgit.git.objects import Change, Entry, blob_oid, text_path
from okfgit.local import fastpath, lock
from okfgit.local import paths as okf_paths
from okfgit.local.noop import operation

if TYPE_CHECKING:
    from okfgit.context import Context

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
_READ_ERRORS = (KeyError, ValueError, pygit2.GitError)

# libgit2 maps pack files in windows of 1 GiB up to 8 GiB by default, and a page once read
# stays in the process (its resident memory): reading every blob of a large knowledge base
# held the whole pack. Windows of 4 MiB, at most 16 MiB mapped, keep what a read holds
# bounded; a tree's blobs lie in the pack about in the order a walk reads them, so a few
# small windows cost no more reads than large ones.
pygit2.settings.mwindow_size = 4 * 1024 * 1024
pygit2.settings.mwindow_mapped_limit = 16 * 1024 * 1024


class Repo:
    """A git repository with a working tree.

    ``environ`` is the environment git runs in when okfgit must ask git itself (``config_get``);
    by default this process's, read at the time of asking.
    """

    def __init__(self, raw: pygit2.Repository, environ: Mapping[str, str] | None = None) -> None:
        if raw.workdir is None:
            raise UsageError(f"{raw.path}: bare repositories are not supported")
        self.raw = raw  # the pygit2 repository: for the git layer's own modules only
        self._environ = environ
        self.workdir = Path(raw.workdir)  # libgit2 gives both as real paths
        self.gitdir = Path(raw.path)

    # -- opening --------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, environ: Mapping[str, str] | None = None) -> Repo:
        """The repository whose working tree root is exactly ``path``."""
        try:
            raw = pygit2.Repository(str(path), RepositoryOpenFlag.NO_SEARCH)
        except pygit2.GitError as exc:
            raise UsageError(f"{path}: not a git repository") from exc
        return cls(raw, environ)

    @classmethod
    def init(cls, path: Path) -> Repo:
        path.mkdir(parents=True, exist_ok=True)
        return cls(pygit2.init_repository(str(path), initial_head="main"))

    # -- identity and configuration ------------------------------------------------

    @property
    def common_dir(self) -> Path:
        """The main repository's git dir (differs from ``gitdir`` in a linked worktree)."""
        return Path(fastpath.common_dir(str(self.gitdir)))

    @property
    def main_workdir(self) -> Path:
        """The canonical repo root, as Claude Code 2.1.332 finds it: a linked worktree maps to
        the main working tree's root, or to the repository itself when that is bare."""
        common = self.common_dir
        if common == self.gitdir:
            return self.workdir
        if common.name == ".git":
            return common.parent.resolve()
        return self.workdir if (common / ".git").exists() else common.resolve()

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    def config_get(self, key: str) -> str | None:
        """``key`` as the user's git reads it for this repository (``git.config``); None when unset."""
        try:
            return config.get(self.environ, key, cwd=self.workdir, gitdir=self.gitdir)
        except UsageError:
            return None

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

    def add_remote(self, name: str, url: str) -> None:
        """``git remote add NAME URL``: the remote and its default fetch refspec."""
        try:
            self.raw.remotes.create(name, url)
        except (pygit2.GitError, ValueError) as exc:
            raise UsageError(f"{self.workdir}: cannot add the remote {name!r}: {exc}") from exc

    def set_remote_url(self, name: str, url: str) -> None:
        """``git remote set-url NAME URL``."""
        self.raw.remotes.set_url(name, url)

    def remove_remote(self, name: str) -> None:
        """``git remote remove NAME``: its configuration and its remote-tracking refs."""
        try:
            self.raw.remotes.delete(name)
        except (pygit2.GitError, KeyError) as exc:
            raise UsageError(f"{self.workdir}: cannot remove the remote {name!r}: {exc}") from exc

    # -- refs and history -------------------------------------------------------------

    def head_commit(self) -> str | None:
        """The commit HEAD points at, or None for an unborn branch."""
        if self.raw.head_is_unborn:
            return None
        return str(self.raw.head.target)

    def head_branch(self) -> str | None:
        """``refs/heads/<name>`` that HEAD names (born or not), or None when HEAD is detached."""
        if self.raw.head_is_detached:
            return None
        return self.symbolic_target("HEAD")

    def symbolic_target(self, ref: str) -> str | None:
        """The ref a symbolic ref points at (``refs/remotes/origin/HEAD`` -> ``refs/remotes/origin/main``)."""
        found = self.raw.references.get(ref)
        if found is None:
            return None
        target = found.target
        return target if isinstance(target, str) else None

    def previous_branch(self, commit: str) -> str | None:
        """The branch checked out before the checkout that just moved HEAD from ``commit``
        (git's ``@{-1}``), when HEAD's newest reflog entry is that checkout (from ``commit`` to
        HEAD now) and the branch still points at ``commit``; None when nothing proves one (no
        reflog, an expired one, a newest entry that is another move, a detached previous HEAD).
        A missing reflog is not read: libgit2 would create it, and git then appends to it."""
        head = self.raw.references.get("HEAD")
        if head is None or not (self.gitdir / "logs" / "HEAD").is_file():
            return None
        entry = next(iter(head.log()), None)
        if entry is None or not entry.message.startswith("checkout: moving from ") \
                or str(entry.oid_old) != commit or str(entry.oid_new) != self.head_commit():
            return None
        name = entry.message[len("checkout: moving from "):].rsplit(" to ", 1)[0]
        return name if self.ref_target(f"refs/heads/{name}") == commit else None

    def resolve(self, rev: str) -> str:
        """A revision to its commit OID; UsageError if it does not resolve."""
        try:
            if rev.startswith("-"):
                raise ValueError(rev)
            return str(self.raw.revparse_single(rev).peel(pygit2.Commit).id)
        except (*_READ_ERRORS, pygit2.InvalidSpecError) as exc:
            raise UsageError(f"{rev!r} does not resolve to a commit in {self.workdir}") from exc

    def ref_target(self, ref: str) -> str | None:
        """The commit a ref (``refs/heads/main``) points at, None when there is no such ref."""
        found = self.raw.references.get(ref)
        if found is None:
            return None
        return str(found.resolve().target)

    def set_ref(self, ref: str, commit: str, message: str) -> None:
        """Point ``ref`` at ``commit`` whatever it pointed at (a remote-tracking ref after a push)."""
        self.raw.create_reference_direct(ref, commit, True, message=message)

    def refs_under(self, prefix: str) -> list[str]:
        """The names of the refs under ``prefix`` (``refs/remotes/origin/``), sorted."""
        return sorted(name for name in self.raw.references if name.startswith(prefix))

    def branch_exists(self, name: str) -> bool:
        return f"refs/heads/{name}" in self.raw.references

    @staticmethod
    def valid_branch_name(name: str) -> bool:
        """``name`` is a branch name git accepts (``git check-ref-format --branch``)."""
        return not name.startswith("-") and pygit2.reference_is_valid_name(f"refs/heads/{name}")

    def parents(self, commit: str) -> list[str]:
        """The parent commit OIDs of ``commit``, first parent first."""
        return [str(p) for p in self.raw[commit].peel(pygit2.Commit).parent_ids]

    def log(self, base: str | None, head: str) -> Iterator[tuple[str, str, str]]:
        """Commits reachable from ``head`` and not from ``base``: (oid, author, message)."""
        walker = self.raw.walk(head, SortMode.TOPOLOGICAL)
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

    def descends(self, commit: str, ancestor: str) -> bool:
        """``commit`` has ``ancestor`` in its history (and is not it)."""
        try:
            return bool(self.raw.descendant_of(commit, ancestor))
        except _READ_ERRORS:
            return False

    # -- trees ------------------------------------------------------------------------

    def tree_oid(self, commit: str | None, prefix: str = "") -> str | None:
        """The OID of the tree at ``prefix`` in ``commit``; None when absent."""
        if commit is None:
            return None
        tree = self.raw[commit].peel(pygit2.Tree)
        prefix = prefix.strip("/")
        if not prefix:
            return str(tree.id)
        try:
            entry = tree[prefix]
        except KeyError:
            return None
        return str(entry.id) if entry.type_str == "tree" else None

    def tree_entries(self, commit: str | None, prefix: str = "") -> dict[str, Entry]:
        """Every blob (file or symlink) under ``prefix`` at ``commit``, keyed by path relative to
        ``prefix``, in path order (``blobs``)."""
        return dict(self.blobs(commit, prefix))

    def blobs(self, commit: str | None, prefix: str = "") -> Iterator[tuple[str, Entry]]:
        """Every blob (file or symlink) under ``prefix`` at ``commit`` as (path relative to
        ``prefix``, entry), in path order, one at a time: the walk holds the folders it is in,
        not every path of the tree (a first read of 100,000 concepts)."""
        tree = self.tree_oid(commit, prefix)
        if tree is not None:
            yield from self._walk(self.raw[tree].peel(pygit2.Tree), "")

    def _walk(self, tree: pygit2.Tree, base: str) -> Iterator[tuple[str, Entry]]:
        # A folder's path sorts as its name and a "/" (git's own rule), so going down the
        # folders in this order gives every path in the order of the path strings.
        for item in sorted(tree, key=lambda i: f"{i.name}/" if i.type_str == "tree" else i.name or ""):
            kind = item.type_str
            if kind == "tree":
                yield from self._walk(self.raw[item.id].peel(pygit2.Tree), f"{base}{item.name}/")
            elif kind == "blob":
                # interned: the facts of a large tree name these paths again (where links lead)
                yield sys.intern(text_path(base + (item.name or ""))), Entry(str(item.id), int(item.filemode))

    def entry_at(self, commit: str | None, path: str) -> Entry | None:
        """The tree entry at ``path`` in ``commit`` (blob, tree, link or submodule), or None."""
        path = path.strip("/")
        if commit is None or not path:
            return None
        try:
            item = self.raw[commit].peel(pygit2.Tree)[path]
        except KeyError:
            return None
        return Entry(str(item.id), int(item.filemode))

    def listing(self, tree: str, folder: str = "") -> dict[str, Entry]:
        """The entries directly in ``folder`` of the tree ``tree``, by name, of every kind
        (blobs, trees, submodules); empty when there is no such folder."""
        return self._listing(self.raw[tree].peel(pygit2.Tree), folder.strip("/"))

    def _listing(self, root: pygit2.Tree, folder: str) -> dict[str, Entry]:
        try:
            sub = root[folder] if folder else root
        except KeyError:
            return {}
        if sub.type_str != "tree":
            return {}
        return self._items(str(sub.id))

    def entries_in(self, tree: str, paths: list[str]) -> dict[str, Entry | None]:
        """The entry at each of ``paths`` inside the tree ``tree``, None where absent; each
        folder's listing read once (a diff's changed paths, without a walk)."""
        root = self.raw[tree].peel(pygit2.Tree)
        folders: dict[str, dict[str, Entry]] = {}
        out: dict[str, Entry | None] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            if folder not in folders:
                folders[folder] = self._listing(root, folder)
            out[path] = folders[folder].get(name)
        return out

    def diff_paths(self, old_tree: str | None, new_tree: str | None) -> list[Change]:
        """Blob and submodule paths that differ between two trees (renames not detected), one
        change per path; subtrees with equal OIDs are not read (libgit2's tree
        diff reads every subtree of both)."""
        out: list[Change] = []
        if old_tree != new_tree:
            self._diff(old_tree, new_tree, "", out)
        return out

    def _diff(self, old_tree: str | None, new_tree: str | None, base: str, out: list[Change]) -> None:
        old, new = self._items(old_tree), self._items(new_tree)
        for name in sorted(old.keys() | new.keys()):
            a, b = old.get(name), new.get(name)
            if a == b:
                continue
            path = base + name
            if (a is not None and a.is_tree) or (b is not None and b.is_tree):
                self._diff(a.oid if a is not None and a.is_tree else None,
                           b.oid if b is not None and b.is_tree else None, f"{path}/", out)
            before = a.oid if a is not None and not a.is_tree else None
            after = b.oid if b is not None and not b.is_tree else None
            if before or after:  # a change of kind (file to folder) is a change and a walk
                out.append(Change(path, before, after))

    def _items(self, tree: str | None) -> dict[str, Entry]:
        """The entries directly in the tree ``tree`` (none for None), by name."""
        if tree is None:
            return {}
        return {text_path(item.name or ""): Entry(str(item.id), int(item.filemode))
                for item in self.raw[tree].peel(pygit2.Tree)}

    # -- blobs ------------------------------------------------------------------------

    def read_blob(self, oid: str) -> bytes:
        """The bytes of blob ``oid``; KeyError when the repository does not have it."""
        try:
            kind, data = self.raw.odb.read(oid)
        except _READ_ERRORS as exc:
            raise KeyError(oid) from exc
        if kind != pygit2.enums.ObjectType.BLOB:
            raise KeyError(oid)
        return bytes(data)

    def store_blob(self, data: bytes) -> str | None:
        """Put ``data`` in the object database as a blob no tree refers to (until gc prunes
        it), so okfgit can read back later what it wrote outside any tier; None when it
        cannot (a read-only repository, another okfgit writing: it is only a memory aid).
        Holds the write lock, as every object write does (a killed writer's temp object is
        swept under it)."""
        from okfgit.errors import OkfError

        try:
            with lock.write_lock(self.common_dir, self.workdir, 0):
                return str(self.raw.create_blob(data))
        except (pygit2.GitError, OSError, OkfError):
            return None

    # -- the index ----------------------------------------------------------------------

    def index_behind(self, prefix: str, depth: int = 50) -> list[str]:
        """Paths under ``prefix`` that an okfgit commit wrote and whose index entry differs
        from HEAD: what the next ``git commit`` would revert. Looks at the last ``depth``
        first-parent commits for okfgit's (only when an index entry differs at all)."""
        head = self.head_commit()
        if head is None:
            return []
        try:
            index = self.raw.index
            index.read(False)
            deltas = self.raw[head].peel(pygit2.Tree).diff_to_index(index).deltas
        except _READ_ERRORS:
            return []  # an index libgit2 cannot read (a split index): git status says more
        inside = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        differs = {p for d in deltas for p in (d.old_file.path, d.new_file.path) if p.startswith(inside)}
        if not differs:
            return []
        written: set[str] = set()
        commit: pygit2.Commit | None = self.raw[head].peel(pygit2.Commit)
        for _ in range(depth):
            if commit is None:
                break
            parents = commit.parents
            if "\nOkf-Operation: " in "\n" + commit.message:
                before = str(parents[0].tree_id) if parents else None
                written.update(c.path for c in self.diff_paths(before, str(commit.tree_id)))
            commit = parents[0] if parents else None
        return sorted(differs & written)

    def unmerged(self, prefix: str = "") -> list[str]:
        """Paths under ``prefix`` that the index holds unmerged (a conflict not yet resolved)."""
        index = self.raw.index
        index.read(False)
        inside = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        return sorted({e.path for sides in (index.conflicts or ()) for e in sides
                       if e is not None and str(e.path).startswith(inside)})

    def dirty_paths(self, paths: Mapping[str, bytes | None], commit: str | None,
                    staged: Mapping[str, str | None] | None = None) -> list[str]:
        """Paths among ``paths`` whose working-tree or staged content differs from ``commit``.

        A file that already holds exactly the bytes to be written is not in the way.
        ``staged`` is the index's OID for each path (read under ``index.lock``); by default
        the index is read here.
        """
        at = Paths(self.raw[commit].peel(pygit2.Tree) if commit is not None else None)
        if staged is None:
            index = self.raw.index
            index.read(False)
            staged = {p: (str(index[p].id) if p in index else None) for p in paths}
        dirty: list[str] = []
        root = str(self.workdir)
        for path, new in paths.items():
            allowed = (at.oid(path), blob_oid(new) if new is not None else None)
            on_disk = worktree_oid(os.path.join(root, path))  # strings: a Path per file adds up at 1,000 files
            if on_disk == FOLDER or (on_disk is not None and on_disk not in allowed) \
                    or (on_disk is None and allowed[0] is not None):  # deleted but not committed
                dirty.append(path)
            elif staged.get(path) not in allowed:
                dirty.append(path)
        return dirty

    # -- writing (``commit``, ``recovery``) --------------------------------------------

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
            raise RepoStateError(f"{self.workdir}: HEAD is detached; check out a branch first (nothing was changed)")
        return branch

    def write_lock(self, ctx: Context, wait_s: float = lock.WRITE_WAIT_S) -> lock.Lock:
        """The repository's write lock (``<git common dir>/okf/sync.lock``): ``lock.write_lock``."""
        return lock.write_lock(self.common_dir, self.workdir, wait_s, now=ctx.clock)

    @property
    def journal_file(self) -> Path:
        return okf_paths.journal(self.common_dir, self.gitdir)

    def commit_paths(self, ctx: Context, changes: Mapping[str, bytes | None], message: str, *,
                     branch: str | None = None, new_branch: bool = False, merge_parent: str | None = None,
                     base: str | None = None) -> str:
        """Commit ``changes`` (repo path -> bytes, None to delete) as one commit: ``commit.commit_paths``."""
        from okfgit.git import commit

        return commit.commit_paths(self, ctx, changes, message, branch=branch, new_branch=new_branch,
                                   merge_parent=merge_parent, base=base)

    def fast_forward(self, ctx: Context, target: str) -> list[str]:
        """Move the current branch forward to ``target``: ``commit.fast_forward``."""
        from okfgit.git import commit

        return commit.fast_forward(self, ctx, target)

    def needs_recovery(self) -> bool:
        """A journal record, or a temp file of one a killed writer left half-written."""
        from okfgit.local import journal

        return journal.needs_recovery(self.journal_file)

    def recover(self, ctx: Context, wait_s: float = lock.WRITE_WAIT_S) -> list[str]:
        """Finish what a killed okfgit write left in this working tree: ``recovery.recover``."""
        from okfgit.git import recovery

        return recovery.recover(self, ctx, wait_s)


FOLDER = "folder"  # what ``worktree_oid`` says of a folder


def worktree_oid(path: str) -> str | None:
    """The blob OID of what is at ``path`` in a working tree (a symlink's target, a file's
    bytes), ``FOLDER`` for a folder, None when nothing is there."""
    try:
        if os.path.islink(path):
            return blob_oid(os.readlink(path).encode())
        with open(path, "rb") as fh:
            return blob_oid(fh.read())
    except IsADirectoryError:
        return FOLDER
    except (FileNotFoundError, NotADirectoryError):
        return None


class Paths:
    """The entries of one tree (None: an empty one) by path, each folder's tree resolved once.

    libgit2 keeps no tree over 4 KiB in its object cache, so ``tree[path]`` reads and parses
    every folder on the way again for each path; here a folder is parsed once and each name
    is a lookup in it.
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


def _entry_oid(commit: pygit2.Commit, path: str) -> str | None:
    try:
        return str(commit.tree[path].id)
    except KeyError:
        return None
