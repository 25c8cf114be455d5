"""git's ``index.lock``, held by okfgit from reading the index to replacing it.

The lock file is made with O_CREAT|O_EXCL semantics exactly as git makes it, so git and okfgit
exclude each other; its device and inode go into the write journal first, so a lock a killed
okfgit left is told apart from a live git process's (spec/okf-writes.md §2-4).

The index is read from a copy (``INDEX_SCRATCH``): libgit2 writes an index file only through
its own ``<file>.lock``, which for ``<gitdir>/index`` is the lock okfgit holds. Entries are
staged through pygit2's public ``IndexEntry`` (path, blob OID, mode: exactly the committed
blob, whatever the filters), the copy's bytes go into ``index.lock``, fsynced, and that is
renamed over ``index``. pygit2 records stat data only in an index libgit2 itself writes
under a lock it creates, so the stat data of the written paths is then refreshed by git
(``git add --refresh``, under git's own lock): git records it as the user's git does, and
leaves an entry whose file its filters would store differently without stat data. Leaving
the block without ``commit()`` removes the lock and leaves ``index`` as it was.
"""

from __future__ import annotations

import os
import time
from types import TracebackType
from typing import TYPE_CHECKING

import pygit2

from okfgit import fsutil
from okfgit.context import Context
from okfgit.errors import BusyError, IntegrityError, UnwritableError
from okfgit.git import command
from okfgit.local import journal

if TYPE_CHECKING:
    from okfgit.git.repository import Repo

LOCK_WAIT_S = 2.0  # git holds index.lock for a moment; longer means someone is busy


class IndexLock:
    """``<gitdir>/index.lock`` held by this process, with the index read under it (``with``)."""

    def __init__(self, repo: Repo, ctx: Context, intent: journal.Intent | None = None) -> None:
        self.repo = repo
        self.ctx = ctx
        self.path = repo.gitdir / "index.lock"
        self.scratch = repo.gitdir / journal.INDEX_SCRATCH
        self.fd = -1
        self.linked = False  # index.lock is ours (linked from the scratch file)
        self.record = journal.Record(os.getpid(), ctx.clock(), intent=intent)
        self.staged_paths: list[str] = []
        self._index: pygit2.Index

    def __enter__(self) -> IndexLock:
        # The lock file is made under okfgit's own scratch name first and its identity put in
        # the journal, then linked to index.lock (a link fails when the name exists, as
        # O_EXCL does): a kill at any point leaves either no index.lock or one the journal
        # names, never one the next run cannot tell from a live git process's.
        made = self.repo.gitdir / journal.INDEX_LOCK_SCRATCH
        try:
            self.fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
            st = os.fstat(self.fd)
        except OSError as exc:
            raise UnwritableError(f"cannot create {self.path}: {exc.strerror or exc} (nothing was changed)") from exc
        self.record.index_lock = (st.st_dev, st.st_ino)
        try:
            journal.save(self.repo.journal_file, self.record, durable=False)
            deadline = time.monotonic() + LOCK_WAIT_S
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
            journal.crash_point(self.ctx.environ, "index-locked")
            for left in (self.scratch, self.scratch.with_name(self.scratch.name + ".lock")):
                left.unlink(missing_ok=True)  # a killed okfgit's (this repository's write lock is held)
            current = self.repo.gitdir / "index"
            if current.exists():
                fsutil.atomic_write(self.scratch, current.read_bytes(), fsync=False)
            self._index = pygit2.Index(str(self.scratch))
        except BaseException:
            self._drop()
            raise
        return self

    def staged(self, path: str) -> str | None:
        """The blob OID the index stages at ``path``, None when it stages nothing."""
        return str(self._index[path].id) if path in self._index else None

    def stage(self, path: str, oid: str, mode: int) -> None:
        """Stage ``path`` as blob ``oid`` with ``mode`` (its stat data is refreshed by ``commit``)."""
        self._index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=oid), pygit2.enums.FileMode(mode)))
        self.staged_paths.append(path)

    def remove(self, path: str) -> None:
        if path in self._index:
            self._index.remove(path)

    def commit(self) -> None:
        """Write the index into ``index.lock``, rename it over ``index``, refresh the stat data of
        the staged paths; then the journal's intent is done."""
        self._index.write()
        data = self.scratch.read_bytes()
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]
        os.fsync(self.fd)  # one fsync: an index lost to a power cut would be behind HEAD
        os.close(self.fd)
        self.fd = -1
        os.replace(self.path, self.repo.gitdir / "index")
        journal.crash_point(self.ctx.environ, "index-written")
        refresh(self.repo, self.ctx, self.staged_paths)
        # ref, working tree and index agree now: the intent is done
        self.record.intent = None
        self._cleanup()

    def _drop(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            if self.linked:  # never another process's index.lock
                self.path.unlink(missing_ok=True)
        self._cleanup()

    def _cleanup(self) -> None:
        self.scratch.unlink(missing_ok=True)
        if self.record.index_lock is None and self.record.intent is None:
            return
        self.record.index_lock = None
        if self.record.intent is None:
            journal.clear(self.repo.journal_file)
        else:
            # the index was not written: the intent stays for the next run to finish
            journal.save(self.repo.journal_file, self.record, durable=False)

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._drop()


def refresh(repo: Repo, ctx: Context, paths: list[str]) -> None:
    """Have git record the stat data of ``paths`` in the index (``git add --refresh``: only the
    stat data, only where the file is what the entry stages, under git's own lock). Without
    it an entry looks modified to git's plumbing until the next ``git status``; a refresh that
    fails (no git on PATH) leaves exactly that, so it is not an error."""
    if not paths:
        return
    try:
        command.run(["git", "--literal-pathspecs", "add", "--refresh", "--pathspec-from-file=-",
                     "--pathspec-file-nul"], ctx.environ, cwd=repo.workdir,
                    input=b"\0".join(os.fsencode(p) for p in paths))
    except IntegrityError:
        pass
