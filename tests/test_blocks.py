from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from okfgit.format.blocks import (
    BlockResult,
    read_block,
    remove_block,
    render_block,
    upsert_block,
)
from okfgit.errors import UsageError, ValidationError
from tests.conftest import examples

B = "<!-- okf:begin id=project -->"
G = "<!-- okf:begin id=global -->"
E = "<!-- okf:end -->"


def block(content: str, scope: str = "project", nl: str = "\n") -> str:
    begin = f"<!-- okf:begin id={scope} -->"
    inner = content.split("\n") if content else []
    return nl.join([begin, *inner, E]) + nl


def lines_of(text: str) -> list[str]:
    return [line.rstrip("\r") for line in text.split("\n")]


# --- render_block -------------------------------------------------------------------------


def test_render_block():
    assert render_block("project", "hello\nworld") == f"{B}\nhello\nworld\n{E}\n"


def test_render_block_content_ends_with_exactly_one_newline():
    assert render_block("project", "x\n\n\n") == f"{B}\nx\n{E}\n"
    assert render_block("project", "x\r\ny\r\n") == f"{B}\nx\ny\n{E}\n"


def test_render_block_empty_content():
    assert render_block("global", "") == f"{G}\n{E}\n"


@pytest.mark.parametrize("bad", [E, B, G, f"a\n{E}\nb"])
def test_render_block_refuses_marker_lines_in_content(bad):
    with pytest.raises(ValidationError):
        render_block("project", bad)


@pytest.mark.parametrize("scope", ["", "a b", "x-->", "-x", "a\nb"])
def test_bad_scope_is_a_usage_error(scope):
    with pytest.raises(UsageError):
        render_block(scope, "x")
    with pytest.raises(UsageError):
        upsert_block("", scope, "x", "F.md")


def test_block_result_is_frozen():
    result = upsert_block(None, "project", "x", "F.md")
    assert isinstance(result, BlockResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = ""  # type: ignore[misc]


# --- upsert: the well-formed cases ------------------------------------------------------


@pytest.mark.parametrize("existing", [None, ""])
def test_upsert_into_nothing_is_just_the_block(existing):
    assert upsert_block(existing, "project", "hi", "F.md") == BlockResult(
        f"{B}\nhi\n{E}\n", True, ()
    )


def test_upsert_appends_after_one_blank_line():
    result = upsert_block("# Notes\nmine\n", "project", "hi", "F.md")
    assert result == BlockResult(f"# Notes\nmine\n\n{B}\nhi\n{E}\n", True, ())


def test_upsert_appends_to_text_without_final_newline():
    result = upsert_block("# Notes\nmine", "project", "hi", "F.md")
    assert result.text == f"# Notes\nmine\n\n{B}\nhi\n{E}\n"


def test_upsert_appends_even_after_a_blank_line_so_removal_restores_the_file():
    original = "mine\n\n"
    added = upsert_block(original, "project", "hi", "F.md").text
    assert added == f"mine\n\n\n{B}\nhi\n{E}\n"
    assert remove_block(added, "project", "F.md").text == original


def test_upsert_replaces_only_the_block():
    existing = f"top\n\n{B}\nold\nlines\n{E}\nbottom\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result == BlockResult(f"top\n\n{B}\nnew\n{E}\nbottom\n", True, ())


def test_upsert_same_content_is_unchanged():
    existing = f"top\n{B}\nsame\n{E}\nbottom\n"
    result = upsert_block(existing, "project", "same\n", "F.md")
    assert result == BlockResult(existing, False, ())


def test_upsert_keeps_a_missing_final_newline_after_the_end_marker():
    existing = f"top\n{B}\nold\n{E}"
    assert upsert_block(existing, "project", "new", "F.md").text == f"top\n{B}\nnew\n{E}"
    same = upsert_block(f"top\n{B}\nnew\n{E}", "project", "new", "F.md")
    assert not same.changed


def test_upsert_crlf_file_gets_crlf_block():
    existing = "# Title\r\nmine\r\n"
    result = upsert_block(existing, "project", "a\nb", "F.md")
    assert result.text == f"# Title\r\nmine\r\n\r\n{B}\r\na\r\nb\r\n{E}\r\n"
    again = upsert_block(result.text, "project", "a\nb", "F.md")
    assert again == BlockResult(result.text, False, ())


def test_upsert_crlf_replace_in_place():
    existing = f"x\r\n{B}\r\nold\r\n{E}\r\ny\r\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result.text == f"x\r\n{B}\r\nnew\r\n{E}\r\ny\r\n"


def test_upsert_leaves_other_scopes_alone():
    existing = f"{G}\nglobal stuff\n{E}\nmine\n{B}\nold\n{E}\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result == BlockResult(f"{G}\nglobal stuff\n{E}\nmine\n{B}\nnew\n{E}\n", True, ())
    result = upsert_block(result.text, "global", "g2", "F.md")
    assert result.text == f"{G}\ng2\n{E}\nmine\n{B}\nnew\n{E}\n"


def test_upsert_adds_second_scope_after_first():
    text = upsert_block(None, "global", "g", "F.md").text
    text = upsert_block(text, "project", "p", "F.md").text
    assert text == f"{G}\ng\n{E}\n\n{B}\np\n{E}\n"
    assert read_block(text, "global") == "g\n"
    assert read_block(text, "project") == "p\n"


@pytest.mark.parametrize(
    "lookalike",
    [
        f" {E}",
        f"{E} trailing",
        f"  {B}",
        "<!-- okf:begin id=project-->",
        "<!-- okf:begin  id=project -->",
        "<!-- OKF:END -->",
        f"`{E}`",
    ],
)
def test_lookalike_lines_are_hand_written(lookalike):
    existing = f"a\n{lookalike}\nb\n"
    result = upsert_block(existing, "project", "x", "F.md")
    assert result == BlockResult(f"a\n{lookalike}\nb\n\n{B}\nx\n{E}\n", True, ())


# --- upsert: repairs --------------------------------------------------------------------


def test_orphan_begin_keeps_the_lines_after_it():
    existing = f"h1\n{B}\nh2\nh3\n"
    result = upsert_block(existing, "project", "new", "AGENTS.md")
    assert result.text == f"h1\n{B}\nnew\n{E}\nh2\nh3\n"
    assert len(result.warnings) == 1
    assert "AGENTS.md" in result.warnings[0] and "line 2" in result.warnings[0]
    assert "unclosed" in result.warnings[0]


def test_orphan_begin_at_end_of_file_without_newline():
    result = upsert_block(f"h1\n{B}", "project", "new", "F.md")
    assert result.text == f"h1\n{B}\nnew\n{E}\n"
    assert result.warnings


def test_a_lost_end_marker_before_okfgits_own_text_is_repaired_without_a_copy():
    """The text after the begin is what okfgit would write: it is okfgit's, not a person's."""
    protocol = "## Knowledge\nRead the index first.\nThen open one concept."
    existing = f"# Mine\n\n{B}\n{protocol}\nHand after.\n"
    result = upsert_block(existing, "project", protocol, "CLAUDE.md")
    assert result.text == f"# Mine\n\n{B}\n{protocol}\n{E}\nHand after.\n"
    assert result.text.count("Read the index first.") == 1
    assert "recognised and replaced" in result.warnings[0] and "CLAUDE.md" in result.warnings[0]
    assert upsert_block(result.text, "project", protocol, "CLAUDE.md") == BlockResult(result.text, False, ())


def test_a_lost_end_marker_after_an_older_text_is_found_from_what_okfgit_wrote():
    """The content changed since (a new okfgit version): the file okfgit last wrote (its blob
    OID, checked by the caller) says where the old text ended; hand text stays byte for byte."""
    old = f"# Mine\n\n{B}\nold protocol line 1\nold protocol line 2\n{E}\nHand after.\n  keep  \n"
    damaged = old.replace(f"{E}\n", "")
    result = upsert_block(damaged, "project", "new protocol", "CLAUDE.md", wrote=lambda text: text == old)
    assert result.text == f"# Mine\n\n{B}\nnew protocol\n{E}\nHand after.\n  keep  \n"
    # without knowing what it wrote, okfgit keeps the old lines as a person's
    kept = upsert_block(damaged, "project", "new protocol", "CLAUDE.md", wrote=lambda text: False)
    assert "old protocol line 1" in kept.text and "Hand after." in kept.text


PROTOCOL = "## Knowledge\nRead the index first.\nThen open one concept."


@pytest.mark.parametrize("damaged", [
    f"# Mine\n\n{PROTOCOL}\n{E}\nHand after.\n",  # the begin marker lost
    f"# Mine\n\n<!-- okf:begin id=projcet -->\n{PROTOCOL}\n{E}\nHand after.\n",  # its id mangled
    f"# Mine\n\n{B}\n{PROTOCOL}\n{E}\nHand after.\n{B}\n{PROTOCOL}\n{E}\n",  # pasted twice
    f"# Mine\n\n{PROTOCOL}\n{E}\nHand after.\n{B}\n{PROTOCOL}\n{E}\n",  # a copy that lost its begin
    f"# Mine\n\n{PROTOCOL}\nHand after.\n",  # both markers lost
    f"# Mine\n\n{B}\n{PROTOCOL}\n{E}\nHand after.\n{PROTOCOL}\n",  # pasted again without its markers
], ids=["lost-begin", "mangled-id", "pasted-twice", "copy-lost-begin", "both-lost", "copy-without-markers"])
def test_okfgits_own_text_is_recognised_without_its_markers_and_never_doubled(damaged):
    result = upsert_block(damaged, "project", PROTOCOL, "AGENTS.md")
    assert result.text == f"# Mine\n\n{B}\n{PROTOCOL}\n{E}\nHand after.\n"
    assert result.text.count("Read the index first.") == 1 and result.warnings
    assert all("AGENTS.md" in w for w in result.warnings)
    assert upsert_block(result.text, "project", PROTOCOL, "AGENTS.md") == BlockResult(result.text, False, ())


def test_an_older_text_okfgit_wrote_is_recognised_too_and_hand_text_kept():
    old = "old protocol line 1\nold protocol line 2"
    pasted = f"# Mine\n{B}\n{old}\n{E}\nHand.\n{B}\n{old}\n{E}\n"
    assert upsert_block(pasted, "project", "new", "F.md").text == f"# Mine\n{B}\nnew\n{E}\nHand.\n"
    written = f"# Mine\n{B}\n{old}\n{E}\nHand.\n"
    lost_begin = written.replace(f"{B}\n", "")
    assert upsert_block(lost_begin, "project", "new", "F.md", known=(old,)).text == \
        f"# Mine\n{B}\nnew\n{E}\nHand.\n"
    assert upsert_block(lost_begin, "project", "new", "F.md", wrote=lambda text: text == written).text == \
        f"# Mine\n{B}\nnew\n{E}\nHand.\n"
    # not okfgit's text: a person's lines before a stray end stay, and the block is appended
    theirs = upsert_block(lost_begin, "project", "new", "F.md")
    assert "old protocol line 1\nold protocol line 2\nHand.\n" in theirs.text


def test_another_scopes_block_with_the_same_text_is_not_taken():
    existing = block(PROTOCOL, scope="global")
    result = upsert_block(existing, "project", PROTOCOL, "F.md")
    assert result.text == existing + "\n" + block(PROTOCOL) and result.warnings == ()


def test_end_without_begin():
    result = upsert_block(f"h1\n{E}\nh2\n", "project", "new", "CLAUDE.md")
    assert result.text == f"h1\nh2\n\n{B}\nnew\n{E}\n"
    assert len(result.warnings) == 1
    assert "CLAUDE.md" in result.warnings[0] and "stray" in result.warnings[0]


def test_only_a_stray_end():
    result = upsert_block(f"{E}\n", "project", "new", "F.md")
    assert result.text == f"{B}\nnew\n{E}\n"
    assert result.warnings


def test_stray_end_beside_a_good_block():
    existing = f"{B}\nold\n{E}\nmine\n{E}\nmore\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result.text == f"{B}\nnew\n{E}\nmine\nmore\n"
    assert len(result.warnings) == 1 and "line 5" in result.warnings[0]


def test_duplicate_blocks_become_one_and_keep_the_second_ones_text():
    existing = f"top\n{B}\nold1\n{E}\nmid\n{B}\nold2\n{E}\nbottom\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result.text == f"top\n{B}\nnew\n{E}\nmid\nold2\nbottom\n"
    assert len(result.warnings) == 1
    assert "F.md" in result.warnings[0] and "duplicate" in result.warnings[0]


def test_three_duplicates():
    existing = block("a") + block("b") + block("c")
    result = upsert_block(existing, "project", "new", "F.md")
    assert result.text == f"{B}\nnew\n{E}\nb\nc\n"
    assert len(result.warnings) == 2


def test_nested_begins():
    existing = f"top\n{B}\nhand\n{B}\nold\n{E}\nbottom\n"
    result = upsert_block(existing, "project", "new", "F.md")
    # one block where the first begin was; the hand-written line stays
    assert result.text == f"top\n{B}\nnew\n{E}\nhand\nbottom\n"
    assert len(result.warnings) == 1 and "nested" in result.warnings[0]


def test_nested_begin_keeps_the_outer_text_and_replaces_only_the_inner_block():
    # Which text is okfgit's: only the content of the innermost well-formed block (``mine``
    # below sits between a begin and an end for the scope under every reading of the
    # markers); the text between the outer unmatched begin and the inner begin (``old``)
    # may be a person's, so it is kept. The warning says exactly that, with line numbers.
    existing = f"{B}\nold\n{B}\nmine\n{E}\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result.text == f"{B}\nnew\n{E}\nold\n"
    assert result.warnings == (
        f"F.md: line 1: removed an unclosed '{B}' (nested: another begin for id=project at line 3 comes "
        "before any end); the text between them was kept as hand-written, and the block at lines 3-5 was "
        "taken as okfgit's and its content replaced",
    )
    assert upsert_block(result.text, "project", "new", "F.md") == BlockResult(result.text, False, ())


def test_two_orphans_and_no_end():
    existing = f"{B}\na\n{B}\nb\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result.text == f"{B}\nnew\n{E}\na\nb\n"
    assert len(result.warnings) == 2


def test_our_orphan_before_another_scopes_block():
    existing = f"{B}\nmine\n{G}\ng\n{E}\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result.text == f"{B}\nnew\n{E}\nmine\n{G}\ng\n{E}\n"
    assert read_block(result.text, "global") == "g\n"


def test_another_scopes_orphan_is_left_alone():
    existing = f"{G}\nmine\n{B}\nold\n{E}\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result == BlockResult(f"{G}\nmine\n{B}\nnew\n{E}\n", True, ())


def test_repair_is_stable():
    existing = f"x\n{E}\n{B}\na\n{B}\nb\n{E}\n{B}\nc\n"
    first = upsert_block(existing, "project", "new", "F.md")
    assert first.warnings
    second = upsert_block(first.text, "project", "new", "F.md")
    assert second == BlockResult(first.text, False, ())


def test_repair_in_crlf_file():
    existing = f"h1\r\n{B}\r\nh2\r\n"
    result = upsert_block(existing, "project", "new", "F.md")
    assert result.text == f"h1\r\n{B}\r\nnew\r\n{E}\r\nh2\r\n"


# --- read_block -------------------------------------------------------------------------


def test_read_block():
    assert read_block(f"a\n{B}\nx\ny\n{E}\nb\n", "project") == "x\ny\n"
    assert read_block(f"{B}\n{E}\n", "project") == ""
    assert read_block(f"{B}\r\nx\r\n{E}\r\n", "project") == "x\n"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain\n",
        f"{G}\nx\n{E}\n",
        f"{B}\nx\n",
        f"{B}\nx\n{E}\n{B}\ny\n{E}\n",
        f"{B}\n{B}\nx\n{E}\n",
    ],
)
def test_read_block_none(text):
    assert read_block(text, "project") is None


def test_read_block_round_trips_render():
    content = "line one\n\n  indented\n"
    text = upsert_block("mine\n", "project", content, "F.md").text
    assert read_block(text, "project") == content


# --- remove_block -----------------------------------------------------------------------


def test_remove_restores_appended_file():
    original = "# Notes\nmine\n"
    added = upsert_block(original, "project", "hi", "F.md").text
    assert remove_block(added, "project", "F.md") == BlockResult(original, True, ())


def test_remove_block_in_the_middle_keeps_blank_lines():
    existing = f"top\n\n{B}\nx\n{E}\n\nbottom\n"
    assert remove_block(existing, "project", "F.md").text == "top\n\n\nbottom\n"


def test_remove_only_block():
    assert remove_block(f"{B}\nx\n{E}\n", "project", "F.md").text == ""


def test_remove_absent_block_is_unchanged():
    existing = f"mine\n{G}\ng\n{E}\n"
    assert remove_block(existing, "project", "F.md") == BlockResult(existing, False, ())


def test_remove_leaves_other_scope():
    text = upsert_block(None, "global", "g", "F.md").text
    text = upsert_block(text, "project", "p", "F.md").text
    assert remove_block(text, "project", "F.md").text == f"{G}\ng\n{E}\n"


def test_remove_broken_markers_keeps_text():
    existing = f"top\n{B}\nhand\n{E}\n{E}\n{B}\nafter\n"
    result = remove_block(existing, "project", "F.md")
    assert result.text == "top\nafter\n"
    assert len(result.warnings) == 2 and all("F.md" in w for w in result.warnings)


def test_remove_crlf():
    original = "a\r\nb\r\n"
    added = upsert_block(original, "project", "x", "F.md").text
    assert remove_block(added, "project", "F.md").text == original


# --- properties -------------------------------------------------------------------------

MARKERS = {B, G, E, "<!-- okf:begin id=job -->"}
LOOKALIKES = [f" {E}", f"{B} ", "<!-- okf:begin id=project-->", "", "  ", "#", "- [x](y.md)"]

hand_line = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
        max_size=30,
    ),
    st.sampled_from(LOOKALIKES),
).filter(lambda line: line not in MARKERS)
hand_lines = st.lists(hand_line, max_size=12)
content = st.lists(hand_line, max_size=6).map("\n".join)
newline = st.sampled_from(["\n", "\r\n"])


def holds_a_copy(lines: list[str], content: str) -> bool:
    """``lines`` hold ``content`` (three lines of text or more) line for line: okfgit's text
    without its markers, which is replaced, not kept as a person's."""
    want = content.split("\n")
    if sum(1 for line in want if line.strip()) < 3:
        return False
    return any(lines[at:at + len(want)] == want for at in range(len(lines)))


def is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


def count(text: str, marker: str) -> int:
    return lines_of(text).count(marker)


@settings(max_examples=examples(300))
@given(above=hand_lines, below=hand_lines, old=content, new=content, nl=newline)
def test_property_replace_keeps_everything_outside(above, below, old, new, nl):
    assume(not holds_a_copy(above, new) and not holds_a_copy(below, new))
    head = "".join(line + nl for line in above)
    tail = "".join(line + nl for line in below)
    existing = head + block(old, nl=nl) + tail
    first = upsert_block(existing, "project", new, "F.md")
    assert first.warnings == ()
    assert first.text == head + render_block("project", new).replace("\n", nl) + tail
    second = upsert_block(first.text, "project", new, "F.md")
    assert second == BlockResult(first.text, False, ())
    assert count(second.text, B) == 1 and count(second.text, E) == 1


@settings(max_examples=examples(300))
@given(lines=hand_lines, final_newline=st.booleans(), new=content, nl=newline)
def test_property_append_is_idempotent_and_keeps_hand_lines(lines, final_newline, new, nl):
    assume(not holds_a_copy(lines, new))
    existing = nl.join(lines) + (nl if final_newline and lines else "")
    first = upsert_block(existing, "project", new, "F.md")
    assert first.warnings == ()
    assert first.text.startswith(existing)
    second = upsert_block(first.text, "project", new, "F.md")
    assert second == BlockResult(first.text, False, ())
    assert count(second.text, B) == 1 and count(second.text, E) == 1
    assert is_subsequence(lines, lines_of(second.text))
    if existing.endswith(nl) or not existing:
        assert remove_block(second.text, "project", "F.md").text == existing


def expected_survivors(lines: list[str], new: str = "") -> list[str]:
    """An independent model of the repair: every non-marker line survives but okfgit's own
    text (``replaced_block``)."""
    owned = replaced_block(lines, new)
    return [line for i, line in enumerate(lines) if line not in MARKERS and i not in owned]


@settings(max_examples=examples(500))
@given(
    lines=st.lists(st.one_of(hand_line, st.sampled_from(sorted(MARKERS))), max_size=20),
    new=content,
)
def test_property_broken_markers_are_repaired_without_losing_hand_lines(lines, new):
    assume(not holds_a_copy(lines, new))
    existing = "".join(line + "\n" for line in lines)
    first = upsert_block(existing, "project", new, "F.md")
    out = lines_of(first.text)
    assert count(first.text, B) == 1
    rendered = render_block("project", new)
    assert read_block(first.text, "project") == rendered[len(B) + 1 : -len(E) - 1]
    # stray ends are gone; every remaining end closes exactly one begin
    assert out.count(E) <= sum(out.count(m) for m in MARKERS - {E})
    assert is_subsequence(expected_survivors(lines, new), out)
    block_lines = lines_of(render_block("project", new))[:-1]
    start = out.index(B)
    assert out[start : start + len(block_lines)] == block_lines
    second = upsert_block(first.text, "project", new, "F.md")
    assert second == BlockResult(first.text, False, ())


@settings(max_examples=examples(200))
@given(above=hand_lines, middle=hand_lines, below=hand_lines, g=content, p=content, new=content)
def test_property_other_scope_block_is_untouched(above, middle, below, g, p, new):
    assume(not any(holds_a_copy(part, new) for part in (above, middle, below)))
    glob = block(g, scope="global")
    existing = (
        "".join(x + "\n" for x in above)
        + glob
        + "".join(x + "\n" for x in middle)
        + block(p)
        + "".join(x + "\n" for x in below)
    )
    result = upsert_block(existing, "project", new, "F.md")
    assert glob in result.text
    assert read_block(result.text, "global") == read_block(existing, "global")
    removed = remove_block(result.text, "project", "F.md")
    assert glob in removed.text and count(removed.text, B) == 0


def replaced_block(lines: list[str], new: str = "") -> set[int]:
    """The lines okfgit replaces or removes, by the rule alone (markers pair in order: a begin
    closes at the next marker when that is an end): the first well-formed block for
    id=project, and every other text that is okfgit's own (the content it writes, line for
    line): in another well-formed project block (or the first one's text again), right after
    a project begin that lost its end (up to the next marker), right before an end that closes
    nothing (from the previous marker on)."""
    body = new.replace("\r\n", "\n").rstrip("\r\n")
    want = body.split("\n") if body else []
    marks = [k for k, line in enumerate(lines) if line in MARKERS]
    owned: set[int] = set()
    first: list[str] | None = None
    for n, i in enumerate(marks):
        nxt = marks[n + 1] if n + 1 < len(marks) else len(lines)
        prev = marks[n - 1] if n else -1
        if lines[i] == B and nxt < len(lines) and lines[nxt] == E:  # a well-formed project block
            inner = lines[i + 1:nxt]
            if first is None or inner == first or (want and inner == want):
                owned.update(range(i, nxt + 1))
                first = inner if first is None else first
        elif lines[i] == B and want and lines[i + 1:i + 1 + len(want)] == want and i + len(want) < nxt:
            owned.update(range(i, i + 1 + len(want)))  # a begin that lost its end
        elif lines[i] == E and (prev < 0 or lines[prev] == E) and want and i - len(want) > prev \
                and lines[i - len(want):i] == want:
            owned.update(range(i - len(want), i + 1))  # an end that lost its begin
    return owned


def without_trailing_blanks(lines: list[str]) -> list[str]:
    while lines and lines[-1] == "":
        lines = lines[:-1]
    return lines


@settings(max_examples=examples(500))
@given(
    lines=st.lists(st.one_of(hand_line, st.sampled_from(sorted(MARKERS))), max_size=20),
    new=content,
    nl=newline,
)
def test_property_no_line_outside_the_replaced_block_is_ever_lost(lines, new, nl):
    assume(not holds_a_copy(lines, new))
    existing = "".join(line + nl for line in lines)
    result = upsert_block(existing, "project", new, "F.md")
    out = lines_of(result.text)
    start = out.index(B)
    fresh = lines_of(render_block("project", new))[:-1]
    assert out[start : start + len(fresh)] == fresh
    rest = out[:start] + out[start + len(fresh) :]
    replaced = replaced_block(lines, new)
    outside = [line for i, line in enumerate(lines) if i not in replaced and line not in MARKERS]
    # Exactly the non-marker lines outside the replaced block, in order: none lost, none
    # added (but the one blank line that separates an appended block).
    assert without_trailing_blanks([line for line in rest if line not in MARKERS]) == \
        without_trailing_blanks(outside)
