"""Agents' session hooks that keep sessions current: Claude Code's in
``<claude home>/settings.json``, Gemini CLI's in ``~/.gemini/settings.json``.

``SessionStart`` projects the knowledge base; ``SessionEnd`` and ``PreCompact`` (Gemini
CLI 0.61.0: ``PreCompress``) sync, so what an agent learnt is captured before the session
or its context goes away. Both agents read the same shape: ``hooks.<event>`` is a list of
``{"matcher", "hooks": [{"type": "command", "command"}]}`` groups, ``*`` matching all. Entries are
recognised by their exact command strings (this okfgit's, or an older okfgit's, which
install replaces in place): install adds only what is missing, uninstall removes only
those entries, and every other setting and hook keeps its place and value. A settings
file okfgit cannot read with certainty is never rewritten (exit 3).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from okfgit import plan as plan_mod
from okfgit.targets import gemini_home
from okfgit.targets.claude_home import claude_home, empty_config_home
from okfgit.context import Context
from okfgit.format import json_object
from okfgit.errors import IntegrityError, UsageError

# SessionStart's stdout becomes the agent's context, and a session may start outside any
# git repository: --quiet prints nothing on stdout, does nothing (exit 0) where there is
# no repository, and turns every failure into exit 1. Claude Code treats exit status 2 as
# "block" for some events (PreCompact can veto a compaction); `|| exit 1` also covers an
# okfgit too old to know --quiet (click's usage error is 2) and a missing okfgit (127).
COMMANDS: dict[str, str] = {
    "SessionStart": "okfgit project --quiet || exit 1",
    "SessionEnd": "okfgit sync --quiet || exit 1",
    "PreCompact": "okfgit sync --quiet || exit 1",
}
# What older okfgit versions installed: recognised so that install replaces them in place
# and uninstall removes them, never leaving two entries that run the same thing.
LEGACY: dict[str, tuple[str, ...]] = {
    "SessionStart": ("okfgit project || exit 1",),
    "SessionEnd": ("okfgit sync || exit 1",),
    "PreCompact": ("okfgit sync || exit 1",),
}
MATCHER = "*"  # every source / reason / trigger of the event
AGENTS = ("claude", "gemini")
# Gemini CLI 0.61.0's events (its HookEventName): the same commands; PreCompress for PreCompact.
GEMINI_COMMANDS: dict[str, str] = {
    "SessionStart": COMMANDS["SessionStart"],
    "SessionEnd": COMMANDS["SessionEnd"],
    "PreCompress": COMMANDS["PreCompact"],
}


def in_use(ctx: Context) -> tuple[str, ...]:
    """The agents whose hooks ``hooks status`` reports: Claude Code always, Gemini CLI where
    it is used (``home_agents.used``)."""
    from okfgit.targets import home_agents

    gemini = home_agents.used(settings_path(ctx, "gemini"), "gemini", ctx.environ)
    return AGENTS if gemini else ("claude",)


def commands(agent: str) -> dict[str, str]:
    return GEMINI_COMMANDS if agent == "gemini" else COMMANDS


def settings_path(ctx: Context, agent: str = "claude") -> Path:
    """``<claude home>/settings.json`` (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``), or Gemini
    CLI's ``<gemini home>/.gemini/settings.json``."""
    if agent == "gemini":
        return gemini_home.gemini_dir(ctx.environ, ctx.home) / "settings.json"
    problem = empty_config_home(ctx.environ)
    if problem is not None:
        raise UsageError(f"{problem}; okfgit does not write Claude Code's settings.json there")
    return claude_home(ctx.environ, ctx.home) / "settings.json"


@dataclass(frozen=True, slots=True)
class AgentChange:
    """What install or uninstall does to settings.json: the events touched and the bytes."""

    path: Path  # the file written (a symlinked settings.json's target)
    old: bytes | None
    new: bytes | None
    events: tuple[str, ...]  # events whose okfgit entry is added or replaced (install) or removed (uninstall)
    replaced: tuple[str, ...] = ()  # of ``events``: where an older okfgit's entry was brought up to date
    remove: bool = False  # uninstall: the file held nothing but okfgit's entries, so it goes

    @property
    def changed(self) -> bool:
        return self.remove or (self.new is not None and self.new != self.old)

    @property
    def reformats(self) -> bool:
        """Writing changes the layout of the person's own settings too (not only okfgit's
        entries): their file was not in the 2-space layout Claude Code itself writes."""
        return self.changed and not self.remove and self.old is not None and _dump(_parse(self.path, self.old)) != self.old

    def render(self) -> str:
        return plan_mod.unified(str(self.path), self.old, None if self.remove else self.new) if self.changed else ""


def plan_install(ctx: Context, agent: str = "claude") -> AgentChange:
    """The settings.json with okfgit's three hooks added where missing.

    An older okfgit's entry (``LEGACY``) gets the current command in place (its group,
    position and other keys kept); any further one, or one beside a current entry, goes.
    """
    path, old, settings = _load(settings_path(ctx, agent))
    hooks = _hooks_object(path, settings, create=True)
    assert hooks is not None  # create=True makes one
    touched: list[str] = []
    replaced: list[str] = []
    for event, command in commands(agent).items():
        groups = _event_groups(path, hooks, event, create=True)
        entries = [entry for group in groups for entry in _entries(path, event, group)]
        legacy = [entry for entry in entries if _is_legacy(entry, event)]
        current = any(_is_ours(entry, command) for entry in entries)
        if not current and legacy:
            legacy[0]["command"] = command  # the same dict: it keeps its place and other keys
        elif not current:
            groups.append({"matcher": MATCHER, "hooks": [{"type": "command", "command": command}]})
        if legacy:
            _remove_entries(path, hooks, event, _legacy_of(event))
            replaced.append(event)
        if legacy or not current:
            touched.append(event)
    return AgentChange(path, old, _dump(settings) if touched else old, tuple(touched), tuple(replaced))


def plan_uninstall(ctx: Context, agent: str = "claude") -> AgentChange:
    """The settings.json without okfgit's entries (an older okfgit's too); containers left
    empty by that go too."""
    path, old, settings = _load(settings_path(ctx, agent))
    if old is None:
        return AgentChange(path, None, None, ())
    hooks = _hooks_object(path, settings, create=False)
    removed: list[str] = []
    for event, command in commands(agent).items():
        if hooks is not None and event in hooks and _remove_entries(path, hooks, event, _okfgits(event, command)):
            removed.append(event)
    if hooks is not None and not hooks and removed:
        del settings["hooks"]
    if removed and not settings and path == settings_path(ctx, agent):
        # Nothing but okfgit's entries was in it (install created it, or it was an empty
        # object): the file goes, rather than leaving a `{}` that was never there.
        return AgentChange(path, old, None, tuple(removed), remove=True)
    return AgentChange(path, old, _dump(settings) if removed else old, tuple(removed))


def _remove_entries(path: Path, hooks: dict[str, Any], event: str, match: Callable[[Any], bool]) -> bool:
    """Drop the entries ``match`` picks from ``hooks[event]``; a group or event list left
    empty by that goes too (one that was empty before stays). True when any was removed."""
    groups = _event_groups(path, hooks, event, create=False)
    kept_groups = []
    removed = False
    for group in groups:
        entries = _entries(path, event, group)
        kept = [e for e in entries if not match(e)]
        if len(kept) < len(entries):
            removed = True
            if not kept:
                continue  # the group held only okfgit's entry
            group["hooks"] = kept
        kept_groups.append(group)
    if not removed:
        return False
    if kept_groups:
        hooks[event] = kept_groups
    else:
        del hooks[event]
    return True


def apply(ctx: Context, change: AgentChange) -> None:
    """Write the planned settings.json: temp file, fsync, rename (it holds a person's bytes)."""
    if not change.changed or (change.new is None and not change.remove):
        return
    data = None if change.remove else change.new
    write = plan_mod.FileWrite(change.path, data, "claude hooks", fsync=True, old=change.old)
    done = plan_mod.apply(ctx, plan_mod.Plan(writes=[write]))
    if done.failed:
        raise IntegrityError(done.failed[0][1])


@dataclass(frozen=True, slots=True)
class AgentStatus:
    path: Path
    installed: dict[str, bool]  # event -> okfgit's entry present (this okfgit's or an older one's)
    problem: str | None  # why the file cannot be read, if it cannot
    outdated: tuple[str, ...] = ()  # events with only an older okfgit's entry: `hooks install` updates them
    agent: str = "claude"

    @property
    def state(self) -> str:
        if self.problem:
            return "unreadable"
        found = sum(self.installed.values())
        if found == len(self.installed):
            return "outdated" if self.outdated else "installed"
        return "partial" if found else "absent"

    def to_json(self) -> dict[str, object]:
        return {"agent": self.agent, "settings": str(self.path), "state": self.state,
                "events": self.installed, "outdated": list(self.outdated), "problem": self.problem}


def status(ctx: Context, agent: str = "claude") -> AgentStatus:
    """Which of okfgit's hooks are in the agent's settings.json; never raises for a bad file."""
    wanted = commands(agent)
    try:
        path, _, settings = _load(settings_path(ctx, agent))
        hooks = _hooks_object(path, settings, create=False) or {}
        installed = {}
        outdated = []
        for event, command in wanted.items():
            groups = _event_groups(path, hooks, event, create=False) if event in hooks else []
            entries = [e for g in groups for e in _entries(path, event, g)]
            current = any(_is_ours(e, command) for e in entries)
            legacy = any(_is_legacy(e, event) for e in entries)
            installed[event] = current or legacy
            if legacy and not current:
                outdated.append(event)
    except (IntegrityError, UsageError) as exc:
        where = claude_home(ctx.environ, ctx.home) / "settings.json" if agent == "claude" else settings_path(ctx, agent)
        return AgentStatus(where, {e: False for e in wanted}, str(exc), agent=agent)
    return AgentStatus(path, installed, None, tuple(outdated), agent)


# -- reading settings.json with certainty ---------------------------------------------


def _load(path: Path) -> tuple[Path, bytes | None, dict[str, Any]]:
    """(file to write, its bytes or None, parsed object). A symlinked settings.json is
    followed so a dotfiles link stays a link."""
    target = path.resolve() if path.is_symlink() else path
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        return target, None, {}
    except OSError as exc:
        raise IntegrityError(f"{path}: cannot read ({exc.strerror or exc}); nothing was changed") from exc
    return target, data, _parse(path, data)


def _parse(path: Path, data: bytes) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise IntegrityError(f"{path}: not UTF-8; not rewriting it (nothing was changed)") from None
    return json_object.load(text, str(path))


def _hooks_object(path: Path, settings: dict[str, Any], *, create: bool) -> dict[str, Any] | None:
    hooks = settings.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = settings["hooks"] = {}
    if not isinstance(hooks, dict):
        raise IntegrityError(f"{path}: \"hooks\" is not an object; not rewriting it (nothing was changed)")
    return hooks


def _event_groups(path: Path, hooks: dict[str, Any], event: str, *, create: bool) -> list[Any]:
    if event not in hooks and create:
        hooks[event] = []
    groups = hooks[event]
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise IntegrityError(f"{path}: hooks.{event} is not a list of objects; not rewriting it (nothing was changed)")
    return groups


def _entries(path: Path, event: str, group: Mapping[str, Any]) -> list[Any]:
    entries = group.get("hooks", [])
    if not isinstance(entries, list):
        raise IntegrityError(f"{path}: a hooks.{event} entry's \"hooks\" is not a list; not rewriting it (nothing was changed)")
    return entries


def _is_ours(entry: Any, command: str) -> bool:
    return isinstance(entry, dict) and entry.get("type") == "command" and entry.get("command") == command


def _is_legacy(entry: Any, event: str) -> bool:
    return any(_is_ours(entry, command) for command in LEGACY.get(event, ()))


def _legacy_of(event: str) -> Callable[[Any], bool]:
    return lambda entry: _is_legacy(entry, event)


def _okfgits(event: str, command: str) -> Callable[[Any], bool]:
    """Any entry okfgit installed for ``event``: this version's ``command`` or an older one."""
    return lambda entry: _is_ours(entry, command) or _is_legacy(entry, event)


def _dump(settings: dict[str, Any]) -> bytes:
    # Claude Code writes settings.json the same way: 2-space indent, non-ASCII kept.
    return (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
