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


# -- where frontmatter starts and ends: one rule (okf.fences), every reader ------------------

FENCE_CASES = [
    # (file, YAML text between the fences or None when there is no frontmatter, body)
    (b"---\ntype: Note\n---\nbody\n", b"type: Note\n", b"body\n"),
    (b"\xef\xbb\xbf---\ntype: Note\n---\nbody\n", b"type: Note\n", b"body\n"),  # a BOM first
    (b"---\r\ntype: Note\r\n---\r\nbody\r\n", b"type: Note\r\n", b"body\r\n"),  # CRLF
    (b"--- \ntype: Note\n---\t \nbody\n", b"type: Note\n", b"body\n"),  # spaces, tabs after a fence
    (b"---\ntype: Note\n---", b"type: Note\n", b""),  # the closing fence ends the file
    (b"---\n---\nbody\n", b"", b"body\n"),  # empty: frontmatter without keys
    (b"---\ntype: Note\n...\ndescription: body\n---\n", b"type: Note\n...\ndescription: body\n", b""),
    (b"---\ntype: Note\n----\nx: y\n---\n", b"type: Note\n----\nx: y\n", b""),  # four dashes: no fence
    (b"---\ntype: Note\n ---\n---\n", b"type: Note\n ---\n", b""),  # an indented one neither
    (b"---\ntype: Note\n---x\n", None, None),  # nothing closes it
    (b"---\ntype: Note\n...\nbody\n", None, None),  # YAML's document end is not OKF's fence
    (b"---\rtype: Note\r---\rbody\r", None, None),  # a lone CR does not end a line
    (b" ---\ntype: Note\n---\n", None, None),
    (b"---x\ntype: Note\n---\n", None, None),
    (b"# Title\n---\ntype: Note\n---\n", None, None),
]


@pytest.mark.parametrize("data, yaml_text, body", FENCE_CASES)
def test_where_frontmatter_starts_and_ends(data: bytes, yaml_text: bytes | None, body: bytes | None) -> None:
    found = okf.fences(data)
    if yaml_text is None:
        assert found is None
        return
    assert found is not None and (data[found.start:found.end], data[found.body:]) == (yaml_text, body)


def test_a_closing_fence_with_a_trailing_space_ends_the_frontmatter_for_every_reader() -> None:
    """The case that had three readers disagree: the body's ``description:`` line is body."""
    data = b"---\ntype: Note\nname: n\n--- \ndescription: not a key\n"
    parsed = okf.split(data, "x.md")
    assert parsed.meta == {"type": "Note", "name": "n"} and parsed.body == b"description: not a key\n"
    assert okf.key_lines(data) == {"type": 2, "name": 3}
    moved = okf.keys_first(data, ("name", "description"), 2)
    assert moved == b"---\nname: n\ntype: Note\n--- \ndescription: not a key\n"


def _reference_key_lines(data: bytes, keys: tuple[str, ...]) -> dict[str, int]:
    """Each line of the frontmatter as ``fences`` bounds it, read one by one."""
    found = okf.fences(data)
    out: dict[str, int] = {}
    if found is None:
        return out
    first = data.count(b"\n", 0, found.start) + 1
    for number, line in enumerate(data[found.start:found.end].split(b"\n"), start=first):
        match = re.match(rb"^(['\"]?)([^'\"]+?)\1[ \t]*:", line)
        if match and match.group(2).decode() in keys:
            out.setdefault(match.group(2).decode(), number)
    return out


_LINES = st.sampled_from([
    "---", "--- ", "---\t", "----", " ---", "...", "---\r", "name: a", "'name': a", "\"type\" : b", "names: b",
    "name.x: c", " name: e", "description: f", "type:", "  - x", "\r", "", "title: t\r", "a: |", "  name: in",
    "nametype: z", "type\r: v", "name", "# type: comment", "\ufeff---",
])


@settings(max_examples=examples(600), deadline=None)
@given(bom=st.booleans(), first=st.sampled_from(["---", "---\r", "--- ", "---\r\r", "", "x"]),
       rest=st.lists(_LINES, max_size=14), end=st.sampled_from(["", "\n", "\r\n"]))
def test_every_reader_takes_the_frontmatter_where_fences_says_it_is(bom: bool, first: str, rest: list[str],
                                                                    end: str) -> None:
    data = (okf.BOM if bom else b"") + ("\n".join([first, *rest]) + end).encode()
    found = okf.fences(data)
    for keys in (okf.SUMMARY_KEYS, ("type",), ("name", "names", "name.x")):
        lines = okf.key_lines(data, keys)
        assert lines == _reference_key_lines(data, keys), data
        assert list(lines.values()) == sorted(lines.values())
    try:
        parsed = okf.split(data, "x.md")
    except ValidationError:
        return  # not YAML okfgit reads: no reader goes on
    for keys in (okf.SUMMARY_KEYS, ("type",)):  # a card asks with the split it made: the same lines
        assert okf.key_lines(data, keys, parsed=parsed) == okf.key_lines(data, keys)
    if parsed.has_frontmatter:
        assert found is not None and (parsed.fm_start, parsed.fm_end) == (found.start, found.end)
        assert parsed.body == data[found.body:]
    else:
        assert parsed.body == data[3 if bom else 0:]


