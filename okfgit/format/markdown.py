"""Links inside concept bodies: markdown links (relative or bundle-absolute) and ``[[name]]``.

Code spans and fenced code blocks are not links. URLs, ``mailto:`` and pure anchors are
external and never checked.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import quote, unquote


# An opening fence: indent, the run, the info string (CommonMark: a backtick fence's info string has no backtick)
FENCE = re.compile(r"^( {0,3})(`{3,}(?!.*`)|~{3,})(.*)$")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# An image's "!" is left out: the target is the same, and a pattern that starts with "[" is
# searched for by that character alone. The link text's runs and bracket pairs cannot give
# back what they took (the next character would have to be "]"), so they are possessive.
_MD_LINK = re.compile(r"\[(?:[^\[\]]++|\[[^\]]*\])*+\]\(\s*<?([^)\s>]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[(?!\^)[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_WIKI = re.compile(r"\[\[([^\[\]|#]+)(?:#[^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text``, so nothing inside can close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


class Link(NamedTuple):
    """One link as written: ``kind`` is ``md`` or ``wiki``; ``line`` is 1-based in the body."""

    kind: str
    target: str
    line: int


class Target(NamedTuple):
    """Where a markdown link points inside the tier (``path`` None for external links)."""

    path: str | None
    external: bool = False
    escapes: bool = False


def extract(body: bytes | str) -> list[Link]:
    """Every markdown and ``[[name]]`` link in a body, outside code."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    out: list[Link] = []
    if "[" not in text:
        return out  # every link form starts with "["
    for number, line in outside_code(text):
        if "[" in line:
            _line_links(line, number, out)
    return out


def outside_code(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) for every line of ``text`` (as ``splitlines`` splits it) outside
    fenced code blocks, as CommonMark reads them (see ``walk``)."""
    for item in walk(text.splitlines()):
        if type(item) is tuple:
            yield item


def fenced_blocks(text: str) -> list[Fenced]:
    """Every fenced code block of ``text`` (lines end at ``\n``, ``\r\n`` or ``\r``), in order."""
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()  # a final line ending starts no line
    return [item for item in walk(lines) if isinstance(item, Fenced)]


def open_fence(text: str) -> str | None:
    """The fence ``text`` opens and never closes (what follows it would be code), or None."""
    if _no_fence(text):
        return None
    found = fenced_blocks(text)
    return found[-1].fence if found and not found[-1].closed else None


@dataclass(frozen=True, slots=True)
class Fenced:
    """One fenced code block: its ``info`` string (stripped), the 1-based line numbers of its
    opening fence and of its closing fence (of the last line when it is never closed), and its
    content lines, less the opening fence's indentation."""

    fence: str  # the opening run of backticks or tildes
    info: str
    first: int
    last: int
    lines: tuple[str, ...]
    closed: bool

    @property
    def content(self) -> str:
        """The content as CommonMark gives it: each line ended by a newline."""
        return "".join(line + "\n" for line in self.lines)


def walk(lines: Iterable[str]) -> Iterator[tuple[int, str] | Fenced]:
    """The one fenced-code walker: each line outside fenced code as (number, line), and each
    fenced code block as a ``Fenced``, in document order (``lines`` without their endings).

    CommonMark's rules: a fence opens with three or more backticks or tildes indented at
    most three spaces (a backtick fence's info string holds no backtick); it closes with at
    least as many of the same character, indented at most three spaces, and nothing else but
    spaces or tabs; a fence never closed is code to the end of the document.
    """
    number = 0
    opened: tuple[int, int, str, str, list[str]] | None = None  # first line, indent, fence, info, content
    for number, line in enumerate(lines, start=1):
        if opened is None:
            match = FENCE.match(line) if ("`" in line or "~" in line) else None
            if match is None:
                yield number, line
            else:
                opened = (number, len(match.group(1)), match.group(2), match.group(3).strip(" \t"), [])
            continue
        first, indent, fence, info, content = opened
        body = line.lstrip(" ")
        if len(line) - len(body) <= 3 and body.startswith(fence) and not body.rstrip().strip(fence[0]):
            yield Fenced(fence, info, first, number, tuple(content), True)
            opened = None
        else:
            content.append(_dedent(line, indent))
    if opened is not None:
        first, _, fence, info, content = opened
        yield Fenced(fence, info, first, number, tuple(content), False)


def _dedent(line: str, indent: int) -> str:
    """``line`` less up to ``indent`` leading spaces (a content line of an indented fence)."""
    if not indent or not line.startswith(" "):
        return line
    body = line.lstrip(" ")
    return line[min(indent, len(line) - len(body)):]


_LINE_END = re.compile(r"\r\n|\r|\n")


def _no_fence(text: str) -> bool:
    """No line of ``text`` can open a fence (searched for a backtick or tilde first: most texts have none)."""
    return ("`" not in text or "```" not in text) and ("~" not in text or "~~~" not in text)


def _line_links(line: str, number: int, out: list[Link]) -> None:
    """The links on one line outside a fence (an indented code line has none)."""
    if line.startswith(("    ", "\t")) and not line.lstrip().startswith(("-", "*", "+")):
        return  # indented code block
    plain = _CODE_SPAN.sub("", line) if "`" in line else line
    if "](" in plain:
        for target in _MD_LINK.findall(plain):  # the one group: each link's target
            out.append(Link("md", target, number))
    ref = _REF_DEF.match(plain) if "]:" in plain else None  # a definition's label ends "]:"
    if ref:
        out.append(Link("md", ref.group(1), number))
    if "[[" in plain:
        for match in _WIKI.finditer(plain):
            out.append(Link("wiki", match.group(1).strip(), number))


def resolve(source: str, target: str) -> Target:
    """Resolve a markdown link target written in ``source`` (both KB-relative): schemes and
    anchors are external; a query, a fragment and ``%xx`` escapes are read as a browser reads
    them; ``/`` starts at the bundle root; ``.`` and ``..`` anywhere."""
    if _SCHEME.match(target) or target.startswith(("#", "//")):
        return Target(None, external=True)
    if "#" in target or "?" in target:
        target = target.split("#", 1)[0].split("?", 1)[0]
    if "%" in target:
        target = unquote(target)
    if not target:
        return Target(None, external=True)
    if target.startswith("/"):
        joined = target.lstrip("/")
    else:
        folder, rest = source[: source.rfind("/") + 1], target  # beside the source (no "/": at the root)
        if folder[:1] not in ("", "/") and "//" not in folder and "/." not in "/" + folder:  # a plain folder
            while rest.startswith("../") and folder and rest[3:4] not in ("", "/"):  # each "../" a folder up
                folder, rest = folder[: folder.rfind("/", 0, -1) + 1], rest[3:]
        joined = folder + rest
    if target.endswith("/"):
        joined = joined.rstrip("/") + "/index.md"
    # Only a "." or ".." part, a doubled "/" or an empty path is changed by normpath: most
    # links have none (doctor resolves every link of every concept).
    normal = joined if joined and "//" not in joined and "/." not in "/" + joined else posixpath.normpath(joined)
    if normal == ".." or normal.startswith("../") or normal.startswith("/"):
        return Target(None, escapes=True)
    return Target("" if normal == "." else normal)


_UNSAFE_IN_TARGET = re.compile(r"[\s\x00-\x1f\x7f()<>%#?]")


def link_target(path: str) -> str:
    """A relative ``path`` as a markdown link destination that ``resolve`` reads back as
    ``path``: what would end or break the link (a space or line break, a parenthesis, an
    angle bracket) or be read otherwise (``%``, ``#``, ``?``) is percent-encoded, and a name
    that would read as a URL scheme (``a:b.md``) starts with ``./``."""
    target = _UNSAFE_IN_TARGET.sub(lambda found: quote(found.group(), safe=""), path)
    return "./" + target if _SCHEME.match(target) else target


def leads_to(source: str, target: str) -> str | None:
    """``resolve`` as one string: the tier path the target leads to, "/" when it leaves the
    knowledge base, None when it is external."""
    found = resolve(source, target)
    return "/" if found.escapes else found.path


def exists(path: str, entries: Iterable[str] | Mapping[str, object]) -> bool:
    """A resolved path names a blob of ``entries``, or a folder that holds any."""
    paths = entries if isinstance(entries, (set, dict, frozenset)) else set(entries)
    return names_something(path, paths.__contains__, lambda folder: any(str(p).startswith(folder) for p in paths))


def names_something(path: str, is_blob: Callable[[str], bool], holds: Callable[[str], bool]) -> bool:
    """A resolved path names a blob (``is_blob``), or a folder that holds any (``holds`` of
    ``<folder>/``, or "" for the root); ``x/index.md`` is a link to the folder ``x``."""
    if is_blob(path):
        return True
    if path.endswith("/index.md") or path == "index.md":
        return holds(path[: -len("index.md")])
    return holds(path.rstrip("/") + "/")


def wiki_names(paths_and_names: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """Map the names a ``[[name]]`` link can use (frontmatter ``name``, file stem) to a path."""
    out: dict[str, str] = {}
    for path, name in paths_and_names:
        stem = posixpath.basename(path)[:-3] if path.endswith(".md") else posixpath.basename(path)
        out.setdefault(stem, path)
        if name:
            out[name] = path
    return out


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One link target rewritten in place: ``line`` is 1-based in the text given."""

    line: int
    old: str
    new: str


def rebase_absolute(text: str, folder: str) -> tuple[str, list[Rewrite]]:
    """``text`` with every bundle-absolute link target (``/x/y.md``, OKF §6.1) re-rooted
    under ``folder`` (``/folder/x/y.md``): markdown links, images and reference
    definitions outside code. Only the target characters change; every other character,
    line ending included, stays."""
    if not folder or "/" not in text:
        return text, []
    prefix = "/" + folder.strip("/")
    outside = {number for number, _ in outside_code(text)}  # the one fence rule
    out: list[str] = []
    rewrites: list[Rewrite] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        out.append(_rebase_line(line, number, prefix, rewrites) if number in outside and "[" in line else line)
    return "".join(out), rewrites


def _rebase_line(line: str, number: int, prefix: str, rewrites: list[Rewrite]) -> str:
    if line.startswith(("    ", "\t")) and not line.lstrip().startswith(("-", "*", "+")):
        return line  # indented code block
    # Code spans are masked, not removed, so that match offsets are offsets in ``line``.
    masked = _CODE_SPAN.sub(lambda m: "\x01" * len(m.group(0)), line) if "`" in line else line
    spans = [m.span(1) for m in _MD_LINK.finditer(masked)]
    ref = _REF_DEF.match(masked.rstrip("\r\n"))
    if ref:
        spans.append(ref.span(1))
    found = []
    for start, end in spans:
        target = line[start:end]
        if target.startswith("/") and not target.startswith("//"):
            found.append((start, end, target, prefix + target))
    for start, end, old, new in sorted(found, reverse=True):
        line = line[:start] + new + line[end:]
    rewrites.extend(Rewrite(number, old, new) for _, _, old, new in sorted(found))
    return line
