"""yamlfast, the fast path that reads plain frontmatter without PyYAML, is held to okfgit's
PyYAML loader (``concept._pyyaml``): it gives that loader's mapping, or declines."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from okfgit.errors import ValidationError
from okfgit.format import concept as okf
from okfgit.format import yamlfast
from tests.conftest import FIXTURES, examples


def pyyaml(text: str) -> object:
    """What okfgit's PyYAML loader reads: the general path, with every check it makes."""
    return okf._pyyaml(text, "x.md")


def agrees(text: str) -> bool:
    """The fast path either declines or gives exactly PyYAML's mapping, key order included."""
    fast = yamlfast.parse(text)
    if fast is None:
        return True
    slow = pyyaml(text)
    assert fast == slow and list(fast) == list(slow), (text, fast, slow)
    assert [type(v) for v in fast.values()] == [type(v) for v in slow.values()]
    return True


def test_typical_okfgit_frontmatter_takes_the_fast_path() -> None:
    text = ("type: Decision\ntitle: Use PostgreSQL for the ledger's store\ndescription: It's one sentence, really.\n"
            "tags:\n- storage\n- postgres\nscope: project\nokf_id: 7f5e0002-790f-4c15-bc49-f8a9660e3c1b\n"
            "okf_source: authored\ngenerated:\n  by: human:dana\n  at: '2025-11-02T09:10:00Z'\n"
            "stale_after: 2026-01-01\nflow: [a, b-c, d e]\nempty:\nversion: \"0.2\"\n")
    fast = yamlfast.parse(text)
    assert fast is not None and fast == pyyaml(text)
    assert fast["stale_after"] == "2026-01-01" and fast["empty"] is None


def test_every_ascii_character_is_judged_as_pyyaml_judges_it() -> None:
    """Control characters (tab, CR, DEL, ...) leave the fast path; the rest agree with PyYAML."""
    for code in range(128):
        for text in (f"a: b{chr(code)}c\n", f"a: {chr(code)}\n", f"k{chr(code)}: v\n"):
            if code < 0x20 and code != 0x0A or code == 0x7F:
                assert yamlfast.parse(text) is None, repr(text)
            else:
                assert agrees(text)


def test_a_line_seen_before_gives_the_same_value_and_a_fresh_list() -> None:
    """Short top-level lines are remembered (they repeat from file to file); what they give
    is PyYAML's value, and a list is the caller's own."""
    text = "type: Note\ntags: [a, b]\nscope: project\n"
    first = yamlfast.parse(text)
    assert first is not None
    first["tags"].append("c")
    again = yamlfast.parse(text)
    assert again == pyyaml(text) == {"type": "Note", "tags": ["a", "b"], "scope": "project"}
    assert yamlfast.parse("list:\n- x\ntype: Note\n") == {"list": ["x"], "type": "Note"}
    assert yamlfast.parse("type: Note\n- x\n") is None  # a remembered line does not hide what follows


@pytest.mark.parametrize("text", [
    "n: 3\n", "b: yes\n", "o: on\n", "z: ~\n", "x: null\n", "f: 1.5\n", "e: =\n", "m: <<\n", "k: 0x1f\n",
    "yes: key\n", "a: b # comment\n", "a: &anchor x\n", "a: *ref\n", "a: !!str 3\n", "a: |\n  block\n",
    "a: >\n  folded\n", "a: {b: c}\n", "a: 'it''s' x\n", "a: \"esc\\n\"\n", "a: b\n  continued\n",
    "list:\n- a: 1\n", "list:\n  - a\n - b\n", "a:\tb\n", "a: b\r\n", "a: [1, 2]\n", "a: [x, 'y']\n",
    "- a\n", "a: b:\n", "a:b\n", "'q': v\n", "a: -b\n", "a: @x\n", "a: %x\n", "a: `x\n", "\n\n",
    "a: \x07\n", "a: [b\n", "n:\n  k:\n    deep: 1\n", "a: 'x'y'\n",
])
def test_everything_else_is_left_to_pyyaml(text: str) -> None:
    assert yamlfast.parse(text) is None


def test_every_real_and_fixture_file_agrees() -> None:
    roots = [FIXTURES, Path(__file__).resolve().parent.parent / ".okf"]
    seen = 0
    for root in roots:
        for path in sorted(root.rglob("*.md")):
            data = path.read_bytes()
            found = okf.fences(data)
            if found is not None:
                try:
                    agrees(data[found.start:found.end].decode("utf-8"))
                except (UnicodeDecodeError, ValidationError):
                    continue
                seen += 1
    assert seen > 10


_atoms = st.sampled_from([
    "a", "b c", "x-y", "Title", "yes", "No", "on", "null", "~", "3", "0.5", "1e3", "0x10", "=", "<<", "-", "- a",
    ":", "a:b", "a: b", "#", " #x", "c#", "'", "''", '"', "[", "]", "{", "}", ",", "&a", "*a", "!t", "|", ">",
    "%", "@", "`", "2025-11-30", "12:30", "human:x", "é", "↔", " ", "  ", ".", "..", "?", "?x", "\\",
])
_scalar = st.lists(_atoms, min_size=1, max_size=4).map("".join)
_key = st.sampled_from(["type", "title", "tags", "a", "b_c", "x-y", "on", "yes", "1", "null", "k"])
_value = st.one_of(
    _scalar,
    _scalar.map(lambda s: f"'{s}'"),
    _scalar.map(lambda s: f'"{s}"'),
    st.lists(_scalar, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
    st.lists(_scalar, min_size=1, max_size=3).map(lambda xs: "\n" + "".join(f"- {x}\n" for x in xs).rstrip("\n")),
    st.lists(_scalar, min_size=1, max_size=3).map(lambda xs: "\n" + "".join(f"  - {x}\n" for x in xs).rstrip("\n")),
    st.lists(st.tuples(_key, _scalar), min_size=1, max_size=3).map(
        lambda kv: "\n" + "".join(f"  {k}: {v}\n" for k, v in kv).rstrip("\n")),
    st.just(""),
)
_document = st.lists(st.tuples(_key, _value), min_size=1, max_size=6).map(
    lambda kv: "".join(f"{k}:{'' if v.startswith(chr(10)) or not v else ' '}{v}\n" for k, v in kv))


@settings(max_examples=examples(600), deadline=None)
@given(_document)
def test_fast_path_matches_pyyaml_on_generated_frontmatter(text: str) -> None:
    try:
        pyyaml(text)
    except ValidationError:
        assert yamlfast.parse(text) is None, f"the fast path accepted what the loader refuses: {text!r}"
        return
    assert agrees(text)


def test_the_fast_paths_resolvers_are_the_loaders() -> None:
    """The table yamlfast judges plain scalars by (so a run that reads only the plain subset
    never imports PyYAML) is the loader's own: PyYAML's, less the timestamp resolver (dates
    stay the strings the author wrote). Same first characters, same patterns and flags, in
    the same order."""
    theirs = okf._yaml().loader.yaml_implicit_resolvers
    assert okf.TIMESTAMP in {tag for resolvers in yaml.SafeLoader.yaml_implicit_resolvers.values()
                             for tag, _ in resolvers}
    theirs = {first: [(p.pattern, p.flags) for tag, p in resolvers] for first, resolvers in theirs.items() if resolvers}
    ours = {first: [(p.pattern, p.flags) for p in patterns] for first, patterns in yamlfast._resolvers().items()}
    assert ours == theirs
