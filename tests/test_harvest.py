"""The okf-harvest block read back from a pull request's text (okfgit.flows.harvest)."""

from __future__ import annotations

from okfgit.flows import harvest


def test_blocks_are_found_by_info_string_with_commonmark_fences() -> None:
    text = "\r\n".join([
        "Prose.",
        "   ````okf-harvest ",  # indented three spaces, four backticks, trailing space
        '   {"a": 1,',
        "   ```",  # too short to close: content
        '    "b": 2}',
        "   `````",  # longer: closes
        "```okf-harvest-continued",
        '{"part": 1}',
        "```",
        "    ```okf-harvest",  # four spaces: indented code, not a fence
        "    {}",
        "    ```",
        "~~~okf-harvest",
        "never closed",
    ])
    assert harvest.find_blocks(text) == ['{"a": 1,\n```\n "b": 2}\n', "never closed\n"]
    assert harvest.find_blocks(text, harvest.CONTINUED) == ['{"part": 1}\n']


def test_a_fence_inside_another_block_is_content() -> None:
    text = "~~~markdown\n```okf-harvest\n{}\n```\n~~~\n"
    assert harvest.find_blocks(text) == []
