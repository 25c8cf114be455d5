"""The global tier's managed block, as every home-level instruction file carries it.

Each agent loads its home-level file (``<claude home>/CLAUDE.md``, ``$CODEX_HOME/AGENTS.md``,
``~/.gemini/GEMINI.md``, opencode's, Copilot's, Amp's) into every session of every project,
so the block is the navigation protocol, then the global tier's facts that matter most, one
line each, then a pointer to the global index for the rest: "global-scope facts + nav
pointer". The facts are ranked by the rule Claude's recall uses for what is not new
(``recall.rest_key``: human-verified first, then Decisions, Playbooks and Lessons, then the
rest; deprecated concepts never) and cut at ``FACTS_BUDGET`` bytes, so the block stays a
small, fixed share of each session's context however large the tier grows. Home files are
not tracked: absolute paths are fine there.
"""

from __future__ import annotations

from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.knowledge.cards import TierCard
from okfgit.targets import memory_index, recall
from okfgit.targets.base import View

SCOPE = "global"
# Bytes of fact lines in each home-level block. Every agent loads the file whole into every
# session (Codex counts it outside its 32 KiB budget for project files), so the share a
# machine's knowledge takes of each session is bounded here, not by the tier's size.
FACTS_BUDGET = 6_000


def global_block(view: View) -> str:
    """The protocol, the global tier's most useful facts within ``FACTS_BUDGET``, the index."""
    info = view.tier(SCOPE)
    assert info is not None
    lines = [view.nav_protocol.rstrip(), "", f"The global knowledge base on this machine: `{info.root_index}`"]
    ranked = rank(view.global_cards())
    listed: list[str] = []
    used = 0
    for concept in ranked:
        line = fact_line(concept, str(info.tier.root / concept.path))
        cost = len(line.encode("utf-8")) + 1
        if used + cost > FACTS_BUDGET:
            break
        listed.append(line)
        used += cost
    if listed:
        lines += ["", "Its concepts, the most useful first:", *listed]
    rest = len(ranked) - len(listed)
    if rest:
        noun = "concept" if rest == 1 else "concepts"
        lines += [f"- ... and {rest:,} more {noun}: start at `{info.root_index}`"]
    return "\n".join(lines) + "\n"


HOOK_CHARS = 120  # a fact's hook in a block is cut here (the link, an absolute path, never is)


def fact_line(concept: TierCard, path: str) -> str:
    """``- [Title](path) — hook``: the hook cut to ``HOOK_CHARS`` with an ellipsis."""
    title = concept.title.replace("[", "(").replace("]", ")")
    hook = concept.card.hook
    if len(hook) > HOOK_CHARS:
        hook = hook[: HOOK_CHARS - 1].rstrip() + memory_index.ELLIPSIS
    head = f"- [{title}]({memory_index.link_target(path)})"
    return f"{head} {memory_index.DASH} {hook}" if hook else head


def rank(concepts: list[TierCard]) -> list[TierCard]:
    """The global tier's current concepts, the most useful first (``recall.rest_key``): those
    projection projects (a valid ``okf_id``, a string ``type``), deprecated ones aside."""
    live = [c for c in concepts if c.card.status != lifecycle.DEPRECATED and not c.card.flaw
            and okf.is_valid_okf_id(c.card.okf_id)]

    def key(c: TierCard) -> tuple[int, int, str, str]:
        return recall.rest_key(recall.Candidate(c.path, 0, c.path, c.card.captured, c.card.verified, c.card.type,
                                                False, 0))
    return sorted(live, key=key)
