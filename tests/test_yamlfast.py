from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from okfgit.format import concept as okf
from okfgit.format import yamlfast
from tests.conftest import FIXTURES, examples

RESOLVERS = okf._yaml().loader.yaml_implicit_resolvers


def pyyaml(text: str) -> object:
    return yaml.load(text, Loader=okf._yaml().loader)  # noqa: S506 - okf's safe loader


def agrees(text: str) -> bool:
    """The fast path either declines or gives exactly PyYAML's mapping, key order included."""
    fast = yamlfast.parse(text, RESOLVERS)
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
    fast = yamlfast.parse(text, RESOLVERS)
    assert fast is not None and fast == pyyaml(text)
    assert fast["stale_after"] == "2026-01-01" and fast["empty"] is None


def test_every_ascii_character_is_judged_as_pyyaml_judges_it() -> None:
    """Control characters (tab, CR, DEL, ...) leave the fast path; the rest agree with PyYAML."""
    for code in range(128):
        for text in (f"a: b{chr(code)}c\n", f"a: {chr(code)}\n", f"k{chr(code)}: v\n"):
            if code < 0x20 and code != 0x0A or code == 0x7F:
                assert yamlfast.parse(text, RESOLVERS) is None, repr(text)
            else:
                assert agrees(text)


def test_a_line_seen_before_gives_the_same_value_and_a_fresh_list() -> None:
    """Short top-level lines are remembered (they repeat from file to file); what they give
    is PyYAML's value, and a list is the caller's own."""
    text = "type: Note\ntags: [a, b]\nscope: project\n"
    first = yamlfast.parse(text, RESOLVERS)
    assert first is not None
    first["tags"].append("c")
    again = yamlfast.parse(text, RESOLVERS)
    assert again == pyyaml(text) == {"type": "Note", "tags": ["a", "b"], "scope": "project"}
    assert yamlfast.parse("list:\n- x\ntype: Note\n", RESOLVERS) == {"list": ["x"], "type": "Note"}
    assert yamlfast.parse("type: Note\n- x\n", RESOLVERS) is None  # a remembered line does not hide what follows


@pytest.mark.parametrize("text", [
    "n: 3\n", "b: yes\n", "o: on\n", "z: ~\n", "x: null\n", "f: 1.5\n", "e: =\n", "m: <<\n", "k: 0x1f\n",
    "yes: key\n", "a: b # comment\n", "a: &anchor x\n", "a: *ref\n", "a: !!str 3\n", "a: |\n  block\n",
    "a: >\n  folded\n", "a: {b: c}\n", "a: 'it''s' x\n", "a: \"esc\\n\"\n", "a: b\n  continued\n",
    "list:\n- a: 1\n", "list:\n  - a\n - b\n", "a:\tb\n", "a: b\r\n", "a: [1, 2]\n", "a: [x, 'y']\n",
    "- a\n", "a: b:\n", "a:b\n", "'q': v\n", "a: -b\n", "a: @x\n", "a: %x\n", "a: `x\n", "\n\n",
    "a: \x07\n", "a: [b\n", "n:\n  k:\n    deep: 1\n", "a: 'x'y'\n",
])
def test_everything_else_is_left_to_pyyaml(text: str) -> None:
    assert yamlfast.parse(text, RESOLVERS) is None


def test_every_real_and_fixture_file_agrees() -> None:
    roots = [FIXTURES, Path(__file__).resolve().parent.parent / ".okf"]
    seen = 0
    for root in roots:
        for path in sorted(root.rglob("*.md")):
            data = path.read_bytes()
            opened = okf._FENCE_OPEN.match(data, 3 if data.startswith(okf.BOM) else 0)
            closed = okf._FENCE_CLOSE.search(data, opened.end()) if opened else None
            if opened and closed:
                try:
                    agrees(data[opened.end():closed.start()].decode("utf-8"))
                except (UnicodeDecodeError, yaml.YAMLError):
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
    except yaml.YAMLError:
        assert yamlfast.parse(text, RESOLVERS) is None or _pyyaml_rejects_what_fast_accepts(text)
        return
    assert agrees(text)


def _pyyaml_rejects_what_fast_accepts(text: str) -> bool:
    raise AssertionError(f"the fast path accepted what PyYAML rejects: {text!r}")


# -- writing: yamlfast.dump gives PyYAML's bytes or declines ----------------------------------

DUMPER = okf._yaml().dumper
SCALARS = st.one_of(
    st.sampled_from(["true", "No", "null", "~", "1", "1.5", "0x1F", "1_000", "-1", ".inf", "<<", "=", "On", "y",
                     "2025-01-01", "2025-01-01T00:00:00Z", "12:30", "1e5", "a: b", "a:", "a:b", "a  b", "a #b",
                     "7f5e0002-790f-4c15-bc49-f8a9660e3c1b", "claude-code/memory", "learned_00001.md", ""]),
    st.text(alphabet="aZ09 _./:@+=-#'\"\\\té", min_size=1, max_size=12),
)


def pyyaml_dump(mapping: dict[str, object]) -> str:
    return str(yaml.dump(mapping, Dumper=DUMPER, sort_keys=False, allow_unicode=True, default_flow_style=False,
                         width=100000))


@settings(max_examples=examples(3000), deadline=None)
@given(st.dictionaries(st.one_of(st.sampled_from(["type", "okf_id", "no", "1", "a b", "generated"]), SCALARS),
                       st.one_of(SCALARS, st.dictionaries(SCALARS, SCALARS, max_size=3)), min_size=1, max_size=4))
def test_dump_declines_or_writes_exactly_what_pyyaml_writes(mapping: dict[str, object]) -> None:
    fast = yamlfast.dump(mapping, DUMPER.yaml_implicit_resolvers)
    assert fast is None or fast == pyyaml_dump(mapping)


def test_the_keys_capture_adds_take_the_fast_dump() -> None:
    adds = {"type": "project", "title": "Learned Fact 00003", "scope": "project",
            "okf_id": "7f5e0002-790f-4c15-bc49-f8a9660e3c1b", "okf_source": "claude-memory",
            "okf_origin": "sub/learned_00003.md", "generated": {"by": "claude-code/memory", "at": "2025-01-01T00:00:00Z"}}
    fast = yamlfast.dump(adds, DUMPER.yaml_implicit_resolvers)
    assert fast is not None and fast == pyyaml_dump(adds)
    assert "  at: '2025-01-01T00:00:00Z'\n" in fast  # a timestamp stays a string: quoted, as PyYAML quotes it


def test_dump_remembers_strings_and_keys_without_mixing_them_up() -> None:
    resolvers = DUMPER.yaml_implicit_resolvers
    for _ in range(2):  # the second round is answered from what the first remembered
        assert yamlfast.dump({"type": "no", "scope": "project"}, resolvers) == "type: 'no'\nscope: project\n"
        assert yamlfast.dump({"no": "project"}, resolvers) is None  # a key PyYAML would quote: declined
        assert yamlfast.dump({"project": "a  b"}, resolvers) is None


@pytest.mark.parametrize("timestamps", [True, False])
def test_okfgits_copy_of_the_implicit_resolvers_is_pyyamls(timestamps: bool) -> None:
    """The table yamlfast reads and writes with (so a plain run never imports PyYAML) is
    PyYAML's own: same first characters, tags in the same order, same patterns and flags."""
    theirs = yaml.SafeLoader.yaml_implicit_resolvers
    ours = okf.implicit_resolvers(timestamps)
    if not timestamps:
        theirs = {k: [(t, p) for t, p in v if t != okf.TIMESTAMP] for k, v in theirs.items()}
        theirs = {k: v for k, v in theirs.items() if v}
    assert yaml.SafeDumper.yaml_implicit_resolvers == yaml.SafeLoader.yaml_implicit_resolvers
    assert set(ours) == set(theirs)
    for first, resolvers in theirs.items():
        assert [(t, p.pattern, p.flags) for t, p in ours[first]] == [(t, p.pattern, p.flags) for t, p in resolvers]
