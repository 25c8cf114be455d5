from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okfgit.format import concept as okf
from okfgit.errors import IntegrityError, ValidationError
from tests.conftest import examples


def test_body_bytes_kept_exactly_with_bom_and_crlf() -> None:
    data = b"\xef\xbb\xbf---\r\ntype: Note\r\ntitle: T\r\n---\r\n\r\n  body  \r\n\r\n"
    parsed = okf.split(data, "x.md")
    assert parsed.bom and parsed.newline == "\r\n"
    assert parsed.meta == {"type": "Note", "title": "T"}
    assert parsed.body == b"\r\n  body  \r\n\r\n"
    edited = okf.set_keys(data, "x.md", {"okf_id": "abc"})
    assert edited == b"\xef\xbb\xbf---\r\ntype: Note\r\ntitle: T\r\nokf_id: abc\r\n---\r\n\r\n  body  \r\n\r\n"


def test_leading_horizontal_rule_is_not_frontmatter() -> None:
    data = b"---\n# Heading\n\nSome text.\n\n---\n\nMore.\n"
    parsed = okf.split(data, "x.md")
    assert not parsed.has_frontmatter
    assert parsed.body == data


def test_keys_keep_their_order_and_timestamps_stay_strings() -> None:
    data = b"---\nzeta: 1\ntype: T\ngenerated: {by: human:a, at: 2026-06-20T22:53:05Z}\nstale_after: 2026-09-23\n---\nbody\n"
    meta = okf.split(data, "x.md").meta
    assert list(meta) == ["zeta", "type", "generated", "stale_after"]
    assert meta["generated"]["at"] == "2026-06-20T22:53:05Z"
    assert meta["stale_after"] == "2026-09-23"


@pytest.mark.parametrize("data, message", [
    (b"---\ntype: [unclosed\n---\n", "invalid YAML frontmatter"),
    (b"---\ntype: !!python/object/apply:os.system ['true']\n---\n", "invalid YAML frontmatter"),
    (b"---\ntype: caf\xe9\n---\n", "not UTF-8"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "binary file"),
])
def test_bad_input_names_the_file(data: bytes, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        okf.split(data, "notes/bad.md")
    assert str(err.value).startswith("notes/bad.md: ")
    assert message in str(err.value)


def test_serialize_is_canonical_and_deterministic() -> None:
    meta = {"okf_id": "i", "custom": 1, "type": "Decision", "title": "T", "tags": ["a-b"], "scope": "project"}
    out = okf.serialize(meta, "\n# T\n")
    assert out == b"---\ntype: Decision\ntitle: T\ntags:\n- a-b\nscope: project\nokf_id: i\ncustom: 1\n---\n\n# T\n"


def test_set_keys_replaces_only_that_key() -> None:
    data = b"---\ntype: Note\nscope: job\ntags:\n- a\n- b\ndescription: folded\n  over lines\n---\nbody\n"
    out = okf.set_keys(data, "x.md", {"scope": "project"})
    assert out == b"---\ntype: Note\nscope: project\ntags:\n- a\n- b\ndescription: folded\n  over lines\n---\nbody\n"
    out = okf.set_keys(data, "x.md", {"tags": ["c"]})
    assert okf.split(out, "x").meta["tags"] == ["c"]
    assert b"description: folded\n  over lines\n" in out


def test_set_keys_adds_frontmatter_to_a_plain_note() -> None:
    out = okf.set_keys(b"# Title\n\nText.\n", "n.md", {"type": "Note"})
    assert out == b"---\ntype: Note\n---\n# Title\n\nText.\n"


def test_set_keys_fails_closed_when_result_would_differ() -> None:
    # an anchor used later cannot be dropped line-wise without changing another key
    data = b"---\ntype: &t Note\nkind: *t\n---\n"
    with pytest.raises((IntegrityError, ValidationError)):
        okf.set_keys(data, "x.md", {"type": "Other"})


@pytest.mark.parametrize("slug", ["../x", "a/b", "", "index", "log", "UPPER", "with space", "x\x00"])
def test_bad_slugs_are_refused(slug: str) -> None:
    with pytest.raises(ValidationError):
        okf.check_slug(slug)


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=80)


@settings(max_examples=examples(80), deadline=None)
@given(st.dictionaries(st.from_regex(r"\A[a-z_]{1,10}\Z", fullmatch=True), _text, max_size=5), _text,
       st.from_regex(r"\A[a-z_]{1,10}\Z", fullmatch=True), _text)
def test_set_keys_preserves_every_other_key_and_the_body(meta: dict[str, str], body: str, key: str, value: str) -> None:
    data = okf.serialize({"type": "Note", **meta}, body)
    out = okf.set_keys(data, "x.md", {key: value})
    parsed = okf.split(out, "x.md")
    expected = {"type": "Note", **meta}
    expected[key] = value
    assert parsed.meta == expected
    assert parsed.body == body.encode()


def test_set_keys_appends_absent_keys_in_order_after_the_agents_lines() -> None:
    data = b"\xef\xbb\xbf---\r\nname: x\r\nmetadata:\r\n  type: project\r\n---\r\nbody\r\n"
    out = okf.set_keys(data, "x.md", {"type": "project", "okf_id": "abc", "generated": {"by": "a/b", "at": "now"}})
    assert out == (b"\xef\xbb\xbf---\r\nname: x\r\nmetadata:\r\n  type: project\r\n"
                   b"type: project\r\nokf_id: abc\r\ngenerated:\r\n  by: a/b\r\n  at: now\r\n---\r\nbody\r\n")
    unterminated = b"---\nname: x\n---\nbody\n"
    assert okf.set_keys(unterminated, "x.md", {"title": "X", "scope": "project"}) == \
        b"---\nname: x\ntitle: X\nscope: project\n---\nbody\n"


def test_set_keys_rewrites_a_present_key_in_place_and_appends_the_rest() -> None:
    data = b"---\nname: x\n'scope': job\ndescription: d\n---\nbody\n"
    out = okf.set_keys(data, "x.md", {"title": "X", "scope": "project", "okf_id": "abc"})
    assert out == b"---\nname: x\nscope: project\ndescription: d\ntitle: X\nokf_id: abc\n---\nbody\n"


@settings(max_examples=examples(150), deadline=None)
@given(st.dictionaries(st.from_regex(r"\A[a-z_]{1,8}\Z", fullmatch=True), _text, max_size=4), _text,
       st.dictionaries(st.from_regex(r"\A[a-z_]{1,8}\Z", fullmatch=True), _text, min_size=1, max_size=5))
def test_set_keys_at_once_writes_what_one_key_at_a_time_writes(meta: dict[str, str], body: str,
                                                                updates: dict[str, str]) -> None:
    """Several keys in one call (absent ones appended in one go) give the bytes that setting
    them one by one gives, whether each key is already there or not."""
    data = okf.serialize({"type": "Note", **meta}, body)
    once = okf.set_keys(data, "x.md", updates)
    stepwise = data
    for key, value in updates.items():
        stepwise = okf.set_keys(stepwise, "x.md", {key: value})
    assert once == stepwise


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.sampled_from(["---", "----", "--- ", "---\t", " ---", "a: b", "x", "\n", "\r\n", "\r", "-"]),
                max_size=12).map("".join))
def test_the_closing_fence_is_the_first_line_of_dashes_after_the_opening(rest: str) -> None:
    """``split`` finds the closing fence by a plain search for lines that start "---": the
    same line a multi-line regex search finds."""
    import re
    data = ("---\n" + rest).encode()
    found = okf._closing_fence(data, 4)
    expected = re.compile(rb"^---[ \t]*(?:\r?\n|\Z)", re.MULTILINE).search(data, 4)
    assert (found.span() if found else None) == (expected.span() if expected else None)


def _key_lines_line_by_line(data: bytes, keys: tuple[str, ...]) -> dict[str, int]:
    """key_lines as first written, a match per line of the frontmatter: the reference."""
    lines = data.split(b"\n")
    if not lines or lines[0].rstrip(b"\r") != b"---":
        return {}
    out: dict[str, int] = {}
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip(b"\r")
        if line in (b"---", b"..."):
            break
        match = re.match(rb"^([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:", line)
        if match:
            key = match.group(1).decode("ascii")
            if key in keys and key not in out:
                out[key] = number
    return out


_KEY_LINE_PARTS = st.sampled_from([
    "---", "...", "--- ", "----", "---\r", "...\r\r", "name: a", "name : a", "name\t: a", "names: b", "name.x: c",
    "name-y: d", " name: e", "description: f", "type: g", "type:", "tags: [a]", "  - x", "\r", "", "title: t\r",
    "description: x\r", "a: |", "  name: inside", "nametype: z", "type : w", "type\r: v", "name", "type ",
])


@settings(max_examples=examples(600), deadline=None)
@given(first=st.sampled_from(["---", "---\r", "--- ", "---\r\r", "", "x"]),
       rest=st.lists(_KEY_LINE_PARTS, max_size=14), end=st.sampled_from(["", "\n", "\r\n"]))
def test_key_lines_is_the_line_by_line_reading(first: str, rest: list[str], end: str) -> None:
    data = ("\n".join([first, *rest]) + end).encode()
    for keys in (okf.SUMMARY_KEYS, ("type",), ("name", "names", "name.x")):
        found = okf.key_lines(data, keys)
        assert found == _key_lines_line_by_line(data, keys), data
        assert list(found.values()) == sorted(found.values())
