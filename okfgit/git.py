"""Git plumbing: the only module that imports pygit2.

Reads come from tree objects at a revision, never from the working tree. Writes are
one commit built from an in-memory tree (HEAD tree + changed blobs); the branch ref
moves by compare-and-swap on the old HEAD (``git update-ref <ref> <new> <old>``), and
then exactly the written paths are updated in the working tree and the index, like
``git commit --only <paths>``. Anything else the user had staged stays staged.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileMode, RepositoryState

from okfgit import fsutil
from okfgit.local import fastpath
from okfgit.context import Context
from okfgit.errors import IntegrityError, RepoStateError, UsageError

ZERO = "0" * 40
_GIT_ENV_VARS = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY",
                 "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_PREFIX")

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


def blob_oid(data: bytes) -> str:
    """The git blob OID of ``data`` (what ``git hash-object`` prints)."""
    return str(pygit2.hash(data))


def clean_git_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment without the variables a git hook sets for its own repository."""
    return {k: v for k, v in environ.items() if k not in _GIT_ENV_VARS}


@dataclass(frozen=True)
class Entry:
    """A blob in a tree: its OID and file mode (symlinks have mode 0o120000)."""

    oid: str
    mode: int

    @property
    def is_link(self) -> bool:
        return self.mode == FileMode.LINK


@dataclass(frozen=True)
class Change:
    """One path changed between two trees (``old``/``new`` None when added/removed)."""

    path: str
    old: str | None
    new: str | None


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
        if self.common_dir == self.gitdir:
            return self.workdir
        common = self.common_dir
        if common.name == ".git":
            return common.parent.resolve()
        return self.workdir

    def config_get(self, key: str) -> str | None:
        try:
            value = self.raw.config[key]
        except (KeyError, pygit2.GitError):
            return None
        return str(value)

    def config_set(self, key: str, value: str) -> None:
        """Set ``key`` in the repository's own config (like ``git config KEY VALUE``)."""
        self.raw.config[key] = value

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

    def read_blob(self, oid: str) -> bytes:
        # Straight from the object database: about 40% cheaper than Repository[oid], which
        # counts when doctor reads 10,000 blobs.
        return bytes(self.raw.odb.read(oid)[1])

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

    def merge_base(self, a: str, b: str) -> str | None:
        found = self.raw.merge_base(a, b)
        return str(found) if found else None

    # -- writing --------------------------------------------------------------------

    def check_writable_state(self) -> str:
        """The branch ref a commit would move; RepoStateError when the repo is mid-operation."""
        state = self.raw.state()
        if state != RepositoryState.NONE:
            what = _STATE_NAMES.get(state, "an operation")
            raise RepoStateError(
                f"{self.workdir} is in the middle of {what}; finish or abort it, then retry (nothing was changed)"
            )
        if (self.gitdir / "BISECT_LOG").exists():
            raise RepoStateError(f"{self.workdir} is in the middle of a bisect; nothing was changed")
        branch = self.head_branch()
        if branch is None:
            raise RepoStateError(
                f"{self.workdir}: HEAD is detached; check out a branch first (nothing was changed)"
            )
        return branch

    def dirty_paths(self, paths: Mapping[str, bytes | None], commit: str | None) -> list[str]:
        """Paths among ``paths`` whose working-tree or staged content differs from ``commit``.

        A file that already holds exactly the bytes to be written is not in the way.
        """
        head = {}
        if commit is not None:
            tree = self.raw[commit].peel(pygit2.Tree)
            for path in paths:
                try:
                    head[path] = str(tree[path].id)
                except KeyError:
                    pass
        index = self.raw.index
        index.read(False)
        dirty: list[str] = []
        for path, new in paths.items():
            want = blob_oid(new) if new is not None else None
            at_head = head.get(path)
            file = self.workdir / path
            if file.is_symlink() or file.exists():
                if file.is_dir() and not file.is_symlink():
                    dirty.append(path)
                    continue
                current = blob_oid(os.readlink(file).encode() if file.is_symlink() else file.read_bytes())
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

    def commit_paths(
        self,
        ctx: Context,
        changes: Mapping[str, bytes | None],
        message: str,
        *,
        branch: str | None = None,
        new_branch: bool = False,
        merge_parent: str | None = None,
    ) -> str:
        """Commit ``changes`` (repo path -> bytes, None to delete) as one commit.

        With ``branch`` the commit goes on that branch (created from HEAD with
        ``new_branch``) and the working tree is not touched. With ``merge_parent`` it is
        a merge commit: that commit is its second parent (the tree is still HEAD's tree
        plus ``changes``). Returns the new commit OID.
        """
        for path in changes:
            fsutil.safe_relpath(path)
        if branch is None:
            ref = self.check_writable_state()
            parent = self.head_commit()
            update_worktree = True
        else:
            ref = f"refs/heads/{branch}"
            if new_branch:
                if self.branch_exists(branch):
                    raise UsageError(f"branch {branch!r} already exists in {self.workdir}")
                parent = self.head_commit()
            else:
                parent = self.resolve(ref)
            update_worktree = False
        self._check_folders(changes, parent, on_disk=update_worktree)
        if update_worktree:
            dirty = self.dirty_paths(changes, parent)
            if dirty:
                raise RepoStateError(
                    f"{self.workdir}: uncommitted edits in {', '.join(sorted(dirty))}; "
                    "commit or stash them first (nothing was changed)"
                )
        tree = self._build_tree(parent, changes)
        sig_author, sig_committer = self._signatures(ctx)
        parents = [pygit2.Oid(hex=parent)] if parent else []
        if merge_parent is not None:
            parents.append(pygit2.Oid(hex=merge_parent))
        commit = self.raw.create_commit(None, sig_author, sig_committer, message, tree, parents)
        expected = "" if new_branch else (parent or "")
        self._cas_ref(ctx, ref, str(commit), expected, message)
        if update_worktree:
            self._update_worktree(changes)
        return str(commit)

    def fast_forward(self, ctx: Context, target: str) -> list[str]:
        """Move the current branch forward to ``target`` (a descendant of HEAD, or any commit
        on an unborn branch) and update exactly the paths that differ, like ``commit_paths``:
        refuses, changing nothing, when the repository is busy or a path to be updated has
        uncommitted edits. Returns the paths updated."""
        ref = self.check_writable_state()
        parent = self.head_commit()
        changes: dict[str, bytes | None] = {
            c.path: (self.read_blob(c.new) if c.new else None)
            for c in self.diff_paths(self.tree_oid(parent), self.tree_oid(target))
        }
        for path in changes:
            fsutil.safe_relpath(path)  # a tree from elsewhere may hold a path git would never write
        self._check_folders(changes, parent, on_disk=True)
        dirty = self.dirty_paths(changes, parent)
        if dirty:
            raise RepoStateError(
                f"{self.workdir}: uncommitted edits in {', '.join(sorted(dirty))}; "
                "commit or stash them first (nothing was changed)"
            )
        self._cas_ref(ctx, ref, target, parent or "", f"fast-forward to {target[:12]}")
        self._update_worktree(changes)
        return sorted(changes)

    def _check_folders(self, changes: Mapping[str, bytes | None], parent: str | None, *, on_disk: bool) -> None:
        """Refuse, before anything is written, paths that would go through a file or a symlink.

        Every folder above a written path must be a folder at ``parent`` (or absent) and,
        in the working tree, a real folder (or absent); a written path must not be a
        symlink or a folder. Otherwise the commit would silently replace a committed link
        or file, or the working-tree update would write outside the repository.
        """
        tree = self.raw[parent].peel(pygit2.Tree) if parent is not None else None
        problems: list[str] = []
        for path, data in sorted(changes.items()):
            parts = path.split("/")
            for depth in range(1, len(parts) + 1):
                prefix = "/".join(parts[:depth])
                last = depth == len(parts)
                at_head = _lookup(tree, prefix) if tree is not None else None
                if at_head is not None:
                    if not last and at_head.type_str != "tree":
                        problems.append(f"{prefix} is a {_kind(at_head.filemode)} at HEAD, not a folder")
                    elif last and data is not None and at_head.type_str != "blob":
                        problems.append(f"{prefix} is a {_kind(at_head.filemode)} at HEAD")
                    elif last and data is not None and at_head.filemode == FileMode.LINK:
                        problems.append(f"{prefix} is a symlink at HEAD; okfgit never writes through links")
                if on_disk:
                    disk = self.workdir / prefix
                    if disk.is_symlink():
                        problems.append(f"{prefix} is a symlink in the working tree; okfgit never writes through links")
                    elif not last and disk.exists() and not disk.is_dir():
                        problems.append(f"{prefix} is a file in the working tree, not a folder")
                    elif last and data is not None and disk.exists() and not disk.is_file():
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
        proc = subprocess.run(
            ["git", f"--git-dir={self.gitdir}", "update-ref", "-m", f"okfgit: {subject}", ref, new, old or ZERO],
            env=clean_git_env(ctx.environ),
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise IntegrityError(
                f"{self.workdir}: {ref} moved while okfgit was writing; nothing was changed "
                f"({proc.stderr.strip()})"
            )

    def _update_worktree(self, changes: Mapping[str, bytes | None]) -> None:
        index = self.raw.index
        index.read(False)
        for path, data in sorted(changes.items()):
            file = self.workdir / path
            if data is None:
                if file.exists() or file.is_symlink():
                    file.unlink()
                    _prune_empty_dirs(file.parent, self.workdir)
                if path in index:
                    index.remove(path)
                continue
            fsutil.atomic_write(file, data, fsync=True)
            index.add(path)
        _write_index(index, self.workdir)


def _lookup(tree: pygit2.Tree, path: str) -> pygit2.Object | None:
    try:
        return tree[path]
    except KeyError:
        return None


def _kind(mode: int) -> str:
    kinds: dict[int, str] = {int(FileMode.LINK): "symlink", int(FileMode.TREE): "folder",
                             int(FileMode.COMMIT): "submodule"}
    return kinds.get(int(mode), "file")


def _write_index(index: pygit2.Index, workdir: Path) -> None:
    """Write the index; another git process may hold index.lock for a moment, so retry briefly."""
    for attempt in range(50):
        try:
            index.write()
            return
        except pygit2.GitError as exc:
            if "lock" not in str(exc).lower() or attempt == 49:
                raise IntegrityError(
                    f"{workdir}: the commit landed but the index could not be updated ({exc}); "
                    "run `git reset --mixed` to resync it"
                ) from exc
            time.sleep(0.1)


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
