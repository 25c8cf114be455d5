"""``<claude home>/CLAUDE.md``: the global tier's managed block for Claude Code.

Claude Code reads this file in every session (and never reads AGENTS.md), so the block
carries the navigation protocol, the global tier's most useful facts and where the rest is
(``global_facts.global_block``). opencode reads ``~/.claude/CLAUDE.md`` too when its own
``AGENTS.md`` is missing.
"""

from __future__ import annotations

from okfgit.targets import claude_home
from okfgit.targets.base import TargetPlan, View, plan_block
from okfgit.targets.global_facts import SCOPE, global_block


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
