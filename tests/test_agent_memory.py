"""Claude Code's memory shapes, read back: fixtures made by Claude Code 2.1.332's own code
(fixtures/agents/claude-code-2.1.332/README.md says how)."""

from __future__ import annotations

from pathlib import Path

import pytest

from okfgit.format import agent_memory
from okfgit.format import concept as okf

CASES = Path(__file__).resolve().parent.parent / "fixtures" / "agents" / "claude-code-2.1.332" / "memory"
STAMPED = ["native-feedback", "older-type", "okfgit-concept", "okfgit-decision", "okfgit-captured-legacy", "inline-comment",
           "okfgit-concept-comment", "okfgit-concept-edited"]


def read(name: str) -> okf.Parsed:
    return okf.split((CASES / name).read_bytes(), name)


@pytest.mark.parametrize("case", STAMPED)
def test_what_claude_wrote_unfolds_to_what_was_written(case: str) -> None:
    written, stamped = read(f"{case}.input.md"), read(f"{case}.md")
    theirs = agent_memory.unfold(stamped.meta)
    mine = agent_memory.unfold(written.meta)
    assert agent_memory.same_knowledge(theirs.meta, mine.meta)
    assert "modified" in theirs.stamps and "metadata" not in theirs.meta
    assert not set(theirs.meta) & set(agent_memory.STAMPS)
    if case != "okfgit-concept-edited":
        assert agent_memory.same_body(stamped.body, written.body)


def test_the_folded_shape_puts_every_key_once_at_the_top() -> None:
    out = agent_memory.unfold(read("okfgit-concept.md").meta)
    assert out.folded
    assert out.meta == {
        "description": "Caches are invalidated by domain events, never by TTL alone", "type": "Pattern",
        "title": "Cache invalidation by event", "tags": ["cache", "architecture"], "scope": "project",
        "okf_id": "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b", "okf_source": "authored", "status": "stable"}
    assert out.stamps == {"node_type": "memory", "originSessionId": "5f0c9a43-8d2e-4b71-9a36-2c1e7d4b8f10",
                          "modified": "2026-12-02T10:00:00.000Z"}  # name "" is no name (Claude Code's ``so``)


def test_metadata_type_wins_over_a_top_level_type_as_in_claude_code() -> None:
    meta = {"name": "x", "type": "project", "metadata": {"type": "user", "node_type": "memory"}}
    assert agent_memory.unfold(meta).meta == {"name": "x", "type": "user"}


def test_the_memory_item_block_is_a_stamp() -> None:
    out = agent_memory.unfold(read("okfgit-concept-item.md").meta)
    assert out.stamps["claudeCodeItem"]["id"] == "2c8e4f1a-5b6d-4e7f-8a9b-0c1d2e3f4a5b"
    assert agent_memory.same_knowledge(out.meta, agent_memory.unfold(read("okfgit-concept.input.md").meta).meta)


def test_an_older_shape_is_left_as_it_is() -> None:
    meta = read("older-type.input.md").meta
    out = agent_memory.unfold(meta)
    assert (out.meta, out.stamps, out.folded) == (meta, {}, False)


@pytest.mark.parametrize(("name", "claude"), [("release-freeze", "release-freeze"), ("Release Freeze", "release-freeze"),
                                              ("  Tabs, please!  ", "tabs-please"), ("snake_case", "snake_case")])
def test_claude_name(name: str, claude: str) -> None:
    assert agent_memory.claude_name(name) == claude


def test_edit_writes_the_stamped_file_back_onto_the_concept_bytes() -> None:
    concept = (CASES / "okfgit-concept.input.md").read_bytes()
    stamped = read("okfgit-concept-edited.md")
    out, parsed = agent_memory.edit(concept, "c.md", agent_memory.unfold(stamped.meta).meta, stamped.body,
                                    keep=agent_memory.STAMPS)
    # only the changed body line moved: every key's line as committed, no metadata, no stamp
    assert out == concept.replace(b"A TTL is only a safety net.", b"A TTL is only a safety net, never the rule.")
    assert parsed.meta == okf.split(concept, "c.md").meta


def test_edit_unfolds_an_older_okfgit_capture_once() -> None:
    legacy = (CASES / "okfgit-captured-legacy.input.md").read_bytes()
    stamped = read("okfgit-captured-legacy.md")
    out, parsed = agent_memory.edit(legacy, "c.md", agent_memory.unfold(stamped.meta).meta, stamped.body,
                                    keep=agent_memory.STAMPS)
    assert "metadata" not in parsed.meta and parsed.meta["type"] == "feedback"
    assert out.count(b"type: feedback") == 1
    assert parsed.body == okf.split(legacy, "c.md").body  # the blank line Claude added is not a change
