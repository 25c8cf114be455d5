"""``<claude home>/CLAUDE.md``: the global tier's managed block for Claude Code.

Claude Code reads this file in every session (and never reads AGENTS.md), so the block
carries the navigation protocol and where the global knowledge base is. It names no
concept and no count, so it changes only when the protocol or the folder changes.
"""

from __future__ import annotations

from okfgit.targets import claude_home
from okfgit.targets.base import TargetPlan, View, plan_block

SCOPE = "global"


def global_block(view: View) -> str:
    """The protocol and the global index's absolute path (this file is not tracked)."""
    info = view.tier("global")
    assert info is not None
    return f"{view.nav_protocol.rstrip()}\n\nThe global knowledge base on this machine: `{info.root_index}`\n"


class ClaudeMd:
    name = "claude-md"
    group = "claude"

    def plan(self, view: View) -> TargetPlan:
        if view.tier("global") is None:
            return TargetPlan()
        problem = claude_home.empty_config_home(view.ctx.environ)
        if problem is not None:
            return TargetPlan(warnings=[f"CLAUDE.md: {problem}"])
        path = claude_home.claude_home(view.ctx.environ, view.ctx.home) / "CLAUDE.md"
        return plan_block(path, SCOPE, global_block(view), "global knowledge protocol for Claude Code",
                          follow_link=True, owned=view.state, wrote=view.wrote)
