"""Link extraction and fence detection (okfgit.format.markdown) agree with a real CommonMark parser.

markdown-it-py (a test dependency) is the reference: on generated documents made of
paragraphs, inline links, images, code spans, indented code and fenced code blocks
(closed or not, ``` or ~~~, indented up to three spaces), the markdown link targets okfgit
finds are exactly the link and image targets markdown-it finds, in order; and the fenced
blocks the one walker finds (info string, content, lines) are exactly markdown-it's. Targets are kept to characters
CommonMark leaves as they are, so the comparison is about where links are, not about
URL normalisation.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from urllib.parse import unquote

from hypothesis import given, settings
from hypothesis import strategies as st

from markdown_it import MarkdownIt
from markdown_it.token import Token

from okfgit.format import markdown
from tests.conftest import examples

WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
TARGET = st.builds(lambda parts, ext: "/".join(parts) + ext,
                   st.lists(st.text(alphabet="abcxyz-_", min_size=1, max_size=5), min_size=1, max_size=3),
                   st.sampled_from([".md", "", "/"]))
LINK = st.builds(lambda image, text, target: f"{'!' if image else ''}[{text}]({target})", st.booleans(), WORD, TARGET)
SPAN = st.builds(lambda inner: f"`{inner}`", st.one_of(WORD, LINK))
INLINE = st.lists(st.one_of(WORD, LINK, SPAN), min_size=1, max_size=5).map(" ".join)
PARAGRAPH = st.lists(INLINE, min_size=1, max_size=3).map("\n".join)
FENCE = st.builds(
    lambda indent, mark, lines, close: "\n".join([indent + mark + "text", *lines] + ([close + mark] if close is not None
                                                                                    else [])),
    st.sampled_from(["", " ", "   "]), st.sampled_from(["```", "~~~", "````"]),
    st.lists(st.one_of(INLINE, st.just("")), max_size=3), st.one_of(st.none(), st.sampled_from(["", "  ", "   "])),
)
INDENTED = st.lists(LINK, min_size=1, max_size=2).map(lambda links: "\n".join("    " + x for x in links))
BLOCK = st.one_of(PARAGRAPH, PARAGRAPH, FENCE, INDENTED, st.builds(lambda w: f"# {w}", INLINE))
DOCUMENT = st.lists(BLOCK, min_size=1, max_size=6).map(lambda blocks: "\n\n".join(blocks) + "\n")

_PARSER = MarkdownIt("commonmark")


def _reference_targets(text: str) -> list[str]:
    out: list[str] = []

    def walk(tokens: list[Token]) -> None:
        for token in tokens:
            if token.type == "link_open":
                out.append(str(token.attrs["href"]))
            elif token.type == "image":
                out.append(str(token.attrs["src"]))
            if token.children:
                walk(token.children)

    walk(_PARSER.parse(text))
    return out


@settings(max_examples=examples(150), deadline=None)
@given(DOCUMENT)
def test_link_extraction_agrees_with_commonmark(text: str) -> None:
    found = [link.target for link in markdown.extract(text) if link.kind == "md"]
    assert found == _reference_targets(text)


FENCE_CHAR = st.sampled_from("`~")
# Content lines that may look like fences: indented, shorter, longer, with an info string.
FENCE_LIKE = st.builds(lambda indent, char, n, tail: " " * indent + char * n + tail,
                       st.integers(0, 5), FENCE_CHAR, st.integers(2, 6), st.sampled_from(["", " ", "  x", " `", "\t"]))
CONTENT = st.one_of(INLINE, st.just(""), st.just("  "), WORD.map(lambda w: "  " + w), WORD.map(lambda w: "     " + w),
                    FENCE_LIKE)


@st.composite
def fenced(draw: st.DrawFn) -> str:
    """A fence indented 0-3 spaces, of 3-5 backticks or tildes, with an info string (for
    backticks maybe one holding a backtick: no fence at all), closed or not, by a line
    that may fail to close it (too short, the other character, indented four, text after)."""
    char = draw(FENCE_CHAR)
    n = draw(st.integers(3, 5))
    info = draw(st.sampled_from(["", "text", " okf-harvest", "json x ", "a`b", "~"]))
    opening = " " * draw(st.integers(0, 3)) + char * n + info
    close = draw(st.one_of(st.none(), st.builds(lambda indent, c, m, tail: " " * indent + c * m + tail,
                                                 st.integers(0, 4), st.sampled_from([char, char, char, "`", "~"]),
                                                 st.integers(n - 1, n + 2), st.sampled_from(["", "  ", " x", "\t"]))))
    return "\n".join([opening, *draw(st.lists(CONTENT, max_size=4))] + ([close] if close is not None else []))


FENCED_DOCUMENT = st.lists(st.one_of(PARAGRAPH, fenced(), fenced(), INDENTED), min_size=1, max_size=5).map(
    lambda blocks: "\n\n".join(blocks) + "\n")


def _reference_fences(text: str) -> list[tuple[str, str, int, int]]:
    # markdown-it keeps the info string as written; CommonMark trims its spaces and tabs
    return [(t.info.strip(" \t"), t.content, t.map[0], t.map[1]) for t in _PARSER.parse(text)
            if t.type == "fence" and t.map]


@settings(max_examples=examples(300), deadline=None)
@given(FENCED_DOCUMENT)
def test_fence_detection_agrees_with_commonmark(text: str) -> None:
    found = [(b.info, b.content, b.first - 1, b.last) for b in markdown.fenced_blocks(text)]
    assert found == _reference_fences(text)
    code = {n for b in markdown.fenced_blocks(text) for n in range(b.first, b.last + 1)}
    assert [n for n, _ in markdown.outside_code(text)] == [n for n in range(1, text.count("\n") + 1) if n not in code]


def test_walk_yields_lines_and_blocks_in_order() -> None:
    text = "a\n  ````json x\n   {}\n  ```\n  `````\nb\n~~~\nc"
    assert list(markdown.walk(text.split("\n"))) == [
        (1, "a"),
        markdown.Fenced("````", "json x", 2, 5, (" {}", "```"), True),
        (6, "b"),
        markdown.Fenced("~~~", "", 7, 8, ("c",), False),
    ]
    assert markdown.open_fence(text) == "~~~"
    assert markdown.open_fence("```\nx\n```\n") is None
    assert markdown.fenced_blocks("```x\r\n1\r\n```\r\n")[0].content == "1\n"


def test_an_unclosed_fence_is_code_to_the_end() -> None:
    text = "[a](a.md)\n\n```\n[b](b.md)\n\n[c](c.md)\n"
    assert [link.target for link in markdown.extract(text)] == ["a.md"] == _reference_targets(text)


def test_wiki_links_and_line_numbers() -> None:
    text = "intro\n\nsee [[cache-policy]] and [x](x.md)\n```\n[[not-a-link]]\n```\n[[y|label]]\n"
    assert markdown.extract(text) == [
        markdown.Link("md", "x.md", 3), markdown.Link("wiki", "cache-policy", 3), markdown.Link("wiki", "y", 7),
    ]


def test_resolve_relative_absolute_external_and_escaping() -> None:
    assert markdown.resolve("a/b.md", "c.md") == markdown.Target("a/c.md")
    assert markdown.resolve("a/b.md", "/glossary/t.md") == markdown.Target("glossary/t.md")
    assert markdown.resolve("a/b.md", "../c.md") == markdown.Target("c.md")
    assert markdown.resolve("a/b.md", "../../c.md") == markdown.Target(None, escapes=True)
    assert markdown.resolve("a/b.md", "https://example.com/x") == markdown.Target(None, external=True)
    assert markdown.resolve("a/b.md", "#top") == markdown.Target(None, external=True)
    assert markdown.resolve("a/b.md", "d/") == markdown.Target("a/d/index.md")
    assert markdown.resolve("a/b.md", "c%20d.md#x") == markdown.Target("a/c d.md")


ABSOLUTE_DOCUMENT = st.builds(lambda text, every: text.replace("](", "](/") if every else text.replace("](a", "](/a"),
                              DOCUMENT, st.booleans())


@settings(max_examples=examples(150), deadline=None)
@given(ABSOLUTE_DOCUMENT)
def test_rebasing_changes_exactly_the_bundle_absolute_link_targets(text: str) -> None:
    new, rewrites = markdown.rebase_absolute(text, "r")
    def moved(target: str) -> str:
        return "/r" + target if target.startswith("/") and not target.startswith("//") else target
    assert _reference_targets(new) == [moved(t) for t in _reference_targets(text)]  # as CommonMark reads them
    before, after = markdown.extract(text), markdown.extract(new)
    assert [(a.kind, a.line, moved(a.target) if a.kind == "md" else a.target) for a in before] == \
           [(b.kind, b.line, b.target) for b in after]
    assert [(r.line, r.old, r.new) for r in rewrites] == [
        (a.line, a.target, moved(a.target)) for a in before if a.kind == "md" and moved(a.target) != a.target]
    assert new.replace("](/r/", "](/") == text  # every other character stays


# The link pattern written without possessive quantifiers and with the image's "!": what
# the one okfgit uses (possessive, so it never backtracks) must find.
_PLAIN_MD_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
BRACKETY = st.text(alphabet="[]()!<>ab/.: \n`'\"\t\r~x", max_size=60)  # ":": reference definitions


@settings(max_examples=examples(500), deadline=None)
@given(st.one_of(BRACKETY, DOCUMENT))
def test_the_link_pattern_finds_what_the_plain_pattern_finds(text: str) -> None:
    """On every line outside code, ``extract`` finds exactly the links the plain pattern
    finds, with the same line numbers."""
    expected: list[markdown.Link] = []
    for number, line in markdown.outside_code(text):
        if "[" not in line or (line.startswith(("    ", "\t")) and not line.lstrip().startswith(("-", "*", "+"))):
            continue
        plain = markdown._CODE_SPAN.sub("", line) if "`" in line else line
        expected += [markdown.Link("md", m.group(1), number) for m in _PLAIN_MD_LINK.finditer(plain)]
        ref = markdown._REF_DEF.match(plain)
        if ref:
            expected.append(markdown.Link("md", ref.group(1), number))
        expected += [markdown.Link("wiki", m.group(1).strip(), number) for m in markdown._WIKI.finditer(plain)]
    assert markdown.extract(text) == expected


def test_leads_to_is_resolve_as_one_string() -> None:
    for target, where in (("c.md", "a/c.md"), ("/g/t.md", "g/t.md"), ("../../c.md", "/"), ("https://x.org/y", None),
                          ("#top", None), ("d/", "a/d/index.md"), ("c%20d.md#x", "a/c d.md"), ("./c.md", "a/c.md"),
                          ("../../a/../../c.md", "/"), (".", "a")):
        found = markdown.resolve("a/b.md", target)
        assert markdown.leads_to("a/b.md", target) == where == ("/" if found.escapes else found.path), target


def _resolved_by_posixpath(source: str, target: str) -> markdown.Target:
    """The link rule written plainly with ``posixpath``: what ``resolve`` must give."""
    if markdown._SCHEME.match(target) or target.startswith(("#", "//")):
        return markdown.Target(None, external=True)
    target = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not target:
        return markdown.Target(None, external=True)
    folder = posixpath.dirname(source)
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target) if folder else target
    if target.endswith("/"):
        joined = joined.rstrip("/") + "/index.md"
    normal = posixpath.normpath(joined)
    if normal == ".." or normal.startswith(("../", "/")):
        return markdown.Target(None, escapes=True)
    return markdown.Target("" if normal == "." else normal)


SOURCES = ["x.md", "a/x.md", "a/b/x.md", "/x.md", "a//x.md", "a/./x.md", "a/../x.md", "../x.md"]
PARTS = ["", ".", "..", "a", "%2e"]


def test_resolve_is_the_plain_posixpath_rule() -> None:
    """``resolve`` skips ``normpath`` where it would change nothing and walks a leading ``../``
    itself: for every source and every target of up to three parts (each ending in "/" or
    not, with a fragment or not), it gives what the rule written with ``posixpath`` gives."""
    parts = [*PARTS, *(p + "/" for p in PARTS)]
    targets = ["".join(p) for n in range(1, 4) for p in itertools.product(parts, repeat=n)]
    for source in SOURCES:
        for target in (t + tail for t in targets for tail in ("", "#x")):
            assert markdown.resolve(source, target) == _resolved_by_posixpath(source, target), (source, target)
