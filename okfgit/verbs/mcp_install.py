"""``okfgit mcp install|uninstall|status``: register the MCP server where each agent reads it.

| agent  | project scope (default)       | user scope                                     |
| claude | ``<repo>/.mcp.json``          | ``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json`` |
| codex  | (none: Codex reads only its own config) | ``$CODEX_HOME/config.toml`` (default scope) |
| cursor | ``<repo>/.cursor/mcp.json``   | ``~/.cursor/mcp.json``                         |
| gemini | ``<repo>/.gemini/settings.json`` | ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME/.gemini``) |

Only okfgit's entry is written (``format.mcp_config``: one splice, the rest of the file byte
for byte). What install changed is recorded (the file, the splice, the blob OIDs before and
after) in ``$XDG_STATE_HOME/okfgit/mcp-installs.json``, so that ``uninstall`` restores the
file exactly, or removes a file install created, as long as nobody changed the file since;
otherwise it removes okfgit's entry alone. Every write goes through plan/apply, the person's
file fsynced before its rename.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from okfgit import plan as plan_mod
from okfgit.context import Context
from okfgit.errors import IntegrityError, UsageError
from okfgit.format import mcp_config
from okfgit.format.mcp_config import Splice
from okfgit.git.objects import blob_oid
from okfgit.targets import gemini_home
from okfgit.targets.claude_home import claude_home, codex_home

AGENTS = ("claude", "codex", "cursor", "gemini")
SCOPES = ("project", "user")
NAME = "okfgit"
RECORD = ("okfgit", "mcp-installs.json")


@dataclass(frozen=True, slots=True)
class Target:
    """One agent's config file at one scope, and the entry okfgit puts there."""

    agent: str
    scope: str
    path: Path
    toml: bool
    entry: dict[str, Any]


def default_scope(agent: str) -> str:
    return "user" if agent == "codex" else "project"


def target(ctx: Context, root: Path | None, agent: str, scope: str | None = None) -> Target:
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}: use one of {', '.join(AGENTS)}")
    scope = scope or default_scope(agent)
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r}: use project or user")
    if agent == "codex":
        if scope != "user":
            raise UsageError("Codex reads MCP servers only from $CODEX_HOME/config.toml: use --scope user")
        return Target(agent, scope, codex_home(ctx.environ, ctx.home) / "config.toml", True,
                      {"command": "okfgit", "args": ["mcp"]})
    if scope == "project" and root is None:
        raise UsageError("--scope project needs a git repository: run it inside one or pass --repo")
    if agent == "claude":
        path = root / ".mcp.json" if scope == "project" and root else claude_user_config(ctx)
        return Target(agent, scope, path, False, {"type": "stdio", "command": "okfgit", "args": ["mcp"]})
    if agent == "gemini":
        # Gemini CLI 0.61.0 starts a server in the folder it runs in (no ``cwd`` in the entry).
        path = root / ".gemini" / "settings.json" if scope == "project" and root else \
            gemini_home.gemini_dir(ctx.environ, ctx.home) / "settings.json"
        return Target(agent, scope, path, False, {"command": "okfgit", "args": ["mcp"]})
    path = root / ".cursor" / "mcp.json" if scope == "project" and root else ctx.home / ".cursor" / "mcp.json"
    # Cursor expands ${workspaceFolder}; its working folder for a server is not the project's.
    return Target(agent, scope, path, False, {"command": "okfgit", "args": ["mcp", "--repo", "${workspaceFolder}"]})


def claude_user_config(ctx: Context) -> Path:
    """Where Claude Code keeps user-scope MCP servers (``mcpServers`` at the top level):
    a legacy ``<claude home>/.config.json`` when it exists, else ``.claude.json`` in
    ``$CLAUDE_CONFIG_DIR`` (when set) or the home folder."""
    legacy = claude_home(ctx.environ, ctx.home) / ".config.json"
    if legacy.is_file():
        return legacy
    configured = ctx.environ.get("CLAUDE_CONFIG_DIR", "")
    return (Path(configured) if configured else ctx.home) / ".claude.json"


# -- plans ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """What install or uninstall does to one config file."""

    target: Target
    path: Path  # the file written (a symlinked config's target)
    old: bytes | None
    new: bytes | None
    action: str  # added, updated, unchanged (install); removed, restored, deleted, absent (uninstall)
    record: dict[str, Any] | None  # the install record to keep for this file (None: drop it)
    folders: tuple[str, ...] = ()  # uninstall: folders install created for the file, removed when empty

    @property
    def changed(self) -> bool:
        return self.new != self.old

    def render(self) -> str:
        return plan_mod.unified(str(self.path), self.old, self.new) if self.changed else ""

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.target.agent, "scope": self.target.scope, "path": str(self.path),
                "action": self.action, "changed": self.changed}

    def describe(self) -> str:
        where = f"{self.target.agent} ({self.target.scope})"
        return where + ": " + {
            "added": f"added okfgit's MCP server to {self.path}",
            "updated": f"brought okfgit's MCP server up to date in {self.path}",
            "unchanged": f"okfgit's MCP server is already in {self.path}; nothing to do",
            "restored": f"removed okfgit's MCP server: {self.path} is back to its bytes before install",
            "deleted": f"removed {self.path} (install had created it)",
            "removed": f"removed okfgit's MCP server from {self.path}",
            "absent": f"okfgit's MCP server is not in {self.path}; nothing to do",
        }[self.action]


def plan_install(ctx: Context, tgt: Target) -> Change:
    """okfgit's entry added (or brought up to date) in ``tgt``'s file; nothing else changes."""
    path, old = _read(tgt.path)
    records = _records(ctx)
    base, base_record = _before_our_install(records.get(str(path)), old)
    text = _text(base, path)
    splice = (mcp_config.toml_set if tgt.toml else mcp_config.json_set)(text, str(path), NAME, tgt.entry)
    if splice is None:
        return Change(tgt, path, old, old, "unchanged", base_record)
    new = splice.apply(text or "").encode("utf-8")
    if new == old:
        return Change(tgt, path, old, old, "unchanged", base_record)
    action = "updated" if text is not None and _has_entry(tgt, text, path) else "added"
    record: dict[str, Any] = {"before": blob_oid(base) if base is not None else None, "wrote": blob_oid(new),
              "offset": splice.offset, "removed": splice.removed, "inserted": splice.inserted}
    if base is None:
        record["folders"] = (base_record or {}).get("folders") or _missing_folders(path)
    return Change(tgt, path, old, new, action, record)


def plan_uninstall(ctx: Context, tgt: Target) -> Change:
    """The file as it was before ``install`` when nobody changed it since (or no file, when
    install created it); otherwise the file without okfgit's entry."""
    path, old = _read(tgt.path)
    if old is None:
        return Change(tgt, path, None, None, "absent", None)
    base, record = _before_our_install(_records(ctx).get(str(path)), old)
    if base != old:
        folders = tuple(record.get("folders") or ()) if record and base is None else ()
        return Change(tgt, path, old, base, "deleted" if base is None else "restored", None, folders)
    text = _text(old, path) or ""
    splice = (mcp_config.toml_remove if tgt.toml else mcp_config.json_remove)(text, str(path), NAME)
    if splice is None:
        return Change(tgt, path, old, old, "absent", None)
    return Change(tgt, path, old, splice.apply(text).encode("utf-8"), "removed", None)


def apply(ctx: Context, change: Change) -> None:
    """Write the planned file (fsynced: it holds a person's bytes) and the install record."""
    records = _records(ctx)
    key = str(change.path)
    wanted = dict(records)
    if change.record is None:
        wanted.pop(key, None)
    else:
        wanted[key] = change.record
    writes = []
    if change.changed:
        writes.append(plan_mod.FileWrite(change.path, change.new, f"mcp {change.target.agent}", fsync=True,
                                         old=change.old))
    if wanted != records:
        data = (json.dumps(wanted, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
        writes.append(plan_mod.FileWrite(record_path(ctx), data, "mcp install record", fsync=True))
    if not writes:
        return
    done = plan_mod.apply(ctx, plan_mod.Plan(writes=writes))
    if done.failed:
        raise IntegrityError(done.failed[0][1])
    for folder in change.folders:  # deepest first; a folder someone put anything in stays
        try:
            Path(folder).rmdir()
        except OSError:
            break


# -- status -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Installed:
    target: Target
    state: str  # installed, outdated (an okfgit entry that differs), absent, unreadable
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.target.agent, "scope": self.target.scope, "path": str(self.target.path),
                "state": self.state, "problem": self.problem}


@dataclass(frozen=True, slots=True)
class McpStatus:
    entries: list[Installed]
    command: str | None  # where `okfgit` is found on PATH, as the agents will start it
    sdk_missing: str | None = None  # the command that installs the MCP SDK, when it is missing

    def to_json(self) -> dict[str, Any]:
        return {"servers": [e.to_json() for e in self.entries], "command": self.command,
                "sdk": {"installed": self.sdk_missing is None, "install": self.sdk_missing}}


def status(ctx: Context, root: Path | None, sdk_missing: str | None = None) -> McpStatus:
    """Where okfgit's server entry is, for every agent and scope; never raises for a bad file.
    ``sdk_missing``: the command that installs the MCP SDK, when it is missing (``mcp/stdio``
    knows)."""
    out = []
    for agent in AGENTS:
        for scope in SCOPES:
            try:
                tgt = target(ctx, root, agent, scope)
            except UsageError:
                continue
            out.append(_state(tgt))
    return McpStatus(out, shutil.which("okfgit", path=ctx.environ.get("PATH")), sdk_missing)


def render_status(st: McpStatus) -> str:
    lines = [f"{e.target.agent:<7}{e.target.scope:<8}{e.state:<10}{e.target.path}"
             + (f"  ({e.problem})" if e.problem else "") for e in st.entries]
    lines.append(f"okfgit command: {st.command}" if st.command
                 else "okfgit command: not on PATH (agents start `okfgit mcp`; put okfgit on their PATH)")
    lines.append("MCP SDK: installed" if st.sdk_missing is None
                 else f"MCP SDK: missing, so `okfgit mcp` cannot serve; install it with: {st.sdk_missing}")
    return "\n".join(lines)


def _state(tgt: Target) -> Installed:
    try:
        path, data = _read(tgt.path)
        text = _text(data, path)
        if text is None:
            return Installed(tgt, "absent")
        current = (mcp_config.toml_entry if tgt.toml else mcp_config.json_entry)(text, str(path), NAME)
    except IntegrityError as exc:
        return Installed(tgt, "unreadable", str(exc))
    if current is None:
        return Installed(tgt, "absent")
    return Installed(tgt, "installed" if current == tgt.entry else "outdated")


# -- files and records --------------------------------------------------------------------


def record_path(ctx: Context) -> Path:
    return ctx.xdg_state_home.joinpath(*RECORD)


def _records(ctx: Context) -> dict[str, Any]:
    try:
        data = json.loads(record_path(ctx).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no record (or a damaged one): uninstall falls back to removing the entry alone
    return data if isinstance(data, dict) else {}


def _before_our_install(record: Any, current: bytes | None) -> tuple[bytes | None, dict[str, Any] | None]:
    """(the file's bytes before okfgit's install, the record) when ``record`` still
    describes ``current`` exactly; otherwise (``current``, None)."""
    if not isinstance(record, dict) or current is None or record.get("wrote") != blob_oid(current):
        return current, None
    try:
        splice = Splice(int(record["offset"]), str(record["removed"]), str(record["inserted"]))
        before_text = splice.undo(current.decode("utf-8"))
    except (KeyError, TypeError, ValueError):
        return current, None
    if before_text is None:
        return current, None
    before = before_text.encode("utf-8")
    if record.get("before") is None:
        return (None, record) if not before else (current, None)
    return (before, record) if blob_oid(before) == record.get("before") else (current, None)


def _missing_folders(path: Path) -> list[str]:
    """The folders above ``path`` that do not exist yet, deepest first."""
    out = []
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        out.append(str(folder))
        folder = folder.parent
    return out


def _read(path: Path) -> tuple[Path, bytes | None]:
    """(the file to write, its bytes or None). A symlinked config is followed so a dotfiles
    link stays a link."""
    target = path.resolve() if path.is_symlink() else path
    try:
        return target, target.read_bytes()
    except FileNotFoundError:
        return target, None
    except OSError as exc:
        raise IntegrityError(f"{path}: cannot read ({exc.strerror or exc}); nothing was changed") from exc


def _text(data: bytes | None, path: Path) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise IntegrityError(f"{path}: not UTF-8; not rewriting it (nothing was changed)") from None


def _has_entry(tgt: Target, text: str, path: Path) -> bool:
    return (mcp_config.toml_entry if tgt.toml else mcp_config.json_entry)(text, str(path), NAME) is not None
