"""The plain frontmatter most concepts have, read without PyYAML: a fast path that first
projection and a cold doctor at 10,000 concepts need (spec/okf-layout.md, "Fast paths we
keep"). PyYAML's constructor is pure Python even with libyaml, and reading every concept's
frontmatter with it makes those runs half again as long.

Frontmatter written by okfgit (and most written by people) is a flat mapping of plain or
simply quoted strings, flow or block lists of them, and one-level mappings such as
``generated: {by, at}`` written as a block. ``parse`` handles exactly that subset and returns
None for anything else (comments, anchors, tags, block scalars, multi-line scalars, flow
mappings, lists of mappings, tabs, CR, escapes...), so ``concept.load_yaml`` falls back to
PyYAML. Within the subset the result equals what okfgit's PyYAML loader gives (tests compare
them on every file we have and on generated input): a plain scalar that any implicit resolver
claims (a number, a boolean, null, ``=``, ``<<``) is never guessed at here; it falls back too.
"""

from __future__ import annotations

import functools
import re
from typing import Any

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


# PyYAML's implicit resolvers (yaml/resolver.py, YAML 1.1) as okfgit's loader holds them, that
# is without the timestamp resolver: which plain scalars are not strings, by first character.
# A copy, so that a run reading only the plain subset never imports PyYAML; a test holds it
# equal to the loader's own.
_IMPLICIT = (
    ("tag:yaml.org,2002:bool", r"""^(?:yes|Yes|YES|no|No|NO
                    |true|True|TRUE|false|False|FALSE
                    |on|On|ON|off|Off|OFF)$""", re.X, "yYnNtTfFoO"),
    ("tag:yaml.org,2002:float", r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X, "-+0123456789."),
    ("tag:yaml.org,2002:int", r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+
                    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""", re.X, "-+0123456789"),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", 0, "<"),
    ("tag:yaml.org,2002:null", r"""^(?: ~
                    |null|Null|NULL
                    | )$""", re.X, ("~", "n", "N", "")),
    ("tag:yaml.org,2002:value", r"^(?:=)$", 0, "="),
    ("tag:yaml.org,2002:yaml", r"^(?:!|&|\*)$", 0, "!&*"),
)


def _resolvers() -> dict[str, tuple[re.Pattern[str], ...]]:
    out: dict[str, list[re.Pattern[str]]] = {}
    for _, pattern, flags, firsts in _IMPLICIT:
        compiled = re.compile(pattern, flags)
        for first in firsts:
            out.setdefault(first, []).append(compiled)
    return {first: tuple(patterns) for first, patterns in out.items()}


def parse(text: str) -> dict[str, Any] | None:
    """The mapping ``text`` holds, or None when it is outside the simple subset."""
    if text.isascii():
        if text.encode().translate(None, _ASCII_PRINTABLE):  # a character left is a control character
            return None
    elif _not_printable().search(text):
        return None
    if not text or text.isspace():  # (what ``not text.strip()`` says, without a copy)
        return None  # PyYAML says None for an empty document; let it
    lines = list(filter(None, text.split("\n")))  # a line of spaces ends the fast path in a block
    claims = _claims()
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
                    for pattern in claims.by_first.get(first, ()):  # a plain scalar: _resolved
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
    for pattern in claims.by_first.get(text[0], ()):
        if pattern.match(text):
            raise _Fallback
    return text


_MEMO_LIMIT = 50_000


class Claims:
    """The resolvers' patterns by a scalar's first character (PyYAML's lookup), and what
    earlier files showed: the short strings found to be plain strings, the top-level lines
    and keys read before."""

    def __init__(self) -> None:
        self.by_first = _resolvers()
        self.plain: set[str] = set()
        self.lines: dict[str, tuple[str, Any]] = {}  # a top-level "key: value" line -> its key and value
        self.line_keys: set[str] = set()  # top-level keys _KEY matched and _plain took


@functools.cache
def _claims() -> Claims:
    """The one ``Claims``, made on the first parse (compiling the patterns is not free)."""
    return Claims()
