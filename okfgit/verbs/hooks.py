"""okfgit's git hooks: when they do work, and installing, removing and inspecting them.

The hook scripts (``githooks/`` in the source tree, shipped as ``okfgit/data/githooks/``)
are thin POSIX shell: they run ``okfgit sync --repo <top> --hook <name> -- <args>`` and
never fail git. They are recognised by one exact marker line. A hook that was there
before is kept as ``<hook>.legacy`` and run first by ours; uninstall renames it back,
so the bytes and mode are exactly what they were. ``spec/okf-hooks.md`` is the contract.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from okfgit import fsutil
from okfgit.errors import IntegrityError, UnwritableError, UsageError
from okfgit.git import clean_git_env
from okfgit.local import hooklog, paths
from okfgit.local.noop import HOOK_NAMES

MARKER = "# okfgit-hook: installed by `okfgit hooks install`; `okfgit hooks uninstall` restores what was here"
LEGACY_SUFFIX = ".legacy"
HOOK_MODE = 0o755


# -- the scripts ----------------------------------------------------------------------


def script(hook: str) -> bytes:
    """The exact bytes okfgit installs as ``hook``."""
    if hook not in HOOK_NAMES:
        raise UsageError(f"unknown hook {hook!r}")
    return (resources.files("okfgit") / "data" / "githooks" / hook).read_bytes()


def is_ours(data: bytes) -> bool:
    """The file carries okfgit's marker line (any okfgit version's script)."""
    return MARKER.encode() in data.splitlines()


# -- where git looks ------------------------------------------------------------------


@dataclass(frozen=True)
class HooksDir:
    """The folder git runs hooks from, and why it is that one."""

    path: Path
    configured: str | None  # core.hooksPath as configured, None when unset
    in_worktree: bool  # inside the working tree: files there show up in `git status`
    common_dir: Path  # the git common dir, where okfgit keeps its own files

    @property
    def log(self) -> Path:
        """Where the hook scripts log their errors."""
        return paths.hook_log(self.common_dir)


def hooks_dir(repo_root: Path, environ: Mapping[str, str]) -> HooksDir:
    """Where git runs this repository's hooks from (``git rev-parse --git-path hooks``,
    which honours ``core.hooksPath``), asked of git itself so the answer is git's."""
    env = clean_git_env(environ)
    hooks = _git(repo_root, env, "rev-parse", "--git-path", "hooks")
    common = _git(repo_root, env, "rev-parse", "--git-common-dir")
    configured = _git(repo_root, env, "config", "--get", "core.hooksPath", check=False) or None
    path = Path(os.path.abspath(repo_root / hooks))
    inside = fsutil.is_inside(path, repo_root) and not fsutil.is_inside(path, repo_root / common)
    return HooksDir(path, configured, inside, Path(os.path.abspath(repo_root / common)))


def _git(cwd: Path, env: Mapping[str, str], *args: str, check: bool = True) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=dict(env), capture_output=True, text=True)
    except OSError as exc:
        raise UsageError(f"cannot run git: {exc.strerror or exc}") from exc
    if proc.returncode != 0:
        if not check:
            return ""
        raise UsageError(f"{cwd}: git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.rstrip("\n")


# -- status ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HookState:
    """One hook: ``ours``, ``chained`` (ours + a ``.legacy`` it runs), ``foreign`` or ``absent``."""

    name: str
    state: str
    path: Path
    current: bool  # ours and byte-identical to this okfgit's script
    legacy: bool  # a <hook>.legacy file exists

    def to_json(self) -> dict[str, object]:
        return {"hook": self.name, "state": self.state, "path": str(self.path), "current": self.current,
                "legacy": self.legacy}


@dataclass(frozen=True)
class Status:
    where: HooksDir
    hooks: tuple[HookState, ...]
    last_error: str | None  # the last entry in hook.log, on one line

    def to_json(self) -> dict[str, object]:
        return {
            "hooks_path": str(self.where.path),
            "core_hooks_path": self.where.configured,
            "in_worktree": self.where.in_worktree,
            "hooks": [h.to_json() for h in self.hooks],
            "log": str(self.where.log),
            "last_error": self.last_error,
        }


def status(repo_root: Path, environ: Mapping[str, str]) -> Status:
    """Each okfgit hook's state in the folder git uses, and the last logged hook error."""
    where = hooks_dir(repo_root, environ)
    return Status(where, tuple(_state(where.path, name) for name in HOOK_NAMES), hooklog.last_error(where.common_dir))


def _state(folder: Path, name: str) -> HookState:
    path = folder / name
    legacy = _present(folder / (name + LEGACY_SUFFIX))
    data = _read(path)
    if data is None:
        return HookState(name, "absent", path, False, legacy)
    if not is_ours(data):
        return HookState(name, "foreign", path, False, legacy)
    current = data == script(name) and _executable(path)
    return HookState(name, "chained" if legacy else "ours", path, current, legacy)


def _present(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _read(path: Path) -> bytes | None:
    if not _present(path):
        return None
    if path.is_dir():
        return b""  # a folder named like a hook: not ours, and never touched
    try:
        return path.read_bytes()
    except OSError:
        return b""  # a dangling symlink or unreadable file: someone else's


def _executable(path: Path) -> bool:
    return os.access(path, os.X_OK)


# -- install and uninstall ------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    """What install or uninstall does (or, with --dry-run, would do) to one hook."""

    hook: str
    action: str  # install | update | chain | rechain | unchanged | restore | remove | keep-foreign
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"hook": self.hook, "action": self.action, "detail": self.detail}


def install(repo_root: Path, environ: Mapping[str, str], *, dry_run: bool = False) -> tuple[HooksDir, list[Action]]:
    """Install okfgit's hooks where git runs hooks. Idempotent: a hook already current is
    not rewritten. A foreign hook becomes ``<hook>.legacy`` and is chained. Refuses,
    changing nothing, when a foreign hook cannot be kept because a ``.legacy`` is taken."""
    where = hooks_dir(repo_root, environ)
    states = [_state(where.path, name) for name in HOOK_NAMES]
    blocked = [s for s in states if s.state == "foreign" and s.legacy]
    if blocked:
        names = ", ".join(str(s.path) for s in blocked)
        raise IntegrityError(
            f"cannot keep the existing hook {names}: {blocked[0].name}{LEGACY_SUFFIX} already exists next to it; "
            "move one of them away and retry (nothing was changed)"
        )
    actions = [_install_action(s) for s in states]
    if not dry_run:
        for state, action in zip(states, actions):
            _do_install(where.path, state, action)
    return where, actions


def _install_action(s: HookState) -> Action:
    if s.state == "absent":
        if s.legacy:
            return Action(s.name, "rechain", f"install okfgit's hook, running the existing {s.name}{LEGACY_SUFFIX} first")
        return Action(s.name, "install", "install okfgit's hook")
    if s.state == "foreign":
        return Action(s.name, "chain", f"keep the existing hook as {s.name}{LEGACY_SUFFIX} and run it first")
    if s.current:
        return Action(s.name, "unchanged", "okfgit's hook is installed and current")
    return Action(s.name, "update", "replace an older okfgit hook with this version's")


def _do_install(folder: Path, state: HookState, action: Action) -> None:
    if action.action == "unchanged":
        return
    data = script(state.name)
    if action.action != "chain":
        _write_hook(state.path, data)
        return
    legacy = folder / (state.name + LEGACY_SUFFIX)
    # rename keeps the foreign hook's bytes, mode and inode; undone if ours cannot be written
    _rename(state.path, legacy)
    try:
        _write_hook(state.path, data)
    except UnwritableError:
        _rename(legacy, state.path)
        raise


def _write_hook(path: Path, data: bytes) -> None:
    fsutil.atomic_write(path, data, fsync=False, mode=HOOK_MODE)


def _rename(src: Path, dst: Path) -> None:
    try:
        os.rename(src, dst)
    except OSError as exc:
        raise UnwritableError(f"cannot rename {src} to {dst}: {exc.strerror or exc}") from exc


def uninstall(repo_root: Path, environ: Mapping[str, str], *, dry_run: bool = False) -> tuple[HooksDir, list[Action]]:
    """Remove okfgit's hooks and rename each ``<hook>.legacy`` back to its name, restoring
    exactly what was there. A hook that is not okfgit's is never touched."""
    where = hooks_dir(repo_root, environ)
    states = [_state(where.path, name) for name in HOOK_NAMES]
    actions = [_uninstall_action(s) for s in states]
    if not dry_run:
        for state, action in zip(states, actions):
            _do_uninstall(where.path, state, action)
    return where, actions


def _uninstall_action(s: HookState) -> Action:
    if s.state == "foreign":
        extra = f"; {s.name}{LEGACY_SUFFIX} left as it is" if s.legacy else ""
        return Action(s.name, "keep-foreign", "not okfgit's hook: left untouched" + extra)
    if s.legacy:
        return Action(s.name, "restore", f"remove okfgit's hook and rename {s.name}{LEGACY_SUFFIX} back")
    if s.state == "absent":
        return Action(s.name, "unchanged", "not installed")
    return Action(s.name, "remove", "remove okfgit's hook")


def _do_uninstall(folder: Path, state: HookState, action: Action) -> None:
    if action.action == "restore":
        # os.replace swaps the legacy hook in over ours in one step
        try:
            os.replace(folder / (state.name + LEGACY_SUFFIX), state.path)
        except OSError as exc:
            raise UnwritableError(f"cannot restore {state.path}: {exc.strerror or exc}") from exc
    elif action.action == "remove":
        try:
            state.path.unlink()
        except OSError as exc:
            raise UnwritableError(f"cannot remove {state.path}: {exc.strerror or exc}") from exc
