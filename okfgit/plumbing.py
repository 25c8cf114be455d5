"""Reading a repository through git's own plumbing, for a process that only reads.

Loading libgit2 (``import pygit2``) costs a Python process about 80 ms, more than everything
a warm ``cat``, ``search`` or one-change ``project`` does after it. A process that reads a
tier and writes no commit reads through ``Plumbing``: one long-lived ``git cat-file --batch``
per repository, shared by every reader of it in the process (started on the first object read;
objects are asked for by OID only),
``git ls-tree -r`` for a whole tree, ``git rev-parse`` and ``git config`` for what only git
can answer, and the refs read straight from the files (``local/fastpath``) when they are
plain. What it reads is what git itself reads; replace refs are ignored, as libgit2 does.
A write verb opens ``git.Repo`` (libgit2) for the commit; both answer the same questions
(``Reader``), with the same meaning, so a reader never knows which it was given.

This module also holds the data every reader returns (``Entry``, ``Change``), the one way
okfgit runs a git command (``run_git``, outside any hook's repository variables), and the
repository's layout as files (``locate``). Standard library only.
"""

from __future__ import annotations

import _thread
import os
import weakref
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol

from okfgit.errors import IntegrityError, UsageError
from okfgit.local import fastpath

if TYPE_CHECKING:
    import subprocess

# The variables a git hook sets for its own repository: a git command okfgit runs on a tier
# must not inherit them (STYLE.md habit 5).
_GIT_ENV_VARS = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY",
                 "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_PREFIX")

LINK_MODE = 0o120000
FILE_MODE = 0o100644
TREE_MODE = 0o040000
_FILE_MODES = frozenset((FILE_MODE, 0o100755))
_HEX = frozenset("0123456789abcdef")
_MORE_SYSTEM_CONFIGS = ("/usr/local/etc/gitconfig",)  # a git built with another prefix reads its own
_CHUNK = 256  # OIDs asked for at once by read_blobs: their 11 KB of names fit in any pipe buffer


class Entry(NamedTuple):
    """A tree entry: its OID and file mode (symlinks have mode 0o120000)."""

    oid: str
    mode: int

    @property
    def is_link(self) -> bool:
        return self.mode == LINK_MODE

    @property
    def is_file(self) -> bool:
        """A regular file, executable or not."""
        return self.mode in _FILE_MODES

    @property
    def is_blob(self) -> bool:
        """A file or a symlink: an entry whose OID names a blob (not a folder or a submodule)."""
        return self.is_file or self.is_link

    @property
    def is_tree(self) -> bool:
        return self.mode == TREE_MODE


class Change(NamedTuple):
    """One path changed between two trees (``old``/``new`` None when added/removed)."""

    path: str
    old: str | None
    new: str | None


class Reader(Protocol):
    """What reading a tier asks of its repository; ``Plumbing`` and ``git.Repo`` both answer.

    Paths are ``/``-separated, relative to the tree asked about; entries are blobs (files and
    symlinks) unless a method says otherwise; trees and commits are named by OID.
    """

    workdir: Path
    gitdir: Path

    @property
    def common_dir(self) -> Path: ...

    @property
    def main_workdir(self) -> Path: ...

    def config_get(self, key: str) -> str | None: ...

    def remote_names(self) -> list[str]: ...

    def head_commit(self) -> str | None: ...

    def head_branch(self) -> str | None: ...

    def resolve(self, rev: str) -> str: ...

    def tree_oid(self, commit: str | None, prefix: str = "") -> str | None: ...

    def tree_entries(self, commit: str | None, prefix: str = "") -> dict[str, Entry]: ...

    def entry_at(self, commit: str | None, path: str) -> Entry | None: ...

    def listing(self, tree: str, folder: str = "") -> dict[str, Entry]: ...

    def entries_in(self, tree: str, paths: list[str]) -> dict[str, Entry | None]: ...

    def read_blob(self, oid: str) -> bytes: ...

    def read_blobs(self, oids: Iterable[str]) -> dict[str, bytes]: ...

    def iter_blobs(self, oids: Iterable[str]) -> Generator[tuple[str, bytes], None, None]:
        """Each blob as it is read, in order; other reads may come between, and ``close`` ends
        it early."""
        ...

    def diff_paths(self, old_tree: str | None, new_tree: str | None) -> list[Change]: ...


def blob_oid(data: bytes) -> str:
    """The git blob OID of ``data`` (what ``git hash-object`` prints)."""
    return sha1_hex(b"blob %d\0" % len(data) + data)


_SHA1: Callable[[bytes], Any] | None = None


def sha1_hex(data: bytes) -> str:
    """The SHA-1 of ``data`` in hex, from the interpreter's own ``_sha1`` module where there
    is one: ``hashlib`` loads OpenSSL, which costs a run that hashes one blob (a warm
    ``status`` or ``project``) 3 ms. The digest is the same either way."""
    global _SHA1
    if _SHA1 is None:
        try:
            from _sha1 import sha1  # type: ignore[import-not-found]
        except ImportError:  # an interpreter built without it (hashlib then has one)
            from hashlib import sha1
        _SHA1 = sha1
    return str(_SHA1(data).hexdigest())


def clean_git_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment without the variables a git hook sets for its own repository."""
    return {k: v for k, v in environ.items() if k not in _GIT_ENV_VARS}


def git_missing(exc: OSError) -> IntegrityError:
    return IntegrityError(f"cannot run git ({exc.strerror or exc}): install git or put it on PATH; "
                          "nothing was changed")


def run_git(environ: Mapping[str, str], args: list[str], cwd: Path | None = None,
            input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run git outside any hook's repository variables; IntegrityError when git cannot be run."""
    import subprocess  # a warm read that needs no git process does not import it

    try:
        return subprocess.run(["git", *args], cwd=cwd, env=clean_git_env(environ), input=input,
                              capture_output=True)
    except OSError as exc:
        raise git_missing(exc) from exc


def locate(path: Path) -> tuple[Path, Path] | None:
    """(working tree root, git dir) when ``path`` is exactly a working tree's root (its ``.git``
    a folder, or a file naming one: a linked worktree or submodule), both real paths; else None."""
    dotgit = os.path.join(path, ".git")
    try:
        if os.path.isdir(dotgit):
            return Path(os.path.realpath(path)), Path(os.path.realpath(dotgit))
        if os.path.isfile(dotgit):
            return Path(os.path.realpath(path)), Path(fastpath.gitfile_target(dotgit))
    except (fastpath.Unsure, OSError, UnicodeDecodeError):
        return None
    return None


class Plumbing:
    """A repository with a working tree, read through git's plumbing (see the module doc).

    ``environ`` is the environment git runs in (default: this process's, read when git
    starts), so ``config_get`` sees the same global configuration the caller's context does.
    """

    def __init__(self, workdir: Path, gitdir: Path, environ: Mapping[str, str] | None = None) -> None:
        self.workdir = workdir
        self.gitdir = gitdir
        self._environ = environ
        self._batch: _Batch | None = None

    @classmethod
    def open(cls, path: Path, environ: Mapping[str, str] | None = None) -> Plumbing:
        """The repository whose working tree root is exactly ``path``."""
        found = locate(path)
        if found is None:
            raise UsageError(f"{path}: not a git repository")
        return cls(*found, environ)

    @classmethod
    def discover(cls, start: Path, environ: Mapping[str, str] | None = None) -> Plumbing | None:
        """The repository containing ``start`` (walking up), or None."""
        try:
            found = fastpath.find_repo(str(start))
        except (fastpath.Unsure, OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{start}: the git repository here cannot be opened ({exc})") from exc
        if found is None:
            return None
        return cls(Path(found[0]), Path(found[1]), environ)

    # -- identity ----------------------------------------------------------------------

    @property
    def common_dir(self) -> Path:
        """The main repository's git dir (differs from ``gitdir`` in a linked worktree)."""
        return Path(fastpath.common_dir(str(self.gitdir)))

    @property
    def main_workdir(self) -> Path:
        """The main working tree's root: linked worktrees map to it."""
        return main_workdir(self.workdir, self.gitdir, self.common_dir)

    def _env(self) -> dict[str, str]:
        env = clean_git_env(os.environ if self._environ is None else self._environ)
        env["GIT_NO_REPLACE_OBJECTS"] = "1"  # read what the objects say, as libgit2 does
        return env

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        """git on this repository, from its working tree's root (pathspecs are relative to it)."""
        import subprocess

        try:
            return subprocess.run(["git", f"--git-dir={self.gitdir}", f"--work-tree={self.workdir}", *args],
                                  cwd=self.workdir, env=self._env(), capture_output=True, stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise git_missing(exc) from exc

    def config_get(self, key: str) -> str | None:
        if not self._config_may_set(key):
            return None
        proc = self._git("config", "--get", key)
        return proc.stdout.decode("utf-8", "replace").rstrip("\n") if proc.returncode == 0 else None

    def _config_may_set(self, key: str) -> bool:
        return config_may_set(os.environ if self._environ is None else self._environ, self.gitdir, key)

    def remote_names(self) -> list[str]:
        """The names of the repository's remotes (``git remote``)."""
        if not self._config_may_set("remote.origin.url"):
            return []
        proc = self._git("remote")
        return [n for n in proc.stdout.decode("utf-8", "replace").splitlines() if n] if proc.returncode == 0 else []

    # -- refs --------------------------------------------------------------------------

    def head_branch(self) -> str | None:
        """``refs/heads/<name>`` that HEAD names, or None when HEAD is detached."""
        try:
            return fastpath.head_ref(str(self.gitdir))
        except (fastpath.Unsure, OSError, UnicodeDecodeError):
            proc = self._git("symbolic-ref", "-q", "HEAD")
            return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def head_commit(self) -> str | None:
        """The commit HEAD points at, or None for an unborn branch."""
        try:
            return fastpath.read_head(str(self.gitdir))
        except (fastpath.Unsure, OSError, UnicodeDecodeError):
            proc = self._git("rev-parse", "-q", "--verify", "HEAD^{commit}")
            return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def previous_branch(self, commit: str) -> str | None:
        """The branch checked out before the last checkout (git's ``@{-1}``, from HEAD's reflog),
        when it still points at ``commit``; None when that was a detached HEAD, or it moved."""
        proc = self._git("rev-parse", "--symbolic-full-name", "@{-1}")
        ref = proc.stdout.decode("utf-8", "surrogateescape").strip()
        if proc.returncode != 0 or not ref.startswith("refs/heads/"):
            return None
        tip = self._git("rev-parse", "-q", "--verify", "--end-of-options", f"{ref}^{{commit}}")
        return ref[len("refs/heads/"):] if tip.returncode == 0 and tip.stdout.decode().strip() == commit else None

    def resolve(self, rev: str) -> str:
        """A revision to its commit OID; UsageError if it does not resolve."""
        proc = self._git("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}")
        if proc.returncode != 0 or rev.startswith("-"):
            raise UsageError(f"{rev!r} does not resolve to a commit in {self.workdir}")
        return proc.stdout.decode().strip()

    # -- objects -----------------------------------------------------------------------

    def _objects(self) -> _Batch:
        if self._batch is None:
            self._batch = _batch_for(self.gitdir, self._env())
        return self._batch

    def read_blob(self, oid: str) -> bytes:
        """The bytes of blob ``oid``; KeyError when the repository does not have it."""
        kind, data = self._objects().read(oid)
        if kind != "blob":
            raise KeyError(oid)
        return data

    def read_blobs(self, oids: Iterable[str]) -> dict[str, bytes]:
        """Many blobs at once (asked for in batches, not one round trip each); KeyError on a missing one."""
        return dict(self.iter_blobs(oids))

    def iter_blobs(self, oids: Iterable[str]) -> Generator[tuple[str, bytes], None, None]:
        """``read_blobs`` one blob at a time: while the caller works on one, git writes the next
        ones into the pipe, so reading and parsing overlap. Other reads may come between (the
        answers are matched to their askers); one closed early drops the rest of its batch."""
        for oid, kind, data in self._objects().read_many(oids):
            if kind != "blob":
                raise KeyError(oid)
            yield oid, data

    def _tree(self, oid: str) -> dict[str, Entry]:
        """The entries of tree ``oid`` by name (any kind of entry)."""
        kind, data = self._objects().read(oid)
        if kind != "tree":
            raise KeyError(oid)
        return _parse_tree(data, len(oid) // 2)

    def _root(self, commit: str) -> str:
        kind, data = self._objects().read(commit)
        while kind == "tag":  # as libgit2's peel: a tag names what it points at
            kind, data = self._objects().read(_header_field(data, b"object"))
        if kind != "commit":
            raise KeyError(commit)
        return _header_field(data, b"tree")

    def _subtree(self, tree: str, folder: str) -> str | None:
        """The OID of the tree at ``folder`` inside tree ``tree`` ("" is the tree itself)."""
        for name in folder.split("/") if folder else ():
            entry = self._tree(tree).get(name)
            if entry is None or not entry.is_tree:
                return None
            tree = entry.oid
        return tree

    def tree_oid(self, commit: str | None, prefix: str = "") -> str | None:
        """The OID of the tree at ``prefix`` in ``commit``; None when absent."""
        if commit is None:
            return None
        return self._subtree(self._root(commit), prefix.strip("/"))

    def tree_entries(self, commit: str | None, prefix: str = "") -> dict[str, Entry]:
        """Every blob under ``prefix`` at ``commit``, keyed by path relative to ``prefix``."""
        tree = self.tree_oid(commit, prefix)
        if tree is None:
            return {}
        proc = self._git("ls-tree", "-r", "-z", "--full-tree", tree)
        if proc.returncode != 0:
            raise KeyError(tree)
        out: dict[str, Entry] = {}
        for record in proc.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, oid = meta.split(b" ")
            if kind == b"blob":
                out[path.decode("utf-8", "surrogateescape")] = Entry(oid.decode(), int(mode, 8))
        return out

    def entry_at(self, commit: str | None, path: str) -> Entry | None:
        """The tree entry at ``path`` in ``commit`` (blob, tree, link or submodule), or None."""
        if commit is None or not path.strip("/"):
            return None
        folder, _, name = path.strip("/").rpartition("/")
        tree = self._subtree(self._root(commit), folder)
        return self._tree(tree).get(name) if tree is not None else None

    def listing(self, tree: str, folder: str = "") -> dict[str, Entry]:
        """The entries directly in ``folder`` of the tree ``tree``, by name, of every kind;
        empty when there is no such folder."""
        sub = self._subtree(tree, folder.strip("/"))
        return self._tree(sub) if sub is not None else {}

    def entries_in(self, tree: str, paths: list[str]) -> dict[str, Entry | None]:
        """The entry at each of ``paths`` inside the tree ``tree``, None where absent; each
        folder's listing read once."""
        folders: dict[str, dict[str, Entry]] = {}
        out: dict[str, Entry | None] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            if folder not in folders:
                folders[folder] = self.listing(tree, folder)
            out[path] = folders[folder].get(name)
        return out

    def diff_paths(self, old_tree: str | None, new_tree: str | None) -> list[Change]:
        """Blob and submodule paths that differ between two trees (renames not detected),
        in path order; subtrees with equal OIDs are never read."""
        out: list[Change] = []
        self._diff(old_tree, new_tree, "", out)
        return out

    def _diff(self, old: str | None, new: str | None, base: str, out: list[Change]) -> None:
        if old == new:
            return
        a = self._tree(old) if old else {}
        b = self._tree(new) if new else {}
        for name in sorted(a.keys() | b.keys(), key=_tree_order(a, b)):
            x, y = a.get(name), b.get(name)
            path = base + name
            if x is not None and y is not None and x == y:
                continue
            x_tree = x is not None and x.is_tree
            y_tree = y is not None and y.is_tree
            if x_tree or y_tree:
                self._diff(x.oid if x is not None and x_tree else None, y.oid if y is not None and y_tree else None,
                           path + "/", out)
            if x_tree and y is not None and not y_tree:
                out.append(Change(path, None, y.oid))
            elif y_tree and x is not None and not x_tree:
                out.append(Change(path, x.oid, None))
            elif not x_tree and not y_tree:
                out.append(Change(path, x.oid if x else None, y.oid if y else None))

    def unmerged(self, prefix: str = "") -> list[str]:
        """Paths under ``prefix`` that git's index holds unmerged (a conflict not yet resolved)."""
        proc = self._git("--literal-pathspecs", "ls-files", "--unmerged", "-z", "--", *([prefix] if prefix else []))
        if proc.returncode != 0:
            return []
        paths = {row.split(b"\t", 1)[1].decode("utf-8", "surrogateescape") for row in proc.stdout.split(b"\0") if b"\t" in row}
        return sorted(paths)

    def index_behind(self, prefix: str, depth: int = 50) -> list[str]:
        """Paths under ``prefix`` that an okfgit commit wrote and whose index entry differs
        from HEAD: what the next ``git commit`` would revert. Looks at the last ``depth``
        first-parent commits for okfgit's (only when an index entry differs at all)."""
        head = self.head_commit()
        if head is None:
            return []
        proc = self._git("--literal-pathspecs", "diff-index", "--cached", "--no-renames", "--name-only", "-z", head,
                         "--", *([prefix] if prefix else []))
        if proc.returncode != 0:
            return []
        differs = {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}
        if not differs:
            return []
        written: set[str] = set()
        commit: str | None = head
        for _ in range(depth):
            if commit is None:
                break
            tree, parents, message = self._commit(commit)
            if b"\nOkf-Operation: " in message:
                before = self._commit(parents[0])[0] if parents else None
                written.update(c.path for c in self.diff_paths(before, tree))
            commit = parents[0] if parents else None
        return sorted(differs & written)

    def _commit(self, oid: str) -> tuple[str, list[str], bytes]:
        """(tree, parents, message) of commit ``oid``."""
        kind, data = self._objects().read(oid)
        if kind != "commit":
            raise KeyError(oid)
        head, _, message = data.partition(b"\n\n")
        lines = head.split(b"\n")
        parents = [line[7:].decode() for line in lines if line.startswith(b"parent ")]
        return _header_field(data, b"tree"), parents, b"\n" + message

    def store_blob(self, data: bytes) -> str | None:
        """Put ``data`` in the object database as a blob no tree refers to (until gc prunes
        it); None when it cannot (a read-only repository: it is only a memory aid)."""
        import subprocess

        try:
            proc = subprocess.run(["git", f"--git-dir={self.gitdir}", "hash-object", "-w", "--stdin"],
                                  input=data, env=self._env(), capture_output=True)
        except OSError:
            return None
        return proc.stdout.decode().strip() if proc.returncode == 0 else None


def config_may_set(environ: Mapping[str, str], gitdir: Path, key: str) -> bool:
    """Whether any config git would read for the repository at ``gitdir`` could set ``key``.
    No file naming the key's section in a header and the key's name, and none including
    another (nor settings from the environment), means certainly not: git need not be asked
    (every command asks for ``okf.run``; every status for ``core.hooksPath``)."""
    import re

    if "GIT_CONFIG_PARAMETERS" in environ or "GIT_CONFIG_COUNT" in environ:
        return True
    section, _, name = key.lower().rpartition(".")
    header = re.compile(rb"\[\s*" + re.escape(section.split(".", 1)[0].encode()) + rb"\b")  # [okf], [okf "x"]
    for path in [*fastpath.config_files(environ, str(gitdir)), *_MORE_SYSTEM_CONFIGS]:
        try:
            with open(path, "rb") as fh:
                data = fh.read().lower()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return True
        if b"include" in data or (header.search(data) and name.encode() in data):  # any include: git must say
            return True
    return False


def main_workdir(workdir: Path, gitdir: Path, common_dir: Path) -> Path:
    """The main working tree's root of a repository (a linked worktree maps to it)."""
    if common_dir == gitdir:
        return workdir
    if common_dir.name == ".git":
        return common_dir.parent.resolve()
    return workdir


def _tree_order(a: Mapping[str, Entry], b: Mapping[str, Entry]) -> Callable[[str], str]:
    """Git's order of tree entries: a folder sorts as if its name ended with ``/``."""
    def key(name: str) -> str:
        entry = a.get(name) or b.get(name)
        return name + "/" if entry is not None and entry.is_tree else name
    return key


def _parse_tree(data: bytes, raw_len: int) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    i, end = 0, len(data)
    while i < end:
        space = data.index(b" ", i)
        nul = data.index(b"\0", space)
        mode = int(data[i:space], 8)
        name = data[space + 1:nul].decode("utf-8", "surrogateescape")
        out[name] = Entry(data[nul + 1:nul + 1 + raw_len].hex(), mode)
        i = nul + 1 + raw_len
    return out


def _header_field(data: bytes, field: bytes) -> str:
    for line in data.split(b"\n"):
        if not line:
            break
        if line.startswith(field + b" "):
            return line[len(field) + 1:].decode()
    raise KeyError(field.decode())


class _Batch:
    """One ``git cat-file --batch`` process: objects asked for by OID, answered in turn.

    Every reader of one repository in a process shares it (``_batch_for``), so reads may
    interleave: a stream of answers (``read_many``) still in the pipe while another read asks
    for one object. Each answer is matched to the OID it was asked for in the order asked;
    one read out of turn waits in ``_early`` for its reader, and the answers of a stream its
    caller abandoned are dropped as they come (``_drop``).

    Started with ``os.posix_spawnp`` and two pipes rather than ``subprocess`` (whose imports
    cost a warm read verb more than the rest of its work)."""

    def __init__(self, gitdir: Path, env: dict[str, str]) -> None:
        to_git, ours_in = os.pipe()
        ours_out, from_git = os.pipe()
        actions = [(os.POSIX_SPAWN_DUP2, to_git, 0), (os.POSIX_SPAWN_DUP2, from_git, 1),
                   (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
        try:
            self._pid = os.posix_spawnp("git", ["git", f"--git-dir={gitdir}", "cat-file", "--batch"], env,
                                        file_actions=actions)
        except OSError as exc:
            for fd in (to_git, ours_in, ours_out, from_git):
                os.close(fd)
            raise git_missing(exc) from exc
        os.close(to_git)
        os.close(from_git)
        self._in: IO[bytes] = os.fdopen(ours_in, "wb")
        self._out: IO[bytes] = os.fdopen(ours_out, "rb")
        self._asked: deque[str] = deque()  # OIDs whose answers are still in the pipe, in order
        self._early: dict[str, list[tuple[str, bytes]]] = {}  # answers read before their reader asked
        self._drop: dict[str, int] = {}  # answers to discard when they come (an abandoned stream's)
        self._lock = _thread.allocate_lock()
        self.broken = False  # git stopped answering: the pool starts another for the next reader
        weakref.finalize(self, _close, self._pid, self._in, self._out)

    def read(self, oid: str) -> tuple[str, bytes]:
        """(type, bytes) of object ``oid``; KeyError when it is missing."""
        with self._lock:
            self._ask([oid])
            kind, data = self._take(oid)
        if kind == "missing":
            raise KeyError(oid)
        return kind, data

    def read_many(self, oids: Iterable[str]) -> Iterator[tuple[str, str, bytes]]:
        """(oid, type, bytes) of each object (type ``missing`` for one the repository lacks),
        asking for a batch of them before reading answers."""
        todo = list(dict.fromkeys(oids))
        for start in range(0, len(todo), _CHUNK):
            chunk = todo[start:start + _CHUNK]
            with self._lock:
                self._ask(chunk)
            taken = 0
            try:
                for oid in chunk:
                    with self._lock:
                        kind, data = self._take(oid)
                    taken += 1
                    yield oid, kind, data
            finally:
                if taken < len(chunk):  # abandoned: the rest of its answers are nobody's
                    with self._lock:
                        for oid in chunk[taken:]:
                            self._forget(oid)

    def _ask(self, oids: list[str]) -> None:
        for oid in oids:
            if not oid or not _HEX.issuperset(oid):
                raise KeyError(oid)  # only ever OIDs: a name git would resolve is not asked
        while len(self._asked) > 2 * _CHUNK:  # bound what waits in the pipes (git blocks on a full one)
            self._read_out_of_turn()
        try:
            self._in.write("".join(f"{oid}\n" for oid in oids).encode("ascii"))
            self._in.flush()
        except OSError as exc:
            self.broken = True
            raise IntegrityError(f"git cat-file stopped answering ({exc})") from exc
        self._asked.extend(oids)

    def _take(self, oid: str) -> tuple[str, bytes]:
        """The answer for ``oid``, which this reader asked for."""
        early = self._early.get(oid)
        if early:
            answer = early.pop(0)
            if not early:
                del self._early[oid]
            return answer
        while self._asked:
            if self._asked[0] == oid:
                self._asked.popleft()
                return self._answer(oid)
            self._read_out_of_turn()
        raise IntegrityError(f"okfgit read an answer for {oid} it never asked git cat-file for")

    def _read_out_of_turn(self) -> None:
        oid = self._asked.popleft()
        answer = self._answer(oid)
        if self._drop.get(oid):
            self._drop[oid] -= 1
        else:
            self._early.setdefault(oid, []).append(answer)

    def _forget(self, oid: str) -> None:
        early = self._early.get(oid)
        if early:
            early.pop()
            if not early:
                del self._early[oid]
        else:
            self._drop[oid] = self._drop.get(oid, 0) + 1

    def _answer(self, oid: str) -> tuple[str, bytes]:
        header = self._out.readline()
        fields = header.split()
        if len(fields) == 2 and fields[1] == b"missing":
            return "missing", b""
        try:
            if not header:
                raise IntegrityError("git cat-file stopped answering (is the repository readable?)")
            if len(fields) != 3 or not fields[2].isdigit():
                raise IntegrityError(f"git cat-file answered {header!r} for {oid}")
            size = int(fields[2])
            data = self._out.read(size + 1)
            if len(data) != size + 1:
                raise IntegrityError(f"git cat-file's answer for {oid} was cut short")
        except IntegrityError:
            self.broken = True  # out of step with git from here on
            raise
        return fields[1].decode(), data[:size]


_POOL: dict[tuple[str, tuple[tuple[str, str], ...]], _Batch] = {}
_POOL_SIZE = 8  # repositories a process keeps a cat-file for (a run reads up to three tiers)


def _batch_for(gitdir: Path, env: dict[str, str]) -> _Batch:
    """The process's ``cat-file`` for ``gitdir`` with ``env``: one per repository, shared by
    every reader of it (a status run made seven), the least recently used ended past
    ``_POOL_SIZE`` (a reader still holding it keeps it until it is done)."""
    key = (str(gitdir), tuple(sorted(env.items())))
    batch = _POOL.pop(key, None)
    if batch is None or batch.broken:
        batch = _Batch(gitdir, env)
    _POOL[key] = batch
    while len(_POOL) > _POOL_SIZE:
        del _POOL[next(iter(_POOL))]
    return batch


def _close(pid: int, into: IO[bytes], out: IO[bytes]) -> None:
    """End a batch process: it exits when its input closes."""
    for stream in (into, out):
        try:
            stream.close()
        except OSError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
