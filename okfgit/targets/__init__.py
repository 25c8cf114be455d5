"""Projection targets: one module per agent file format, all behind ``base.Target``.

``TARGETS`` (the registry: ``--target`` selects by ``group``; its order is the order of the
report) is made on first use, so that a module that needs one helper of this package
(``claude_home``, say) does not import every target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from okfgit.targets.base import Target

    TARGETS: tuple[Target, ...]


def __getattr__(name: str) -> Any:
    if name != "TARGETS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from okfgit.targets.agents_md import AgentsMd
    from okfgit.targets.claude_memory import ClaudeMemory
    from okfgit.targets.gemini_md import GeminiProject
    from okfgit.targets.gemini_memory import GeminiMemory
    from okfgit.targets import home_agents

    claude_md, codex_md, gemini_md, *others = home_agents.targets()
    registry = (ClaudeMemory(), claude_md, AgentsMd(), codex_md, GeminiMemory(), gemini_md, GeminiProject(), *others)
    globals()["TARGETS"] = registry
    return registry
