"""The no-op check that runs before anything heavy (DESIGN.md rule 4, "Fast no-ops").

Git hooks call okfgit on every checkout, so "nothing changed" must cost about a process
start at any KB size. This module answers that question with the standard library only
(no pygit2, no YAML, no dataclasses): it finds the repository by walking up from the
working folder, reads each tier's HEAD commit straight from ``HEAD``, loose refs and
``packed-refs``, and compares them and a handful of file stats with the stamp the last
full run left in ``<git common dir>/okf/fastpath.json``.

The answer is "nothing to do" only when everything matches exactly; anything unusual
(reftable, an unreadable file, a stamp from another okfgit, a stat in the same clock
tick as the stamp) is "not sure", and the caller runs the full projection, which is
always correct on its own. The stamp is a cache: deleting it is always safe.

What the stamp covers, and why that is enough: the tiers' HEAD commits fix every input
byte; the invocation key (scope, target, run, and the environment variables that move
the homes) fixes every target path; the stats of the block files, ``MEMORY.md``, the
memory folder itself (any file added, removed or renamed in it), the Claude settings
file, the git config files (``okf.run``), the state file and the packaged protocol text
catch every other change that would make the full run write something. An in-place edit
of one projected memory file is not watched: the full run would leave such a file to
capture and write nothing anyway. The one input that is not a byte is the clock: a
concept's ``MEMORY.md`` line says when it is stale, so the stamp expires at the earliest
``stale_after`` still ahead of the run that wrote it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from okfgit import TOOL
from okfgit.local import paths

VERSION = 1
# Everything in the environment that changes which files a projection reads or writes.
# The agents' own variables are named here, not imported: this module is on the no-op path
# (targets/claude_home.ENV_KEYS, Gemini CLI's and Copilot CLI's are held to it by a test).
ENV_KEYS = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OKF_RUN",
            "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM",
            "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "CLAUDE_CODE_REMOTE_MEMORY_DIR", "CLAUDE_CODE_PROJECT_DIR_NAME",
            "CLAUDE_CODE_SANDBOXED", "OKF_CLAUDE_MANAGED_DIR", "OKF_CLAUDE_SETTINGS", "GEMINI_CLI_HOME", "SANDBOX",
            "COPILOT_HOME", "OPENCODE_CONFIG_DIR")
ABSENT = "absent"
UNBORN = "unborn"
NAV_PROTOCOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "nav-protocol.md")
_PER_WORKTREE = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")
_HEX = frozenset("0123456789abcdef")


class Unsure(Exception):
    """Something the fast path does not handle: let the full run decide."""


def find_repo(start: str) -> tuple[str, str] | None:
    """(working tree root, git dir) of the repository containing ``start``, or None.

    Handles a ``.git`` file (linked worktrees, submodules). Both paths are real paths,
    as pygit2 reports them.
    """
    path = os.path.realpath(start)
    while True:
        dotgit = os.path.join(path, ".git")
        if os.path.isdir(dotgit):
            return path, dotgit
        if os.path.isfile(dotgit):
            return path, gitfile_target(dotgit)
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def gitfile_target(dotgit: str) -> str:
    text = _read(dotgit)
    if not text.startswith("gitdir:"):
        raise Unsure(dotgit)
    target = text[len("gitdir:"):].strip()
    return os.path.realpath(os.path.join(os.path.dirname(dotgit), target))


def common_dir(gitdir: str) -> str:
    """The common git dir shared by all worktrees of ``gitdir``'s repository."""
    try:
        target = _read(os.path.join(gitdir, "commondir")).strip()
    except FileNotFoundError:
        return gitdir
    return os.path.realpath(os.path.join(gitdir, target))


def read_head(gitdir: str) -> str | None:
    """The commit OID HEAD resolves to, None on an unborn branch; Unsure when unsure."""
    common = common_dir(gitdir)
    if os.path.isdir(os.path.join(common, "reftable")):
        raise Unsure("reftable")
    content: str | None = _read(os.path.join(gitdir, "HEAD")).strip()
    for _ in range(8):  # symbolic refs may chain; git stops at 5
        if content is None:
            return None
        if not content.startswith("ref:"):
            if len(content) not in (40, 64) or not _HEX.issuperset(content):
                raise Unsure(content)
            return content
        content = _lookup_ref(gitdir, common, content[4:].strip())
    raise Unsure("symbolic ref loop")


def head_ref(gitdir: str) -> str | None:
    """The ref HEAD names (``refs/heads/<name>``, born or not), None when HEAD is detached;
    Unsure when unsure."""
    if os.path.isdir(os.path.join(common_dir(gitdir), "reftable")):
        raise Unsure("reftable")
    content = _read(os.path.join(gitdir, "HEAD")).strip()
    if not content.startswith("ref:"):
        if len(content) not in (40, 64) or not _HEX.issuperset(content):
            raise Unsure(content)
        return None
    ref = content[4:].strip()
    if not ref.startswith("refs/") or ".." in ref:
        raise Unsure(ref)
    return ref


def _lookup_ref(gitdir: str, common: str, ref: str) -> str | None:
    if not ref.startswith("refs/") or ".." in ref:
        raise Unsure(ref)
    base = gitdir if ref.startswith(_PER_WORKTREE) else common
    try:
        return _read(os.path.join(base, ref)).strip()
    except FileNotFoundError:
        pass
    try:
        packed = _read(os.path.join(common, "packed-refs"))
    except FileNotFoundError:
        return None
    suffix = " " + ref
    for line in packed.splitlines():
        if line.endswith(suffix) and not line.startswith(("#", "^")):
            return line[: -len(suffix)].strip()
    return None


def head_token(dotgit: str) -> str:
    """What a stamp records for the repository at ``dotgit``: a commit, ``unborn`` or ``absent``."""
    if not os.path.lexists(dotgit):
        return ABSENT
    gitdir = gitfile_target(dotgit) if os.path.isfile(dotgit) else dotgit
    return read_head(gitdir) or UNBORN


def stat_token(path: str) -> list[int] | None:
    """[size, mtime_ns] of ``path`` (not following a final symlink), None when absent."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_size, st.st_mtime_ns]


def key(environ: Mapping[str, str], *, gitdir: str, scope: str, target: str, run: str | None) -> dict[str, Any]:
    """The invocation a stamp is valid for."""
    return {
        "tool": TOOL,
        "gitdir": gitdir,
        "scope": scope,
        "target": target,
        "run": run,
        "env": {name: environ.get(name) for name in ENV_KEYS},
    }


def config_files(environ: Mapping[str, str], gitdir: str) -> list[str]:
    """The git config files that can set ``okf.run`` for this repository."""
    home = environ.get("HOME", "")
    xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [os.path.join(common_dir(gitdir), "config"), os.path.join(gitdir, "config.worktree"),
             os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config"), "/etc/gitconfig"]
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        if environ.get(name):
            files.append(environ[name])
    return files


def stamp_path(gitdir: str) -> str:
    return paths.fastpath_stamp(common_dir(gitdir))


def save_stamp(common_dir: str, data: bytes | None) -> None:
    """Write the stamp (``make_stamp``'s bytes) after a full run, or remove it (None) after
    a failed one so that the next run retries in full. Only a cache: a failed write is
    ignored (the next run takes the full path)."""
    from okfgit import fsutil  # not on the no-op path
    from okfgit.errors import OkfError

    target = paths.fastpath_stamp(common_dir)
    try:
        if data is None:
            os.unlink(target)
        else:
            fsutil.atomic_write(Path(target), data, fsync=False)
    except (OSError, OkfError):
        pass


def make_stamp(invocation: dict[str, Any], dotgits: Iterable[str], watched: Iterable[str],
               expires: int | None = None) -> bytes:
    """The stamp a full run writes once it is done: heads and stats as they are now, and
    the instant (epoch seconds) from which a full run would write something else."""
    stamp = {
        "version": VERSION,
        "key": invocation,
        "heads": {d: head_token(d) for d in sorted(set(dotgits))},
        "stats": {p: stat_token(p) for p in sorted(set(watched))},
    }
    if expires is not None:
        stamp["expires"] = expires
    return json.dumps(stamp, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


def check(environ: Mapping[str, str], cwd: str, *, repo: str | None, scope: str, target: str,
          run: str | None) -> bool:
    """True when a projection with these arguments would change nothing (see the module doc)."""
    try:
        return _check(environ, cwd, repo=repo, scope=scope, target=target, run=run)
    except (Unsure, OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _check(environ: Mapping[str, str], cwd: str, *, repo: str | None, scope: str, target: str,
           run: str | None) -> bool:
    found = find_repo(os.path.join(cwd, repo) if repo else cwd)
    if found is None:
        return False
    workdir, gitdir = found
    if _is_inner_tier(workdir, environ):
        return False
    path = stamp_path(gitdir)
    with open(path, "rb") as fh:
        stamp = json.loads(fh.read())
        stamp_mtime = os.fstat(fh.fileno()).st_mtime_ns
    if stamp.get("version") != VERSION:
        return False
    if stamp.get("key") != key(environ, gitdir=gitdir, scope=scope, target=target, run=run):
        return False
    expires = stamp.get("expires")
    if expires is not None and _now(environ) >= expires:
        return False  # a concept went stale since: its MEMORY.md line must say so
    for dotgit, token in stamp["heads"].items():
        if head_token(dotgit) != token:
            return False
    for watched, token in stamp["stats"].items():
        if stat_token(watched) != token:
            return False
        # Racy: a change in the same clock tick as the stamp would leave the stat equal.
        if token is not None and token[1] >= stamp_mtime:
            return False
    return True


def _is_inner_tier(workdir: str, environ: Mapping[str, str]) -> bool:
    """Inside a job or global tier's own repository, the project is found differently."""
    parent = os.path.dirname(workdir)
    if os.path.basename(workdir) == "okf" and os.path.basename(os.path.dirname(parent)) == "runstate":
        return True
    home = environ.get("HOME")
    data = environ.get("XDG_DATA_HOME") or (os.path.join(home, ".local", "share") if home else None)
    return data is None or os.path.realpath(os.path.join(data, "okf")) == workdir


def _now(environ: Mapping[str, str]) -> int:
    pinned = environ.get("SOURCE_DATE_EPOCH")  # as Context.now() reads the clock
    return int(pinned) if pinned and pinned.isdigit() else int(time.time())


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()
