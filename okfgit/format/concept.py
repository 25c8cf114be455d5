"""Concept files: parse them safely and write them canonically.

We parse frontmatter ourselves (PyYAML safe loading for the YAML part) instead of
``frontmatter.loads`` because of its measured traps: it sorts keys, strips body
whitespace, leaves a UTF-8 BOM in the body, converts CRLF, and eats the first section
of a file that merely starts with a ``---`` horizontal rule. Here the body is the exact
bytes after the closing fence, and a key edit touches only that key's lines.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from okfgit.format.names import RESERVED, is_concept_path, is_reserved, nfc  # noqa: F401
from okfgit.errors import IntegrityError, OkfError, UsageError, ValidationError

BOM = b"\xef\xbb\xbf"
TIMESTAMP = "tag:yaml.org,2002:timestamp"
MAX_CONCEPT_BYTES = 1024 * 1024
# Bounds on what one frontmatter may hold (spec/okf-format.md §1), so that no value can make a
# later step fail or take unbounded time: Python refuses to turn an integer of over 4,300
# digits into text, and every reader, writer and JSON report does that.
MAX_INT_CHARS = 100  # an integer scalar as written (below 10^100 in decimal, 0x..., 0o..., base 60)
MAX_SCALAR_CHARS = 64 * 1024  # any scalar: a string, a key
MAX_DEPTH = 64  # mappings and lists inside one another

# Canonical key order for files okfgit writes from scratch; other keys follow in
# their original order.
KEY_ORDER = (
    "type", "title", "description", "tags", "scope", "okf_id", "okf_source", "name",
    "okf_origin", "status", "supersedes", "superseded_by", "generated", "verified",
    "stale_after", "sources", "resource",
)

if TYPE_CHECKING:
    import yaml


class _Yaml(NamedTuple):
    loader: Any  # a safe loader that keeps timestamps as the strings the author wrote
    base_loader: type  # the safe loader it derives from (libyaml's when PyYAML has it)
    dumper: Any  # libyaml's emitter when PyYAML has it (about 10x faster than the pure-Python one)
    too_large: type  # the YAMLError a frontmatter past one of the bounds raises


@functools.lru_cache(maxsize=1)
def _yaml() -> _Yaml:
    """PyYAML's loader and dumper, set up the first time YAML is really read or written (a
    read verb that finds every concept's card cached never imports PyYAML)."""
    import yaml

    base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class TooLarge(yaml.MarkedYAMLError):
        pass

    class Loader(base):  # type: ignore[misc, valid-type]
        def construct_document(self, node: yaml.Node) -> Any:
            _check_bounds(node, TooLarge)  # before any value is made from it
            return super().construct_document(node)

    # Dates and times stay the strings the author wrote: no timestamp resolver.
    Loader.yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        pass

    Dumper.add_representer(str, _str_presenter)
    return _Yaml(Loader, base, Dumper, TooLarge)


_INT_TAG = "tag:yaml.org,2002:int"


def _check_bounds(root: yaml.Node, too_large: type) -> None:
    """Raise ``too_large`` at the first node past a bound: an integer written in more than
    ``MAX_INT_CHARS`` characters, a scalar of more than ``MAX_SCALAR_CHARS``, collections nested
    more than ``MAX_DEPTH`` deep. One pass over the composed nodes, with no recursion."""
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        value = node.value
        if isinstance(value, str):
            if node.tag == _INT_TAG and len(value) > MAX_INT_CHARS:
                problem = (f"an integer of {len(value):,} characters; okfgit reads integers of at most "
                           f"{MAX_INT_CHARS} (write a long number as a quoted string)")
            elif len(value) > MAX_SCALAR_CHARS:
                problem = (f"a value of {len(value):,} characters; okfgit reads values of at most "
                           f"{MAX_SCALAR_CHARS:,}")
            else:
                continue
            raise too_large(None, None, problem, node.start_mark)
        if depth >= MAX_DEPTH:
            raise too_large(None, None, f"mappings or lists nested more than {MAX_DEPTH} deep", node.start_mark)
        for item in value:
            if isinstance(item, tuple):  # a mapping's (key, value) pair
                stack.append((item[0], depth + 1))
                stack.append((item[1], depth + 1))
            else:
                stack.append((item, depth + 1))


_BREAKS = ("\x85", "\u2028", "\u2029", "\r")


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    # YAML folds NEL/LS/PS and CR inside plain and single-quoted scalars, and a block
    # scalar with trailing blank lines ends the document with "...": use double quotes
    # (with escapes) wherever another style would not read back as the same string.
    if any(ch in data for ch in _BREAKS) or any(ord(ch) < 32 and ch not in "\n\t" for ch in data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    if "\n" in data:
        lines = data.split("\n")
        literal_ok = (
            data[:1] not in (" ", "\n", "\t") and not data.endswith("\n\n")
            and all(line == line.rstrip(" \t") for line in lines)
        )
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if literal_ok else '"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)




class Parsed(NamedTuple):
    """A markdown file split into frontmatter and body, nothing re-encoded."""

    meta: dict[str, Any]
    body: bytes
    has_frontmatter: bool
    bom: bool
    newline: str
    fm_start: int  # byte offset of the first YAML line
    fm_end: int  # byte offset of the closing fence line


class Fences(NamedTuple):
    """Where a file's frontmatter lies, as byte offsets into the file."""

    start: int  # the YAML text's first byte: the line after the opening fence
    end: int  # the closing fence line's first byte (the YAML text ends here)
    body: int  # the body's first byte: the line after the closing fence


_FENCE_OPEN = re.compile(rb"---[ \t]*\r?\n")  # used with .match at the file's start
_FENCE_CLOSE = re.compile(rb"---[ \t]*(?:\r?\n|\Z)")  # used with .match at a line start
_LONE_CR_FENCE = re.compile(rb"---[ \t]*\r(?!\n)")


def fences(data: bytes) -> Fences | None:
    """Where ``data``'s frontmatter starts and ends: the one rule every reader of a concept,
    an ``index.md`` or a memory file applies (spec/okf-format.md §2), or None when it has none.

    The first line (after an optional UTF-8 BOM) is ``---``, and the frontmatter ends at the
    next line that is ``---``: three dashes, then nothing but spaces or tabs. A line ends
    with LF or CRLF (a lone CR does not end one); the closing fence may end the file.
    ``...`` and ``----`` are not fences. Whether the text between is a YAML mapping is
    ``split``'s question, not this one's.
    """
    opened = _FENCE_OPEN.match(data, len(BOM) if data.startswith(BOM) else 0)
    if opened is None:
        return None
    start = opened.end()
    # Each candidate line is found by a plain search for a line starting "---" (a regex tried
    # at every position costs as much as the rest of a split).
    at = start if data.startswith(b"---", start) else data.find(b"\n---", start - 1) + 1
    while at:
        close = _FENCE_CLOSE.match(data, at)
        if close is not None:
            return Fences(start, at, close.end())
        at = data.find(b"\n---", at) + 1
    return None


def check_text(data: bytes, name: str) -> str:
    """Decode ``data`` as UTF-8 text or raise a ValidationError naming ``name``."""
    if len(data) > MAX_CONCEPT_BYTES:
        raise ValidationError(f"{name}: file is over 1 MiB ({len(data)} bytes); not a concept")
    if b"\x00" in data:
        raise ValidationError(f"{name}: binary file (contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{name}: not UTF-8 (byte {exc.start})") from exc


def check_utf8(given: Mapping[str, str | Sequence[str] | None]) -> None:
    """Refuse, naming it, a text argument that UTF-8 cannot carry: a byte of a command-line
    argument that is not UTF-8 reaches Python as a lone surrogate (so does a ``\\udcxx``
    escape in JSON), and a file okfgit wrote from it would not be text."""
    for what, value in given.items():
        for text in [value] if isinstance(value, str) else value or ():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise UsageError(f"{what}: not UTF-8 text (character {exc.start + 1} is a byte that is not "
                                 "UTF-8); nothing was written") from exc


def load_yaml(text: str, name: str) -> Any:
    """The value of the YAML text ``text`` (a frontmatter's), loaded safely; a ValidationError
    naming ``name`` when it is not valid YAML okfgit reads. Every YAML read goes through here:
    the plain subset most frontmatter is written in by ``yamlfast`` (PyYAML's answer, faster),
    the rest by PyYAML."""
    from okfgit.format import yamlfast  # only where YAML is read

    # A text longer than a scalar may be takes PyYAML's path, which checks the bounds (§1).
    fast = yamlfast.parse(text) if len(text) <= MAX_SCALAR_CHARS else None
    return fast if fast is not None else _pyyaml(text, name)


def _pyyaml(text: str, name: str) -> Any:
    import yaml

    kit = _yaml()

    try:
        if "&" in text or "*" in text:
            _refuse_aliases(text)
        return yaml.load(text, Loader=kit.loader)  # noqa: S506 - a safe loader
    except RecursionError as exc:  # PyYAML without libyaml composes nested nodes recursively
        raise ValidationError(f"{name}: invalid YAML frontmatter: mappings or lists nested more than "
                              f"{MAX_DEPTH} deep") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValidationError(f"{name}: invalid YAML frontmatter{where}: {problem}") from exc


def _refuse_aliases(text: str) -> None:
    """Refuse YAML anchors and aliases: a knowledge file has no use for them, and a few
    hundred bytes of nested aliases (an alias bomb) expand into a graph whose every
    comparison or dump costs exponential time. One linear pass over the parser's events;
    raises a YAMLError, reported like any other invalid frontmatter."""
    import yaml

    for event in yaml.parse(text, Loader=_yaml().base_loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases (&name, *name) are not allowed in frontmatter",
                event.start_mark)  # type: ignore[arg-type]


def split(data: bytes, name: str) -> Parsed:
    """Split a markdown file into frontmatter and body (``fences`` says where the frontmatter
    lies; it is frontmatter when its YAML is a mapping or empty). Raises ValidationError on
    bad input."""
    if len(data) > MAX_CONCEPT_BYTES or b"\x00" in data or not data.isascii():
        check_text(data, name)  # ASCII is UTF-8 as it is: only other text is decoded to check it
    bom = data.startswith(BOM)
    start = len(BOM) if bom else 0
    first_end = data.find(b"\n")
    newline = "\r\n" if first_end > 0 and data[first_end - 1] == 13 else "\n"  # the first line ends in CRLF
    found = fences(data)
    if found is None:
        return Parsed({}, data[start:], False, bom, newline, start, start)
    fm_text = data[found.start:found.end].decode("utf-8")
    meta = load_yaml(fm_text, name) if fm_text and not fm_text.isspace() else {}
    if meta is None:
        meta = {}  # only comments
    if not isinstance(meta, dict):
        # A leading horizontal rule, not frontmatter: the whole file is body.
        return Parsed({}, data[start:], False, bom, newline, start, start)
    if not all(type(key) is str for key in meta):
        meta = {str(k): v for k, v in meta.items()}
    return Parsed(meta, data[found.body:], True, bom, newline, found.start, found.end)


def parse_concept(data: bytes, name: str, *, is_link: bool = False) -> Parsed:
    """A concept file's parts; ValidationError naming ``name`` when it is not a readable concept
    (a symlink, not text, bad YAML, no frontmatter). The one rule every reader applies."""
    if is_link:
        raise ValidationError(f"{name}: is a symlink; okfgit never follows links in a tier")
    parsed = split(data, name)
    if not parsed.has_frontmatter:
        raise ValidationError(f"{name}: missing YAML frontmatter")
    return parsed


def ordered(meta: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: meta[k] for k in KEY_ORDER if k in meta}
    out.update((k, v) for k, v in meta.items() if k not in out)
    return out


def dump_yaml(meta: Mapping[str, Any]) -> str:
    if not meta:
        return ""
    import yaml

    dumper = _yaml().dumper

    text = yaml.dump(
        dict(meta), Dumper=dumper, sort_keys=False, allow_unicode=True,
        default_flow_style=False, width=100000,
    )
    return str(text)


def new_file(meta: Mapping[str, Any], body: str) -> bytes:
    """A NEW concept file, built by python-frontmatter (``Post`` + ``dumps``): ordered keys,
    one blank line after the frontmatter, the body without surrounding blank lines, one
    final LF. For a body written as ``"\n# Title\n..."`` these are exactly the bytes
    ``serialize`` gives. python-frontmatter is used only here: re-serialising an existing
    file with it would sort keys, strip the body, drop a BOM and CRLF, so every read goes
    through ``split`` and every edit through ``set_keys``.
    """
    import frontmatter

    post = frontmatter.Post(body.strip("\n"))
    post.metadata.update(ordered(meta))
    text = frontmatter.dumps(post, sort_keys=False, Dumper=_yaml().dumper, width=100000)
    return text.encode("utf-8") + b"\n"


def serialize(meta: Mapping[str, Any], body: bytes | str) -> bytes:
    """A new concept file in canonical form: ordered keys, LF, body bytes verbatim."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    head = "---\n" + dump_yaml(ordered(meta)) + "---\n"
    return head.encode("utf-8") + body


def set_keys(data: bytes, name: str, updates: Mapping[str, Any], remove: tuple[str, ...] = (), *,
             parsed: Parsed | None = None) -> bytes:
    """Set or remove top-level frontmatter keys, touching only those keys' lines.

    Every other byte (other keys' formatting, comments, the body, BOM, CRLF) stays as
    it was. The result is parsed again and checked; on any surprise nothing is returned.
    ``parsed`` is ``split(data, name)`` when the caller has it already.
    """
    return set_keys_split(data, name, updates, remove, parsed=parsed)[0]


def set_keys_split(data: bytes, name: str, updates: Mapping[str, Any], remove: tuple[str, ...] = (), *,
                   parsed: Parsed | None = None) -> tuple[bytes, Parsed]:
    """``set_keys``, and the result split: the parse that checked it, for a caller that
    reads the new bytes next (capture checks and indexes them without parsing them again)."""
    parsed = split(data, name) if parsed is None else parsed
    nl = parsed.newline
    if not parsed.has_frontmatter and _LONE_CR_FENCE.match(data, parsed.fm_start):
        # A frontmatter written with old Mac line ends: adding one would put a second in front.
        raise ValidationError(f"{name}: the line ends are lone CRs (old Mac style), so its frontmatter cannot be "
                              "read; convert the file to LF line ends")
    if not parsed.has_frontmatter:
        head = ("---" + nl + dump_yaml(ordered(dict(updates))).replace("\n", nl) + "---" + nl)
        prefix = BOM if parsed.bom else b""
        out = prefix + head.encode("utf-8") + parsed.body
    else:
        fm = data[parsed.fm_start:parsed.fm_end].decode("utf-8")
        lines = fm.splitlines(keepends=True)
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += nl
        appended: list[str] = []
        # One YAML dump for every key (a dump per key was most of capture's time), cut into
        # each key's lines: a new top-level entry starts at a line that is neither indented
        # nor a block-sequence item.
        chunks = dict(zip(updates, _entries(dump_yaml(dict(updates)))))
        if len(chunks) != len(updates):
            raise IntegrityError(f"{name}: could not write frontmatter keys {sorted(updates)}")
        for key in updates:
            # An existing key is rewritten where it stands; a new one goes last.
            dumped = chunks[key].replace("\n", nl)
            lines = _drop_key(lines, key, replace_with=dumped)
            if dumped not in lines:
                appended.append(dumped)
        for key in remove:
            lines = _drop_key(lines, key, replace_with=None)
        new_fm = "".join(lines) + "".join(appended)
        out = data[: parsed.fm_start] + new_fm.encode("utf-8") + data[parsed.fm_end:]
    check = split(out, name)
    expected = {k: v for k, v in parsed.meta.items() if k not in remove}
    expected.update(updates)
    if check.meta != expected or check.body != parsed.body:
        raise IntegrityError(f"{name}: editing frontmatter keys {sorted(updates)} would change other content")
    return out, check


def _entries(dumped: str) -> list[str]:
    """The text of each top-level entry of a dumped mapping, in order (the caller's final
    re-parse checks that each landed where it belongs)."""
    out: list[str] = []
    for line in dumped.splitlines(keepends=True):
        if out and (line.startswith((" ", "- ")) or line.rstrip("\n") == "-"):
            out[-1] += line
        else:
            out.append(line)
    return out


def _key_line(keys: tuple[str, ...]) -> str:
    """The pattern of a line that starts the entry of one of ``keys`` (a top-level key, plain,
    single- or double-quoted): ``set_keys`` edits such lines, ``key_lines`` points at them."""
    names = "|".join(re.escape(key) for key in keys)
    return rf"^(['\"]?)({names})\1[ \t]*:"


@functools.lru_cache(maxsize=256)
def _key_pattern(key: str) -> re.Pattern[str]:
    return re.compile(_key_line((key,)))


def _drop_key(lines: list[str], key: str, replace_with: str | None) -> list[str]:
    out: list[str] = []
    i = 0
    pattern = _key_pattern(key)
    while i < len(lines):
        line = lines[i]
        if pattern.match(line):
            i += 1
            while i < len(lines) and (lines[i][:1] in (" ", "\t", "-") or not lines[i].strip()):
                if lines[i][:1] == "-" and not lines[i].startswith("- ") and lines[i].strip() != "-":
                    break
                i += 1
            if replace_with is not None and replace_with not in out:
                out.append(replace_with)
            continue
        out.append(line)
        i += 1
    return out


def new_okf_id() -> str:
    import uuid  # only where an okf_id is minted: a read verb never needs it

    return str(uuid.uuid4())


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def is_valid_okf_id(value: Any) -> bool:
    return isinstance(value, str) and bool(_UUID.match(value))


_SLUG = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)*$")


def check_slug(slug: str) -> str:
    """A concept slug: lower-case words joined by ``-``; never a path."""
    if not slug or "/" in slug or "\\" in slug or "\x00" in slug or slug in (".", ".."):
        raise ValidationError(f"invalid slug {slug!r}: a slug is a single name, not a path (use --dir for folders)")
    if slug.endswith(".md"):
        slug = slug[:-3]
    if not _SLUG.match(slug):
        raise ValidationError(f"invalid slug {slug!r}: use lower-case letters, digits and '-'")
    if slug in ("index", "log"):
        raise ValidationError(f"invalid slug {slug!r}: index.md and log.md are reserved by OKF")
    return slug


def slugify(text: str) -> str:
    """A file-name slug: NFC, lower-case, every run of characters that are not letters or
    digits (of any script) becomes one ``-``. No ASCII folding: ``Ünïcödé名前 fact`` gives
    ``ünïcödé名前-fact``, not ``n-c-d-fact``."""
    text = nfc(text).lower()
    slug = re.sub(r"[\W_]+", "-", text).strip("-")
    return slug[:60].strip("-") or "concept"


def title_from_name(name: str) -> str:
    """A title for a memory's ``name``: a name written as words (``flaky dns``) is kept as
    written, words and case; a slug (``feedback-testing``) becomes words (``Feedback Testing``)."""
    text = one_line(name)
    return text if " " in text else title_from_path(text)


def first_sentence(text: str) -> str:
    """The first sentence of some markdown prose, for a derived description."""
    for para in re.split(r"\n\s*\n", text):
        stripped = para.strip()
        if not stripped or stripped.startswith(("#", "```", "|", "<!--", "---")):
            continue
        flat = " ".join(stripped.split())
        flat = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", flat)
        match = re.match(r"(.+?[.!?])(?:\s|$)", flat)
        sentence = match.group(1) if match else flat
        return sentence[:300]
    return ""


def title_from_path(path: str) -> str:
    stem = path.rsplit("/", 1)[-1]
    if stem.endswith(".md"):
        stem = stem[:-3]
    words = re.split(r"[-_\s]+", stem)
    return " ".join(w[:1].upper() + w[1:] for w in words if w) or stem


def one_line(value: Any) -> str:
    """A frontmatter value as one line of text (folded descriptions unfolded)."""
    if value is None:
        return ""
    if (type(value) is str and value.isascii() and value.isprintable() and "  " not in value
            and value[:1] != " " and value[-1:] != " "):
        return value  # printable ASCII has no whitespace but the space: already one line
    return " ".join(str(value).split())


# -- key positions --------------------------------------------------------------------------

SUMMARY_KEYS = ("name", "description", "type")  # what a reader needs to summarise a concept
_KEY_LINE = re.compile(rb"^([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:")


@functools.lru_cache(maxsize=64)
def _key_lines_pattern(keys: tuple[str, ...]) -> re.Pattern[bytes]:
    return re.compile(_key_line(keys).encode("utf-8"), re.M)


def key_lines(data: bytes, keys: tuple[str, ...] = SUMMARY_KEYS, *, parsed: Parsed | None = None) -> dict[str, int]:
    """1-based line numbers (in the file) of the top-level frontmatter ``keys`` present, in
    line order: the first line of the frontmatter (as ``fences`` bounds it) that starts
    each key's entry. Lines are counted by LF. ``parsed``: ``split(data)``, whose bounds
    are the fences' (so they are not looked for again)."""
    found = Fences(parsed.fm_start, parsed.fm_end, parsed.fm_end) if parsed is not None and \
        parsed.has_frontmatter else fences(data)
    if found is None:
        return {}
    out: dict[str, int] = {}
    line, counted = 1, 0
    for match in _key_lines_pattern(keys).finditer(data, found.start, found.end):
        key = match.group(2).decode("utf-8")
        if key not in out:
            line += data.count(b"\n", counted, match.start())
            counted = match.start()
            out[key] = line
    return out


def keys_first(data: bytes, keys: tuple[str, ...], within: int) -> bytes | None:
    """``data`` with the top-level entries ``keys`` moved to the top of the frontmatter, or
    None when they already sit within the first ``within`` lines, or when moving them would
    not help or would change what the frontmatter means.

    Only whole top-level entries move (a key line and the indented or list lines under it);
    the body and every other byte stay as they are.
    """
    found = key_lines(data, keys)
    if not found or max(found.values()) <= within:
        return None
    bounds = fences(data)
    assert bounds is not None  # key_lines found keys in it
    entries: list[list[bytes]] = []
    lead: list[bytes] = []  # comments or blank lines before the first key stay first
    for raw in data[bounds.start:bounds.end].split(b"\n")[:-1]:  # the text ends with the fence line's start
        raw += b"\n"
        if _KEY_LINE.match(raw):
            entries.append([raw])
        elif entries:
            entries[-1].append(raw)
        else:
            lead.append(raw)

    def key_of(entry: list[bytes]) -> str:
        match = _KEY_LINE.match(entry[0])
        return match.group(1).decode("ascii") if match else ""

    first = [e for key in keys for e in entries if key_of(e) == key]
    others = [e for e in entries if all(e is not f for f in first)]
    moved = b"".join([*lead, *(x for e in first + others for x in e)])
    out = data[:bounds.start] + moved + data[bounds.end:]
    if max(key_lines(out, keys).values()) > within:
        return None  # the entries themselves are longer than that: nothing to gain
    try:
        same = split(out, "reordered").meta == split(data, "original").meta
    except OkfError:
        same = False
    return out if same else None  # never write a file that means something else


def yaml_problem(exc: ValidationError) -> tuple[str, str, int | None]:
    """What a frontmatter's YAML error is, as a finding: (code, message, line in the file).

    ``yaml-tag`` for a tag okfgit refuses, else ``yaml-invalid``; the line is where the
    construct began, which says more than where the parser gave up (often the end)."""
    import yaml  # only here: a run that parses no YAML (every file cached or in the fast subset) never imports it

    cause = exc.__cause__
    mark = getattr(cause, "context_mark", None) or getattr(cause, "problem_mark", None)
    line = mark.line + 2 if mark is not None else None  # +1 for 1-based, +1 for the opening fence
    if isinstance(cause, _yaml().too_large):
        bound = getattr(cause, "problem", "")
        return "yaml-invalid", f"frontmatter past okfgit's bounds (spec/okf-format.md §1): {bound}", line
    if isinstance(cause, yaml.constructor.ConstructorError):
        tag = re.search(r"'([^']+)'", str(cause.problem or ""))
        what = f"the YAML tag {tag.group(1)!r}" if tag else "a YAML tag"
        return "yaml-tag", (f"frontmatter uses {what}, which okfgit refuses "
                            "(YAML is loaded safely: no Python or custom tags)"), line
    problem = getattr(cause, "problem", None) or str(exc)
    context = getattr(cause, "context", None)
    return "yaml-invalid", f"frontmatter is not valid YAML: {context + ': ' if context else ''}{problem}", line
