"""A fast path for the plain frontmatter most concepts have; PyYAML does the rest.

PyYAML's constructor is pure Python even with libyaml, about 90 µs for a typical
concept's frontmatter: at 10,000 concepts that is most of what ``doctor`` and
``index --check`` cost. Frontmatter written by okfgit (and most written by people) is a
flat mapping of plain or simply quoted strings, flow or block lists of them, and
one-level mappings such as ``generated: {by, at}`` written as a block.

``parse`` handles exactly that subset and returns None for anything else (comments,
anchors, tags, block scalars, multi-line scalars, flow mappings, lists of mappings,
tabs, CR, escapes...), so the caller falls back to PyYAML. Within the subset the result
equals ``yaml.load`` with the caller's resolvers (tests compare them on every file we
have and on generated input): a plain scalar that any implicit resolver claims (a
number, a boolean, null, ``=``, ``<<``) is never guessed at here; it falls back too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

Resolvers = Mapping[Any, Sequence[tuple[str, re.Pattern[str]]]]

# Values keep their trailing spaces here (greedy, no backtracking); callers strip them.
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?$")
_NESTED_KEY = re.compile(r"( +)([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?$")
_ITEM = re.compile(r"( *)- +(.*)$")
_SINGLE = re.compile(r"^'((?:[^']|'')*)'$")
_DOUBLE = re.compile(r'^"([^"\\]*)"$')
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# In flow context ([a, b]) the flow indicators end a scalar, so they may not appear in one.
_FLOW_PLAIN = re.compile(r"^[^\s\-?:,\[\]{}#&*!|>'\"%@`][^,\[\]{}#:\t]*(?<!\s)$")
# YAML's printable set minus its other line breaks (NEL, LS, PS) and the BOM; anything
# outside it is PyYAML's to judge. The full class costs milliseconds to compile, so
# ASCII text (the usual case) is checked by deleting that set's bytes (what is left is a
# control character) and the full class is lazy.
_ASCII_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\n"


@functools.lru_cache(maxsize=1)
def _not_printable() -> re.Pattern[str]:
    return re.compile("[^\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


class _Fallback(Exception):
    pass


def parse(text: str, resolvers: Resolvers) -> dict[str, Any] | None:
    """The mapping ``text`` holds, or None when it is outside the simple subset."""
    if text.isascii():
        if text.encode().translate(None, _ASCII_PRINTABLE):  # a character left is a control character
            return None
    elif _not_printable().search(text):
        return None
    if not text or text.isspace():  # (what ``not text.strip()`` says, without a copy)
        return None  # PyYAML says None for an empty document; let it
    lines = list(filter(None, text.split("\n")))  # a line of spaces ends the fast path in a block
    claims = _claims(resolvers)
    known = claims.lines
    keys = claims.line_keys
    out: dict[str, Any] = {}
    i = 0
    try:
        while i < len(lines):
            line = lines[i]
            i += 1
            pair = known.get(line)
            if pair is not None:  # "type: Note", "scope: project": the same lines in file after file
                key, value = pair
                out[key] = list(value) if type(value) is tuple else value
                continue
            colon = line.find(":")
            key = line[:colon]
            if colon > 0 and key in keys:  # a key seen before: what _KEY would match, without the regex
                value = line[colon + 1:]
                if value and value[0] != " ":
                    return None
                value = value.strip(" ")
            else:
                match = _KEY.match(line)
                if match is None:
                    if line.isspace():
                        continue  # a blank line between keys
                    return None
                key, value = match.group(1, 2)
                value = value.rstrip(" ") if value else value
                key = _plain(key, claims)
                if len(keys) < _MEMO_LIMIT:
                    keys.add(key)
            if value:
                first = value[0]
                if (first not in _INDICATORS and not first.isspace() and ": " not in value and " #" not in value
                        and "\t" not in value and value[-1] != ":" and not value[-1].isspace()):
                    for pattern in claims.by_first.get(first, claims.wildcard):  # a plain scalar: _resolved
                        if pattern.match(value):
                            raise _Fallback
                    parsed: Any = value
                else:
                    parsed = _value(value, claims)
                out[key] = parsed
                if len(line) < 40 and len(known) < _MEMO_LIMIT:  # short lines repeat; titles and ids do not
                    known[line] = (key, tuple(parsed) if type(parsed) is list else parsed)
            else:
                out[key], i = _block(lines, i, claims)
    except _Fallback:
        return None
    return out


def _block(lines: list[str], i: int, claims: Claims) -> tuple[Any, int]:
    """What follows ``key:`` on the next lines: a list, a one-level mapping, or null."""
    if i >= len(lines) or lines[i][0] not in " -":
        return None, i
    item = _ITEM.match(lines[i])
    if item is not None:
        indent = len(item.group(1))
        items: list[Any] = []
        while i < len(lines) and (item := _ITEM.match(lines[i])) is not None and len(item.group(1)) == indent:
            items.append(_scalar(item.group(2).rstrip(" "), claims))
            i += 1
        return items, _next_top(lines, i)
    nested = _NESTED_KEY.match(lines[i])
    if nested is None:
        raise _Fallback  # a continuation line or something deeper
    indent = len(nested.group(1))
    mapping: dict[str, Any] = {}
    while (i < len(lines) and (nested := _NESTED_KEY.match(lines[i])) is not None
           and len(nested.group(1)) == indent and nested.group(3) and nested.group(3).strip(" ")):
        mapping[_plain(nested.group(2), claims)] = _value(nested.group(3).rstrip(" "), claims)
        i += 1
    return mapping, _next_top(lines, i)


def _next_top(lines: list[str], i: int) -> int:
    """A block ends at a top-level key; anything else there is outside the subset."""
    if i < len(lines) and lines[i][0] in " -":
        raise _Fallback
    return i


def _value(text: str, claims: Claims) -> Any:
    if text[0] == "[":
        return _flow_sequence(text, claims)
    return _scalar(text, claims)


def _flow_sequence(text: str, claims: Claims) -> list[Any]:
    if text[-1] != "]":
        raise _Fallback
    inner = text[1:-1].strip()
    if not inner:
        return []
    out = []
    for part in inner.split(","):
        part = part.strip()
        if not _FLOW_PLAIN.match(part):
            raise _Fallback
        out.append(_resolved(part, claims))
    return out


def _scalar(text: str, claims: Claims) -> str:
    if not text:
        raise _Fallback
    first = text[0]
    if first == "'":
        single = _SINGLE.match(text)
        if single is None:
            raise _Fallback
        return single.group(1).replace("''", "'")
    if first == '"':
        double = _DOUBLE.match(text)
        if double is None:
            raise _Fallback
        return double.group(1)
    return _plain(text, claims)


def _plain(text: str, claims: Claims) -> str:
    if text in claims.plain:  # keys, types, scopes and tags repeat from file to file
        return text
    # A plain scalar in block context: no indicator or space first, no ": " or " #"
    # inside (a mapping value, a comment), no tab, not ending in ":" or a space.
    if (text[0] in _INDICATORS or text[0].isspace() or ": " in text or " #" in text or "\t" in text
            or text[-1] == ":" or text[-1].isspace()):
        raise _Fallback
    _resolved(text, claims)
    if len(text) < 40 and len(claims.plain) < _MEMO_LIMIT:
        claims.plain.add(text)
    return text


def _resolved(text: str, claims: Claims) -> str:
    """A plain scalar is a string only when no implicit resolver claims it (as PyYAML decides)."""
    for pattern in claims.by_first.get(text[0], claims.wildcard):
        if pattern.match(text):
            raise _Fallback
    return text


_MEMO_LIMIT = 50_000


class Claims:
    """The resolvers' patterns by a scalar's first character (PyYAML's lookup, wildcard
    patterns appended), and the short strings already found to be plain strings."""

    def __init__(self, resolvers: Resolvers) -> None:
        self.resolvers = resolvers
        self.wildcard = tuple(p for _, p in resolvers.get(None, ()))
        self.by_first = {k: tuple(p for _, p in v) + self.wildcard for k, v in resolvers.items() if k}
        self.plain: set[str] = set()
        self.dumped: dict[str, str] = {}  # dump: short strings as written, when simple
        self.keys: set[str] = set()  # dump: keys written as they are
        self.lines: dict[str, tuple[str, Any]] = {}  # a top-level "key: value" line -> its key and value
        self.line_keys: set[str] = set()  # top-level keys _KEY matched and _plain took


_CACHE: dict[int, Claims] = {}


def _claims(resolvers: Resolvers) -> Claims:
    cached = _CACHE.get(id(resolvers))
    if cached is None or cached.resolvers is not resolvers:
        cached = _CACHE[id(resolvers)] = Claims(resolvers)
    return cached


# -- writing ------------------------------------------------------------------------------

# A string PyYAML writes as it is (plain) or in single quotes, without escapes: printable
# ASCII, starting with a letter or digit, no quote, ``: `` or other indicator that could change its style.
_SIMPLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _./:@+=-]*[A-Za-z0-9_./@+=-]$|[A-Za-z0-9]$")
_DUMP_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def dump(mapping: Mapping[str, Any], resolvers: Resolvers) -> str | None:
    """``mapping`` as PyYAML's block style writes it (``default_flow_style=False``, no
    sorting, no line folding), or None when it holds anything beyond the simple subset:
    strings of ``_SIMPLE``, and one-level mappings of them. ``resolvers`` are the dumper's:
    a string one of them claims (a timestamp, a number, a boolean) is single-quoted, as
    PyYAML quotes it. Tests compare the two on generated input."""
    claims = _claims(resolvers)
    out: list[str] = []
    try:
        for key, value in mapping.items():
            out.append(f"{_dump_key(key, claims)}:")
            if isinstance(value, str):
                out.append(f" {_dump_str(value, claims)}\n")
            elif isinstance(value, dict) and value:
                out.append("\n")
                for sub, text in value.items():
                    if not isinstance(text, str):
                        return None
                    out.append(f"  {_dump_key(sub, claims)}: {_dump_str(text, claims)}\n")
            else:
                return None
    except _Fallback:
        return None
    return "".join(out)


def _dump_key(key: Any, claims: Claims) -> str:
    if key in claims.keys:
        return str(key)
    if not isinstance(key, str) or not _DUMP_KEY.match(key):
        raise _Fallback
    _resolved(key, claims)
    if len(claims.keys) < _MEMO_LIMIT:
        claims.keys.add(key)
    return key


def _dump_str(text: str, claims: Claims) -> str:
    known = claims.dumped.get(text)  # keys, types, scopes, actors repeat from file to file
    if known is not None:
        return known
    if not _SIMPLE.match(text) or "  " in text or ": " in text:
        raise _Fallback
    try:
        out = _resolved(text, claims)
    except _Fallback:
        out = f"'{text}'"
    if len(text) < 40 and len(claims.dumped) < _MEMO_LIMIT:
        claims.dumped[text] = out
    return out
