"""``$CODEX_HOME/AGENTS.md``: the global tier's managed block for Codex.

Codex reads it in every session before the project's own AGENTS.md (its 32 KiB
``project_doc_max_bytes`` counts project files only), so the block is the same as in
CLAUDE.md: the protocol, the global tier's most useful facts, the index.
"""

from __future__ import annotations

from okfgit.targets import claude_home
from okfgit.targets.base import TargetPlan, View, plan_block
from okfgit.targets.global_facts import SCOPE, global_block


class CodexAgents:
    name = "codex-agents"
    group = "agents"

    def plan(self, view: View) -> TargetPlan:
        if view.tier("global") is None:
            return TargetPlan()
        path = claude_home.codex_home(view.ctx.environ, view.ctx.home) / "AGENTS.md"
        return plan_block(path, SCOPE, global_block(view), "global knowledge protocol for Codex",
                          follow_link=True, owned=view.state, wrote=view.wrote)
