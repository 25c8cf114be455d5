"""Projection targets: one module per agent file format, all behind ``base.Target``."""

from __future__ import annotations

from okfgit.targets.agents_md import AgentsMd
from okfgit.targets.base import Target
from okfgit.targets.claude_md import ClaudeMd
from okfgit.targets.claude_memory import ClaudeMemory
from okfgit.targets.codex_agents import CodexAgents

# The registry: --target selects by ``group``. Order is the order of the report.
TARGETS: tuple[Target, ...] = (ClaudeMemory(), ClaudeMd(), AgentsMd(), CodexAgents())
