"""The global tier's block in every agent's home-level instruction file: one target, six files.

Each agent loads its home-level file into every session of every project, so each gets the
same block (``global_facts.global_block``): the protocol, the global tier's most useful
facts, the index. The agents differ only in where the file is and whether the agent is
used on this machine:

| target | file | read from |
|---|---|---|
| ``claude-md`` | ``<claude home>/CLAUDE.md`` (Claude Code never reads AGENTS.md) | Claude Code 2.1.332 |
| ``codex-agents`` | ``$CODEX_HOME/AGENTS.md`` (outside its 32 KiB budget for project files) | Codex CLI 0.171.0 |
| ``gemini-md`` | ``<gemini folder>/<context.fileName>`` (``gemini_home``) | Gemini CLI 0.61.0 |
| ``opencode-agents`` | ``$OPENCODE_CONFIG_DIR/AGENTS.md``, else ``$XDG_CONFIG_HOME/opencode/AGENTS.md`` (default ``~/.config/opencode``); only when it is missing, ``~/.claude/CLAUDE.md`` | opencode 1.18.33's shipped binary (``Instruction.systemPaths``: the first of the two that exists) |
| ``copilot-instructions`` | ``$COPILOT_HOME/copilot-instructions.md`` (default ``~/.copilot``) | ``copilot instruction list`` (Copilot CLI 1.0.102), run offline |
| ``amp-agents`` | ``$XDG_CONFIG_HOME/amp/AGENTS.md`` (default ``~/.config/amp``) | Amp's documentation |

Each file is written only where its agent is used: its folder exists, its command is on
the PATH, or the file is there already (so a block okfgit wrote before is kept up to date);
okfgit never creates an agent's folder in a home that does not use the agent. opencode gets no
new ``AGENTS.md`` while ``~/.claude/CLAUDE.md`` is there and carries the block: creating
the file would hide the person's ``CLAUDE.md`` from opencode, which reads only the first
of the two.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from okfgit.targets import claude_home, gemini_home
from okfgit.targets.base import TargetPlan, View, plan_block
from okfgit.targets.global_facts import SCOPE, global_block


def config_home(environ: Mapping[str, str], home: Path) -> Path:
    value = environ.get("XDG_CONFIG_HOME")
    return Path(value) if value else home / ".config"


OPENCODE_CONFIG_DIR = "OPENCODE_CONFIG_DIR"


def opencode_file(environ: Mapping[str, str], home: Path) -> Path:
    value = environ.get(OPENCODE_CONFIG_DIR)  # set, even empty (opencode's ``??``), it is the folder
    return (Path(value) if value is not None else config_home(environ, home) / "opencode") / "AGENTS.md"


COPILOT_HOME = "COPILOT_HOME"


def copilot_file(environ: Mapping[str, str], home: Path) -> Path:
    value = environ.get(COPILOT_HOME)
    return (Path(value) if value else home / ".copilot") / "copilot-instructions.md"


def amp_file(environ: Mapping[str, str], home: Path) -> Path:
    return config_home(environ, home) / "amp" / "AGENTS.md"


def used(path: Path, command: str, environ: Mapping[str, str]) -> bool:
    """The agent is used here: its file (``path``) or the folder it sits in exists, or its
    command is on the PATH."""
    return path.exists() or path.is_symlink() or path.parent.is_dir() \
        or shutil.which(command, path=environ.get("PATH")) is not None


def _nothing(view: View, path: Path) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class HomeBlock:
    """The global block in one agent's home-level instruction file."""

    name: str
    group: str  # what ``--target`` selects it by
    why: str
    path: Callable[[View], Path]
    command: str  # the agent's command (on the PATH: the agent is used)
    # Why not here (a warning; "": without a word), or None: the block goes in.
    unwanted: Callable[[View, Path], str | None] = _nothing
    settings: Callable[[View], list[Path]] = lambda view: []  # files that can move ``path``

    def plan(self, view: View) -> TargetPlan:
        if view.tier(SCOPE) is None:
            return TargetPlan()
        path = self.path(view)
        watched = [str(p) for p in self.settings(view)]
        if not path.is_absolute():
            # The agent's home variable is set but empty (Claude Code's and opencode's `??`): its
            # file is the one in the folder it runs in, the project's, no place for a machine's block.
            return TargetPlan(warnings=[f"{path}: the {self.command} home variable is set but empty, so its "
                                        "home-level file is the project's own; okfgit writes no global block there"])
        if not used(path, self.command, view.ctx.environ):
            # When the agent's folder appears, the fast path must not call the next run a no-op.
            return TargetPlan(watched=[*watched, str(path.parent)])
        problem = self.unwanted(view, path)
        if problem is not None:  # the file appearing may change that
            return TargetPlan(warnings=[problem] if problem else [], watched=[*watched, str(path)])
        out = plan_block(path, SCOPE, global_block(view), self.why, follow_link=True, owned=view.state,
                         wrote=view.wrote)
        out.watched.extend(watched)
        return out


def _claude_md(view: View) -> Path:
    return claude_home.claude_home(view.ctx.environ, view.ctx.home) / "CLAUDE.md"


def _codex_md(view: View) -> Path:
    return claude_home.codex_home(view.ctx.environ, view.ctx.home) / "AGENTS.md"


def _gemini_md(view: View) -> Path:
    name = gemini_home.context_file_names(view.worktree, view.ctx.environ, view.ctx.home)[0]
    return gemini_home.gemini_dir(view.ctx.environ, view.ctx.home) / name


def _gemini_settings(view: View) -> list[Path]:
    return [gemini_home.gemini_dir(view.ctx.environ, view.ctx.home) / "settings.json"]


def _opencode_unwanted(view: View, path: Path) -> str | None:
    if path.exists() or path.is_symlink():
        return None
    # opencode reads ~/.claude/CLAUDE.md (by the home folder, whatever $CLAUDE_CONFIG_DIR
    # says) only while its own file is missing: a new file would hide that one from it.
    fallback = view.ctx.home / ".claude" / "CLAUDE.md"
    if fallback == _claude_md(view) and used(fallback, "claude", view.ctx.environ):
        return ""  # okfgit's block reaches opencode through CLAUDE.md
    if fallback.exists():
        return (f"{path}: not created: opencode reads {fallback} while it is missing, and a new file would "
                f"hide that one from opencode; create {path} to give opencode okfgit's global block")
    return None


def targets() -> tuple[HomeBlock, ...]:
    """Every agent's home-level file, each in its place in the report's order."""
    return (
        HomeBlock("claude-md", "claude", "global knowledge protocol for Claude Code", _claude_md, "claude"),
        HomeBlock("codex-agents", "agents", "global knowledge protocol for Codex", _codex_md, "codex"),
        HomeBlock("gemini-md", "gemini", "global knowledge for Gemini CLI", _gemini_md, "gemini",
                  settings=_gemini_settings),
        HomeBlock("opencode-agents", "agents", "global knowledge for opencode",
                  lambda view: opencode_file(view.ctx.environ, view.ctx.home), "opencode", _opencode_unwanted),
        HomeBlock("copilot-instructions", "agents", "global knowledge for Copilot CLI",
                  lambda view: copilot_file(view.ctx.environ, view.ctx.home), "copilot"),
        HomeBlock("amp-agents", "agents", "global knowledge for Amp",
                  lambda view: amp_file(view.ctx.environ, view.ctx.home), "amp"),
    )
