"""okfgit's git hooks: when they do work, and installing, removing and inspecting them.

The hook scripts (``githooks/`` in the source tree, shipped as ``okfgit/data/githooks/``)
are thin POSIX shell: they run ``okfgit sync --repo <top> --hook <name> -- <args>`` and
never fail git. They are recognised by one exact marker line. A hook that was there
before is kept as ``<hook>.legacy`` and run first by ours; uninstall renames it back,
so the bytes and mode are exactly what they were. ``spec/okf-hooks.md`` is the contract.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from okfgit import fsutil
from okfgit import plan as plan_mod
from okfgit.context import Context
from okfgit.errors import IntegrityError, UsageError
from okfgit.format.names import MERGE_DRIVER
from okfgit.plan import ConfigWrite, FileMove, FileWrite, Plan
from okfgit.git import command, config
from okfgit.local import fastpath, hooklog, paths
from okfgit.local.noop import HOOK_NAMES

# git's merge driver for the tier's files (``.okf/.gitattributes`` names it). When okfgit cannot
# run at all (not on PATH for this git), the shell falls back to git's own text merge, so a
# clone never gets ours left as the result.
DRIVER_KEY = f"merge.{MERGE_DRIVER}.driver"
DRIVER_NAME_KEY = f"merge.{MERGE_DRIVER}.name"
DRIVER_COMMAND = ("okfgit merge-driver %O %A %B %L %P || { [ $? -eq 1 ] && exit 1; "
                  "git merge-file --marker-size=%L -L ours -L base -L theirs %A %O %B; }")
DRIVER_NAME = "okfgit: a tier's index.md, log.md and concepts merged by what they mean"
MARKER = "# okfgit-hook: installed by `okfgit hooks install`; `okfgit hooks uninstall` restores what was here"
LEGACY_SUFFIX = ".legacy"
DRIVER_ACTION = "merge-driver"  # the install or uninstall report's line for the driver's config
HOOK_MODE = 0o755


# -- the scripts ----------------------------------------------------------------------


def script(hook: str) -> bytes:
    """The exact bytes okfgit installs as ``hook``."""
    if hook not in HOOK_NAMES:
        raise UsageError(f"unknown hook {hook!r}")
    from importlib import resources  # only where a hook script is read

    return (resources.files("okfgit") / "data" / "githooks" / hook).read_bytes()


def is_ours(data: bytes) -> bool:
    """The file carries okfgit's marker line (any okfgit version's script)."""
    return MARKER.encode() in data.splitlines()


# -- where git looks ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
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
    which honours ``core.hooksPath``), asked of git itself so the answer is git's. When no
    config file can set ``core.hooksPath``, git's answer is the common dir's ``hooks``: it is
    not asked."""
    gitdir = _gitdir(repo_root)
    if gitdir is not None and not config.may_set(environ, gitdir, "core.hooksPath"):
        common_dir = Path(fastpath.common_dir(str(gitdir)))
        return HooksDir(common_dir / "hooks", None, False, common_dir)
    done = command.run(["git", "rev-parse", "--git-path", "hooks", "--git-common-dir"], environ, cwd=repo_root)
    if done.code != 0:
        raise UsageError(f"{repo_root}: git rev-parse --git-path hooks failed: {done.err.strip()}")
    hooks, _, common = done.out.rstrip("\n").partition("\n")
    try:
        configured = config.get(environ, "core.hooksPath", cwd=repo_root)
    except UsageError:
        configured = None
    path = Path(os.path.abspath(repo_root / hooks))
    inside = fsutil.is_inside(path, repo_root) and not fsutil.is_inside(path, repo_root / common)
    return HooksDir(path, configured, inside, Path(os.path.abspath(repo_root / common)))


def _gitdir(repo_root: Path) -> Path | None:
    """The git dir of the repository whose working tree root is exactly ``repo_root``, or None."""
    try:
        found = fastpath.find_repo(str(repo_root))
    except (fastpath.Unsure, OSError, UnicodeDecodeError):
        return None
    return Path(found[1]) if found is not None and os.path.realpath(repo_root) == found[0] else None


# -- status ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Status:
    where: HooksDir
    hooks: tuple[HookState, ...]
    last_error: str | None  # the last entry in hook.log, on one line
    driver: str = "absent"  # the merge driver in git config: installed | outdated | absent

    def to_json(self) -> dict[str, object]:
        return {
            "hooks_path": str(self.where.path),
            "core_hooks_path": self.where.configured,
            "in_worktree": self.where.in_worktree,
            "hooks": [h.to_json() for h in self.hooks],
            "log": str(self.where.log),
            "last_error": self.last_error,
            "merge_driver": self.driver,
        }


def status(repo_root: Path, environ: Mapping[str, str]) -> Status:
    """Each okfgit hook's state in the folder git uses, the last logged hook error, and
    whether git's config has okfgit's merge driver."""
    where = hooks_dir(repo_root, environ)
    return Status(where, tuple(_state(where.path, name) for name in HOOK_NAMES), hooklog.last_error(where.common_dir),
                  driver_state(repo_root, environ))


def driver_state(repo_root: Path, environ: Mapping[str, str]) -> str:
    """``installed`` when git runs this okfgit's merge driver for ``merge=okfgit`` files,
    ``outdated`` when it runs another command, ``absent`` when git merges them as text."""
    value = _driver_config(repo_root, environ)
    return "absent" if value is None else "installed" if value == DRIVER_COMMAND else "outdated"


def _driver_config(repo_root: Path, environ: Mapping[str, str]) -> str | None:
    try:
        return config.get(environ, DRIVER_KEY, cwd=repo_root, gitdir=_gitdir(repo_root)) or None
    except UsageError:
        return None


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


@dataclass(frozen=True, slots=True)
class Action:
    """What install or uninstall does (or, with --dry-run, would do) to one hook."""

    hook: str
    action: str  # install | update | chain | rechain | unchanged | restore | remove | keep-foreign
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"hook": self.hook, "action": self.action, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class HookChange:
    """What ``install`` or ``uninstall`` plans: the folder, one action per hook (the report),
    and the plan that carries them out (``--dry-run`` renders it; ``apply`` performs it)."""

    where: HooksDir
    actions: list[Action]
    plan: Plan

    def to_json(self) -> dict[str, object]:
        return {"hooks_path": str(self.where.path), "actions": [a.to_json() for a in self.actions]}


def plan_install(repo_root: Path, environ: Mapping[str, str]) -> HookChange:
    """Plan installing okfgit's hooks where git runs hooks. Idempotent: a hook already current
    is not rewritten. A foreign hook becomes ``<hook>.legacy`` and is chained. Refuses,
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
    plan = Plan()
    for state, action in zip(states, actions):
        if action.action == "unchanged":
            continue
        if action.action == "chain":
            # a rename keeps the foreign hook's bytes, mode and inode; undone if ours cannot be written
            plan.moves.append(FileMove(state.path, where.path / (state.name + LEGACY_SUFFIX), action.detail))
        plan.writes.append(FileWrite(state.path, script(state.name), action.detail, fsync=False,
                                     old=None if action.action == "chain" else _read(state.path), mode=HOOK_MODE))
    driver = driver_state(repo_root, environ)
    if driver == "installed":
        actions.append(Action(DRIVER_ACTION, "unchanged", "okfgit's merge driver is set up in git config"))
    else:
        detail = "set up okfgit's merge driver in git config" if driver == "absent" else \
            "replace the merge driver command in git config with this okfgit's"
        actions.append(Action(DRIVER_ACTION, "install" if driver == "absent" else "update", detail))
        # The command first, the name last (and removed first): git refuses to merge at all while
        # a driver has a name and no command.
        plan.config.append(ConfigWrite(repo_root, DRIVER_KEY, DRIVER_COMMAND, detail))
        plan.config.append(ConfigWrite(repo_root, DRIVER_NAME_KEY, DRIVER_NAME, detail))
    return HookChange(where, actions, plan)


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


def plan_uninstall(repo_root: Path, environ: Mapping[str, str]) -> HookChange:
    """Plan removing okfgit's hooks and renaming each ``<hook>.legacy`` back to its name,
    restoring exactly what was there. A hook that is not okfgit's is never touched."""
    where = hooks_dir(repo_root, environ)
    states = [_state(where.path, name) for name in HOOK_NAMES]
    actions = [_uninstall_action(s) for s in states]
    plan = Plan()
    for state, action in zip(states, actions):
        if action.action == "restore":
            # one rename swaps the legacy hook in over ours
            plan.moves.append(FileMove(where.path / (state.name + LEGACY_SUFFIX), state.path, action.detail))
        elif action.action == "remove":
            plan.writes.append(FileWrite(state.path, None, action.detail, fsync=False, old=_read(state.path)))
    value = _driver_config(repo_root, environ)
    if value is None:
        actions.append(Action(DRIVER_ACTION, "unchanged", "no merge driver in git config"))
    elif not value.startswith("okfgit merge-driver "):
        actions.append(Action(DRIVER_ACTION, "keep-foreign", f"{DRIVER_KEY} runs another command: left as it is"))
    else:
        detail = "remove okfgit's merge driver from git config (git merges the tier's files as text again)"
        actions.append(Action(DRIVER_ACTION, "remove", detail))
        plan.config += [ConfigWrite(repo_root, DRIVER_NAME_KEY, None, detail),
                        ConfigWrite(repo_root, DRIVER_KEY, None, detail)]
    return HookChange(where, actions, plan)


def _uninstall_action(s: HookState) -> Action:
    if s.state == "foreign":
        extra = f"; {s.name}{LEGACY_SUFFIX} left as it is" if s.legacy else ""
        return Action(s.name, "keep-foreign", "not okfgit's hook: left untouched" + extra)
    if s.legacy:
        return Action(s.name, "restore", f"remove okfgit's hook and rename {s.name}{LEGACY_SUFFIX} back")
    if s.state == "absent":
        return Action(s.name, "unchanged", "not installed")
    return Action(s.name, "remove", "remove okfgit's hook")


def apply(ctx: Context, change: HookChange) -> None:
    """Carry out an install or uninstall plan; UnwritableError (exit 3) when a hook could not
    be written or removed (a foreign hook moved aside for it is moved back)."""
    plan_mod.apply(ctx, change.plan).raise_failed()
