"""Plan, then apply: every write okfgit makes is first a ``Plan``.

A plan holds tier commits (KB-relative path -> new bytes, or None to delete), plain
file writes (projection targets, blocks, settings, git hooks, drafts, ``info/exclude``) and
renames (a foreign git hook kept as ``<hook>.legacy``). ``--dry-run`` renders it; ``apply``
is the only place that carries one out. A write verb returns what it planned together
with the result it will report, and applies that plan: no verb writes a file itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from okfgit import TOOL, fsutil
from okfgit.context import Context
from okfgit.errors import BusyError, OkfError, RefMoved, UnwritableError
from okfgit.knowledge.tiers import Tier
from okfgit.local import index_stamp, journal
from okfgit.local.noop import Operation, operation
from okfgit.local.store import Store
from okfgit.git.repository import Repo
from okfgit.format.words import plural
from okfgit.format.names import MERGE_DRIVER
from okfgit.format.trailers import Trailer, format_message


RECOVER_WAIT_S = 2.0
MOVED_TRIES = 5  # plans in all when a branch keeps moving under a write (retry_moved)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class TierCommit:
    """One commit to make in a tier's repository."""

    tier: Tier
    operation: str
    subject: str
    changes: dict[str, bytes | None]
    trailers: tuple[Trailer, ...] = ()
    body: str = ""
    branch: str | None = None
    new_branch: bool = False
    old: dict[str, bytes | None] = field(default_factory=dict)
    base: str | None = None  # the commit the changes were planned from; the write refuses if HEAD moved
    merge_parent: str | None = None  # a merge commit: its second parent (made even with no changes)
    actor: str = ""  # who makes it, an OKF actor (format/actors.py): the Okf-Actor trailer

    @property
    def wanted(self) -> bool:
        """There is something to commit (a merge is committed even when its tree is HEAD's)."""
        return bool(self.changes) or self.merge_parent is not None

    def message(self) -> str:
        trailers: tuple[Trailer, ...] = (("Okf-Operation", self.operation), ("Okf-Tool", TOOL))
        if self.actor:
            trailers += (("Okf-Actor", self.actor),)
        trailers += tuple(self.trailers)
        return format_message(self.subject, trailers, self.body)


@dataclass(frozen=True, slots=True)
class FileWrite:
    """One file to write (``data``) or remove (None) outside any tier; with ``touch``, only
    its modification time is set (to ``mtime_ns``), its bytes stay as they are."""

    path: Path
    data: bytes | None
    reason: str
    fsync: bool
    old: bytes | None = None
    mtime_ns: int | None = None  # the modification time the file gets (None: the time of writing)
    touch: bool = False
    mode: int | None = None  # the file's permission bits (None: the default, 0644 less the umask)


@dataclass(frozen=True, slots=True)
class FileMove:
    """One file to rename, keeping its bytes, mode and inode: ``src`` becomes ``dst``
    (replacing what is there). Moves happen before the writes; when the write to ``src``
    then fails, the file is moved back, so what was there is still there."""

    src: Path
    dst: Path
    reason: str


@dataclass(frozen=True, slots=True)
class ConfigWrite:
    """One key of a repository's own git config (``git config --local``) to set, or to remove
    (None): the merge driver ``hooks install`` sets up."""

    repo: Path
    key: str
    value: str | None
    reason: str


@dataclass(slots=True)
class Plan:
    commits: list[TierCommit] = field(default_factory=list)
    writes: list[FileWrite] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    moves: list[FileMove] = field(default_factory=list)
    config: list[ConfigWrite] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(c.wanted for c in self.commits) and not self.writes and not self.moves and not self.config


@dataclass(slots=True)
class Applied:
    commits: list[tuple[TierCommit, str]] = field(default_factory=list)
    written: list[FileWrite] = field(default_factory=list)
    failed: list[tuple[FileWrite, str]] = field(default_factory=list)
    moved: list[FileMove] = field(default_factory=list)
    # The (size, mtime_ns) of each file written with bytes, as it was renamed into place (by its
    # path): what an ownership record keeps, taken from the file okfgit wrote, not from whatever
    # is there later.
    stats: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def raise_failed(self) -> Applied:
        """For a verb whose writes go together: the first failure as an UnwritableError."""
        if self.failed:
            raise UnwritableError(self.failed[0][1])
        return self


def apply(ctx: Context, plan: Plan) -> Applied:
    """Carry out ``plan``: the commits first, in order, then the renames, then the file writes.

    A failed commit stops everything after it (an OkfError propagates), and so does a
    failed rename (UnwritableError: nothing is written over a file that could not be kept).
    A failed file write is recorded and the other writes still happen; the caller reports
    exit 3 (or calls ``Applied.raise_failed``).
    """
    done = Applied()
    for commit in plan.commits:
        if not commit.wanted:
            continue
        repo = ensure_repo(ctx, commit.tier)
        changes = {commit.tier.repo_path_of(p): d for p, d in commit.changes.items()}
        oid = repo.commit_paths(
            ctx, changes, commit.message(), branch=commit.branch, new_branch=commit.new_branch,
            merge_parent=commit.merge_parent, base=commit.base,
        )
        done.commits.append((commit, oid))
    for move in plan.moves:
        try:
            os.replace(move.src, move.dst)
        except OSError as exc:
            raise UnwritableError(f"cannot rename {move.src} to {move.dst}: {exc.strerror or exc}") from exc
        done.moved.append(move)
    folders: set[Path] = set()
    for done_writes, write in enumerate(plan.writes, start=1):
        if not done_writes % 200:
            ctx.progress("writing files", done_writes, len(plan.writes))
        try:
            if write.touch:
                pass
            elif write.data is None:
                if write.path.exists() or write.path.is_symlink():
                    write.path.unlink()
            else:
                st = fsutil.atomic_write(write.path, write.data, fsync=write.fsync, mode=write.mode,
                                         mtime_ns=write.mtime_ns)
                done.stats[write.path] = (st.st_size, st.st_mtime_ns)
            if write.touch and write.mtime_ns is not None:
                os.utime(write.path, ns=(write.mtime_ns, write.mtime_ns), follow_symlinks=False)
            folders.add(write.path.parent)
            done.written.append(write)
        except OSError as exc:
            done.failed.append((write, f"cannot write {write.path}: {exc.strerror or exc}"))
        except OkfError as exc:
            done.failed.append((write, str(exc)))
    if plan.writes:
        ctx.progress("writing files", len(plan.writes), len(plan.writes))
    failed = {w.path for w, _ in done.failed}
    for move in done.moved:
        if move.src in failed:
            try:
                os.replace(move.dst, move.src)  # put back what was there
            except OSError:
                pass  # it stays, intact, under its new name
    fsutil.fsync_dirs(folders)
    for setting in plan.config:
        _configure(ctx, setting)
    return done


def _configure(ctx: Context, setting: ConfigWrite) -> None:
    repo = Repo.open(setting.repo)
    if setting.value is None:
        repo.config_unset(setting.key)
    else:
        repo.config_set(setting.key, setting.value)


@contextmanager
def writing(ctx: Context, *tiers: Tier) -> Iterator[None]:
    """Hold the write lock of each tier's repository while a verb plans and applies.

    ``apply`` takes the same lock for each commit anyway; holding it from before the plan
    means the plan is made from the HEAD the commit lands on, so a write waits for a
    running sync instead of failing on a moved branch (spec/okf-writes.md).
    """
    order = {"project": 0, "job": 1, "global": 2}  # one order for every verb: no two writers deadlock
    with ExitStack() as stack:
        seen: set[Path] = set()
        for tier in sorted(tiers, key=lambda t: order.get(t.name, 3)):
            if tier.exists() and tier.repo_path not in seen:
                seen.add(tier.repo_path)
                stack.enter_context(tier.open().write_lock(ctx))
        yield


def retry_moved(attempt: Callable[[], _T], tries: int | None = None) -> _T:
    """``attempt()``, which plans on a tier's HEAD and applies the plan, again from the start
    when the branch moved in between (``RefMoved``: a commit landed there, a person's or a
    hook's, and nothing of this write was made). Each try plans on the new HEAD, so a person's
    commit is built on like any other, never overwritten; after ``tries`` the last
    ``RefMoved`` is raised, saying how often it was tried (default ``MOVED_TRIES``)."""
    tries = MOVED_TRIES if tries is None else tries
    for tried in range(1, tries + 1):
        try:
            return attempt()
        except RefMoved as exc:
            if tried == tries:
                if tries == 1:
                    raise
                raise RefMoved(f"{exc}; planned again {tries - 1} times and the branch moved every time, "
                                  "run it again when it is quiet") from exc
            time.sleep(0.01 * 2 ** tried)  # a burst of commits (a script, a rebase's last steps) settles
    raise AssertionError("unreachable")


def recover(ctx: Context, tiers: list[Tier]) -> list[str]:
    """Finish any commit a killed okfgit left half-done in these tiers (journal record found),
    before anything else reads or writes them; what was done, as notes for the user."""
    notes: list[str] = []
    for tier in tiers:
        if not journal.left_behind(tier.repo_path):
            continue  # nothing to finish: libgit2 is not even loaded
        try:
            repo = tier.open()
            notes.extend(repo.recover(ctx, wait_s=RECOVER_WAIT_S))
        except BusyError:
            continue  # a live okfgit write holds the lock: it finishes its own commit
        except OkfError as exc:
            notes.append(f"could not finish an interrupted okfgit commit in {repo.workdir}: {exc}")
    return notes


@dataclass(frozen=True, slots=True)
class IndexBehind:
    """Paths okfgit committed in a tier whose index entry differs from HEAD: the next
    ``git commit`` there would revert them. ``repair`` restages HEAD's version."""

    tier: Tier
    paths: list[str]  # repository paths
    repair: str

    def message(self) -> str:
        return (f"the index differs from HEAD for {plural(len(self.paths), 'path')} okfgit committed in "
                f"{self.tier.label}, "
                f"so the next `git commit` would revert them; unless you staged that yourself, run: {self.repair}")


def index_behind(tier: Tier) -> IndexBehind | None:
    """The safety net behind the journal (spec/okf-writes.md): okfgit's paths whose index
    entry is not HEAD's, with the command that repairs it; None when all agree. Never during
    a merge, rebase, cherry-pick or revert: the index then holds its results, which a reset
    would throw away (``in_progress`` says what to do instead)."""
    if not tier.exists():
        return None
    repo = tier.open()
    if operation(repo.gitdir) is not None:
        return None
    head = repo.head_commit()
    store, gitdir = Store(repo.common_dir), str(repo.gitdir)
    if head is None or index_stamp.in_step(store, gitdir, tier.prefix, head):
        return None
    seen = index_stamp.token(gitdir)
    found = repo.index_behind(tier.prefix)
    if not found:
        if seen is not None and repo.head_commit() == head:
            index_stamp.save(store, gitdir, tier.prefix, head, seen)
        return None
    import shlex  # only when something is behind

    where = "" if tier.name == "project" else f"-C {shlex.quote(str(repo.workdir))} "
    repair = f"git {where}reset -q HEAD -- " + " ".join(shlex.quote(p) for p in found)
    return IndexBehind(tier, found, repair)


@dataclass(frozen=True, slots=True)
class InProgress:
    """A merge, rebase, cherry-pick, revert or bisect under way in a tier's repository: the
    tier's HEAD does not hold its result yet, and okfgit writes nothing there until it ends."""

    tier: Tier
    operation: Operation
    unmerged: list[str]  # the tier's repository paths git has not merged yet
    driver: bool  # git config names okfgit's merge driver (``okfgit hooks install``)

    @property
    def kind(self) -> str:
        """``merge``, ``rebase``, ...: the operation without its article."""
        return self.operation.what.split(" ", 1)[1]

    def message(self, then: str = "okfgit sync") -> str:
        return (f"{self.tier.repo_path} is in the middle of {self.operation.what}: finish it "
                f"({self.operation.finish}), then run `{then}`")

    def remedy(self, path: str) -> str:
        """What to do about ``path`` (a repository path git left unmerged)."""
        if self.driver or not path.endswith(".md"):
            return f"resolve the conflict in {path} and `git add` it"
        return (f"okfgit's merge driver merges it: run `okfgit hooks install`, then `git checkout -m -- {path}` "
                "merges it again, and `git add` it")


def in_progress(tier: Tier) -> InProgress | None:
    """What the tier's repository is in the middle of (``noop.operation``), with the
    tier's unmerged paths; None when git is idle there (the usual case: a few file checks)."""
    if not tier.exists():
        return None
    repo = tier.open()
    found = operation(repo.gitdir)
    if found is None:
        return None
    unmerged = repo.unmerged(tier.prefix)
    driver = repo.config_get(f"merge.{MERGE_DRIVER}.driver") is not None if unmerged else True
    return InProgress(tier, found, unmerged, driver)


def ensure_repo(ctx: Context, tier: Tier) -> Repo:
    """The tier's repository; the global and job tiers' repos are created on first use."""
    if tier.exists():
        return tier.open()
    return Repo.init(tier.repo_path)


def render(plan: Plan) -> str:
    """What ``plan`` would change, as unified diffs (the ``--dry-run`` output)."""
    out: list[str] = []
    for commit in plan.commits:
        if not commit.wanted:
            continue
        where = f" on branch {commit.branch}" if commit.branch else ""
        out.append(f"# commit in {commit.tier.label} ({commit.tier.repo_path}){where}:")
        out.extend("#   " + line for line in commit.message().rstrip("\n").split("\n"))
        for path, data in sorted(commit.changes.items()):
            out.append(unified(commit.tier.label + ":" + path, commit.old.get(path), data))
    for move in plan.moves:
        out.append(f"# rename {move.src} -> {move.dst} ({move.reason})")
    for setting in plan.config:
        import shlex  # only for a dry run of a config change

        change = f"--unset-all {setting.key}" if setting.value is None else f"{setting.key} {shlex.quote(setting.value)}"
        out.append(f"# git -C {shlex.quote(str(setting.repo))} config --local {change} ({setting.reason})")
    for write in plan.writes:
        out.append(unified(str(write.path), write.old, write.data))
    for warning in plan.warnings:
        out.append(f"# warning: {warning}")
    return "\n".join(x for x in out if x)


def unified(name: str, old: bytes | None, new: bytes | None) -> str:
    a = _lines(old)
    b = _lines(new)
    import difflib  # only for a dry run's diff

    diff = difflib.unified_diff(
        a, b, fromfile="/dev/null" if old is None else f"a/{name}", tofile="/dev/null" if new is None else f"b/{name}"
    )
    return "".join(diff).rstrip("\n")


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
