"""The global tier's block where opencode, Copilot CLI and Amp read their user instructions.

| agent | file (read in every session) | read from |
|---|---|---|
| opencode 1.18.33 | ``$XDG_CONFIG_HOME/opencode/AGENTS.md`` (default ``~/.config/opencode``); only when it is missing, ``~/.claude/CLAUDE.md`` | its shipped binary (``Instruction.systemPaths``: the first of the two that exists) |
| Copilot CLI 1.0.102 | ``$COPILOT_HOME/copilot-instructions.md`` (default ``~/.copilot``) | ``copilot instruction list``, run offline |
| Amp | ``$XDG_CONFIG_HOME/amp/AGENTS.md`` (default ``~/.config/amp``) | its documentation |

Each block is written only where the agent is used: its folder exists, its command is on the
PATH, or the file is there already; okfgit never creates an agent's folder in a home that
does not use the agent. opencode gets no new ``AGENTS.md`` while ``~/.claude/CLAUDE.md`` is
there and carries the block: creating the file would hide the person's ``CLAUDE.md`` from
opencode, which reads only the first of the two.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from okfgit.targets import claude_home
from okfgit.targets.base import TargetPlan, View, plan_block
from okfgit.targets.global_facts import SCOPE, global_block


def config_home(environ: Mapping[str, str], home: Path) -> Path:
    value = environ.get("XDG_CONFIG_HOME")
    return Path(value) if value else home / ".config"


def opencode_file(environ: Mapping[str, str], home: Path) -> Path:
    return config_home(environ, home) / "opencode" / "AGENTS.md"


def copilot_file(environ: Mapping[str, str], home: Path) -> Path:
    value = environ.get("COPILOT_HOME")
    return (Path(value) if value else home / ".copilot") / "copilot-instructions.md"


def amp_file(environ: Mapping[str, str], home: Path) -> Path:
    return config_home(environ, home) / "amp" / "AGENTS.md"


def used(path: Path, command: str, environ: Mapping[str, str]) -> bool:
    """The agent is used here: its file or folder exists, or its command is on the PATH."""
    return path.exists() or path.is_symlink() or path.parent.is_dir() \
        or shutil.which(command, path=environ.get("PATH")) is not None


class HomeBlock:
    """The global block in one agent's home-level instruction file, where that agent is used."""

    group = "agents"

    def __init__(self, name: str, command: str, why: str, path: Callable[[Mapping[str, str], Path], Path],
                 unwanted: Callable[[View, Path], str | None] = lambda view, path: None) -> None:
        self.name, self.command, self.why = name, command, why
        self.path, self.unwanted = path, unwanted

    def plan(self, view: View) -> TargetPlan:
        if view.tier(SCOPE) is None:
            return TargetPlan()
        path = self.path(view.ctx.environ, view.ctx.home)
        if not used(path, self.command, view.ctx.environ):
            # When the agent's folder appears, the fast path must not call the next run a no-op.
            return TargetPlan(watched=[str(path.parent)])
        problem = self.unwanted(view, path)  # why not here ("": without a word), or None
        if problem is not None:
            return TargetPlan(warnings=[problem] if problem else [], watched=[str(path)])
        return plan_block(path, SCOPE, global_block(view), self.why, follow_link=True, owned=view.state,
                          wrote=view.wrote)


def _opencode_unwanted(view: View, path: Path) -> str | None:
    if path.exists() or path.is_symlink():
        return None
    # opencode reads ~/.claude/CLAUDE.md (by the home folder, whatever $CLAUDE_CONFIG_DIR
    # says) only while its own file is missing: a new file would hide that one from it.
    fallback = view.ctx.home / ".claude" / "CLAUDE.md"
    ours = claude_home.claude_home(view.ctx.environ, view.ctx.home) / "CLAUDE.md"
    if fallback == ours and claude_home.empty_config_home(view.ctx.environ) is None:
        return ""  # okfgit's block reaches opencode through CLAUDE.md
    if fallback.exists():
        return (f"{path}: not created: opencode reads {fallback} while it is missing, and a new file would "
                f"hide that one from opencode; create {path} to give opencode okfgit's global block")
    return None


def targets() -> tuple[HomeBlock, ...]:
    """opencode's, Copilot CLI's and Amp's home files, in the report's order."""
    return (HomeBlock("opencode-agents", "opencode", "global knowledge for opencode", opencode_file,
                      _opencode_unwanted),
            HomeBlock("copilot-instructions", "copilot", "global knowledge for Copilot CLI", copilot_file),
            HomeBlock("amp-agents", "amp", "global knowledge for Amp", amp_file))
