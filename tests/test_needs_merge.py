"""A needs-merge sibling holds every variant of its concept (format/needs_merge.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from okfgit.format import needs_merge
from tests.conftest import examples

FIRST = b"---\ntype: Note\ntitle: Editor\n---\nUse ```vim``` [modal](other.md).\n"
SECOND = b"---\ntype: Note\ntitle: Editor\n---\nUse helix.\n"
THIRD = b"---\ntype: Note\ntitle: Editor\n---\nUse kakoune."  # no final newline


def test_a_second_variant_is_appended_whole_and_the_first_kept_byte_for_byte() -> None:
    sibling = needs_merge.add(SECOND, FIRST, "global remote at 0123456789ab")
    assert sibling == SECOND + (b"\n<!-- okf:needs-merge variant: global remote at 0123456789ab -->\n"
                                b"````markdown\n" + FIRST + b"````\n")  # a fence longer than any ``` inside
    assert needs_merge.variants(sibling) == [SECOND, FIRST]
    assert needs_merge.count(sibling) == 2 and needs_merge.holds(sibling, FIRST)
    assert needs_merge.add(sibling, FIRST, "again") == sibling  # held: nothing to add


def test_two_siblings_merge_into_their_union_and_converge() -> None:
    here = needs_merge.add(FIRST, SECOND, "a")
    there = needs_merge.add(FIRST, THIRD, "b")
    merged = needs_merge.add(here, there, "c")
    assert needs_merge.variants(merged) == [FIRST, SECOND, THIRD + b"\n"]
    assert needs_merge.holds(merged, here) and needs_merge.holds(merged, there)
    assert needs_merge.add(merged, needs_merge.add(there, here, "d"), "e") == merged


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\r", b"")), min_size=1, max_size=5))
def test_every_variant_added_is_held_and_read_back(parts: list[bytes]) -> None:
    sibling = parts[0]
    for part in parts[1:]:
        sibling = needs_merge.add(sibling, part, "x")
    for part in parts:
        assert needs_merge.holds(sibling, part)
    assert needs_merge.count(sibling) <= len(parts)
