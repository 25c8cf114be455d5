"""``<repo>/AGENTS.md``: the project tier's managed block (Codex, opencode, Cursor, Copilot).

The file is tracked, so its block is identical in every clone and every run: the
navigation protocol and a relative pointer to ``.okf/index.md``; no absolute path, no run,
nothing that changes when a concept does.
"""

from __future__ import annotations

from okfgit.targets.base import TargetPlan, View, plan_block
from okfgit.knowledge.tiers import PROJECT_PREFIX

SCOPE = "project"


def project_block(nav_protocol: str) -> str:
    index = f"{PROJECT_PREFIX}/index.md"
    return f"{nav_protocol.rstrip()}\n\nThis project's knowledge base starts at [{index}]({index}).\n"


class AgentsMd:
    name = "agents-md"
    group = "agents"

    def plan(self, view: View) -> TargetPlan:
        if view.tier("project") is None or view.worktree is None:
            return TargetPlan()
        return plan_block(view.worktree / "AGENTS.md", SCOPE, project_block(view.nav_protocol),
                          "project knowledge protocol for agents that read AGENTS.md", owned=view.state,
                          wrote=view.wrote)
