"""Adding and removing one MCP server entry in an agent's JSON or TOML config, as text.

Bytes in, data out. The files belong to a person (or to the agent, which rewrites them), so
an edit is a ``Splice``: one span of text replaced, everything else kept byte for byte, the
indentation and newlines of the file followed. The JSON and TOML libraries read the file
(validity, the current entry); the edit itself is textual so that it can be undone exactly.

JSON (Claude Code's ``.mcp.json`` and ``~/.claude.json``, Cursor's ``mcp.json``): the entry
is ``"<name>": {...}`` inside the top-level ``"mcpServers"`` object. TOML (Codex's
``config.toml``): the entry is the table ``[mcp_servers.<name>]``.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from okfgit.format import json_object
from okfgit.errors import IntegrityError

_WS = re.compile(r"[ \t\n\r]*")
JSON_KEY = "mcpServers"
TOML_KEY = "mcp_servers"


@dataclass(frozen=True, slots=True)
class Splice:
    """``text[offset:offset+len(removed)]`` became ``inserted``."""

    offset: int
    removed: str
    inserted: str

    def apply(self, text: str) -> str:
        assert text[self.offset:self.offset + len(self.removed)] == self.removed
        return text[:self.offset] + self.inserted + text[self.offset + len(self.removed):]

    def undo(self, text: str) -> str | None:
        """The text before the splice, or None when ``text`` no longer holds what it inserted."""
        end = self.offset + len(self.inserted)
        if text[self.offset:end] != self.inserted:
            return None
        return text[:self.offset] + self.removed + text[end:]


# -- JSON ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int


@dataclass(frozen=True, slots=True)
class _Object:
    open: int  # index of "{"
    close: int  # index of "}"
    members: list[_Member]

    def get(self, key: str) -> _Member | None:
        return next((m for m in self.members if m.key == key), None)


def json_entry(text: str, where: str, name: str) -> Any:
    """The current entry ``name`` (None when absent); IntegrityError for a file okfgit
    will not edit (not JSON, not an object, ``mcpServers`` not an object)."""
    return _entry(_load_json(text, where).get(JSON_KEY), f'"{JSON_KEY}" is not an object', where, name)


def json_set(text: str | None, where: str, name: str, entry: dict[str, Any]) -> Splice | None:
    """The splice that makes ``mcpServers.<name>`` equal ``entry`` (None: it already is)."""
    if text is None or not text.strip():
        nl, unit = "\n", "  "
        body = _render({name: entry}, unit, unit, nl, compact=False)
        return Splice(0, text or "", "{" + nl + unit + json.dumps(JSON_KEY) + ": " + body + nl + "}" + nl)
    current = json_entry(text, where, name)
    if current == entry:
        return None
    nl = "\r\n" if "\r\n" in text else "\n"
    top = _object(text, _start(text))
    unit = _indent_of(text, top) or "  "
    compact = bool(top.members) and _indent_of(text, top) is None
    servers = top.get(JSON_KEY)
    if servers is None:
        return _insert_member(text, top, JSON_KEY, {name: entry}, "", unit, nl, compact)
    obj = _object(text, servers.value_start)
    level = _line_indent(text, servers.key_start)
    found = obj.get(name)
    if found is not None:
        at = _line_indent(text, found.key_start)
        inner_compact = _indent_of(text, obj) is None
        return Splice(found.value_start, text[found.value_start:found.value_end],
                      _render(entry, unit, at, nl, compact=inner_compact))
    return _insert_member(text, obj, name, entry, level, unit, nl, compact and _indent_of(text, obj) is None)


def json_remove(text: str, where: str, name: str) -> Splice | None:
    """The splice that removes ``mcpServers.<name>`` (None: it is not there); the
    ``mcpServers`` object stays, even when it is left empty."""
    servers_data = _load_json(text, where).get(JSON_KEY)
    if not isinstance(servers_data, dict) or name not in servers_data:
        return None
    top = _object(text, _start(text))
    servers = top.get(JSON_KEY)
    assert servers is not None
    obj = _object(text, servers.value_start)
    index = next(i for i, m in enumerate(obj.members) if m.key == name)
    member = obj.members[index]
    if len(obj.members) == 1:
        start, end = obj.open + 1, obj.close
    elif index == 0:
        start, end = member.key_start, obj.members[1].key_start
    else:
        start, end = obj.members[index - 1].value_end, member.value_end
    return Splice(start, text[start:end], "")


def _insert_member(text: str, obj: _Object, key: str, value: Any, level: str, unit: str, nl: str,
                   compact: bool) -> Splice:
    """Add ``"key": value`` as the last member of ``obj`` (whose own line is indented ``level``)."""
    if obj.members:
        last = obj.members[-1]
        at = _line_indent(text, obj.members[0].key_start)
        sep = ", " if compact else "," + nl + at
        return Splice(last.value_end, "", sep + json.dumps(key, ensure_ascii=False) + ": "
                      + _render(value, unit, at, nl, compact))
    inner = text[obj.open + 1:obj.close]
    if compact:
        return Splice(obj.open + 1, inner, json.dumps(key, ensure_ascii=False) + ": " + _render(value, unit, "", nl, True))
    at = level + unit
    return Splice(obj.open + 1, inner, nl + at + json.dumps(key, ensure_ascii=False) + ": "
                  + _render(value, unit, at, nl, False) + nl + level)


def _render(value: Any, unit: str, at: str, nl: str, compact: bool) -> str:
    if compact:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    lines = json.dumps(value, ensure_ascii=False, indent=unit).split("\n")
    return (nl + at).join(lines)


def _load_json(text: str, where: str) -> dict[str, Any]:
    return json_object.load(text[_start(text):], where)


def _start(text: str) -> int:
    """Where the JSON value starts: after a BOM and leading whitespace."""
    i = 1 if text.startswith("\ufeff") else 0
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _object(text: str, start: int) -> _Object:
    """The members of the (valid) JSON object whose ``{`` is at ``start``."""
    decoder = json.JSONDecoder()
    i = _skip(text, start + 1)
    members: list[_Member] = []
    if text[i] == "}":
        return _Object(start, i, members)
    while True:
        key_start = i
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _skip(text, _skip(text, i) + 1)  # past ":"
        value_start = i
        _, i = decoder.raw_decode(text, i)
        members.append(_Member(key, key_start, value_start, i))
        i = _skip(text, i)
        if text[i] == "}":
            return _Object(start, i, members)
        i = _skip(text, i + 1)  # past ","


def _skip(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _line_indent(text: str, i: int) -> str:
    """The whitespace before ``text[i]`` on its line (empty when something else precedes it)."""
    line_start = text.rfind("\n", 0, i) + 1
    before = text[line_start:i]
    return before if not before.strip() else ""


def _indent_of(text: str, obj: _Object) -> str | None:
    """The indentation unit of a pretty-printed object, None for one written on one line."""
    if not obj.members:
        return None
    first = obj.members[0]
    if "\n" not in text[obj.open:first.key_start]:
        return None
    return _line_indent(text, first.key_start) or None


# -- TOML ------------------------------------------------------------------------------


def toml_entry(text: str, where: str, name: str) -> Any:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise IntegrityError(f"{where}: not valid TOML ({exc}); not rewriting it (nothing was changed)") from None
    return _entry(data.get(TOML_KEY), f"{TOML_KEY} is not a table", where, name)


def _entry(servers: Any, problem: str, where: str, name: str) -> Any:
    """``servers[name]`` (None when absent); IntegrityError when ``servers`` is no mapping."""
    if servers is not None and not isinstance(servers, dict):
        raise IntegrityError(f"{where}: {problem}; not rewriting it (nothing was changed)")
    return None if servers is None else servers.get(name)


def toml_set(text: str | None, where: str, name: str, entry: dict[str, Any]) -> Splice | None:
    """The splice that makes ``[mcp_servers.<name>]`` equal ``entry`` (None: it already is)."""
    text = text or ""
    current = toml_entry(text, where, name)
    if current == entry:
        return None
    nl = "\r\n" if "\r\n" in text else "\n"
    block = _toml_block(name, entry, nl)
    if current is not None:
        start, end = _toml_span(text, where, name)
        return Splice(start, text[start:end], block)
    sep = "" if not text else nl if text.endswith("\n") else nl + nl
    return Splice(len(text), "", sep + block)


def toml_remove(text: str, where: str, name: str) -> Splice | None:
    """The splice that removes the table ``[mcp_servers.<name>]`` (and its subtables), with
    the blank line before it."""
    if toml_entry(text, where, name) is None:
        return None
    start, end = _toml_span(text, where, name)
    nl = "\r\n" if "\r\n" in text else "\n"
    if text[:start].endswith(nl + nl):
        start -= len(nl)  # the blank line okfgit puts before the table it appends
    return Splice(start, text[start:end], "")


def _toml_block(name: str, entry: dict[str, Any], nl: str) -> str:
    lines = [f"[{TOML_KEY}.{name}]"]
    for key, value in entry.items():
        lines.append(f"{key} = {_toml_value(value)}")
    return nl.join(lines) + nl


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ValueError(f"no TOML form for {value!r}")


_HEADER = re.compile(r"^[ \t]*\[\[?[ \t]*([^\]]*?)[ \t]*\]\]?[ \t]*(?:#.*)?$")


def _toml_span(text: str, where: str, name: str) -> tuple[int, int]:
    """From the line ``[mcp_servers.<name>]`` to its last non-blank line before the next
    table that is not one of its subtables."""
    main = [TOML_KEY, name]
    offset = 0
    start = end = None
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line.rstrip("\r\n"))
        if header:
            parts = [p.strip().strip('"').strip("'") for p in header.group(1).split(".")]
            if start is None and parts == main:
                start = offset
            elif start is not None and parts[:2] != main:
                break
        if start is not None and line.strip():
            end = offset + len(line)
        offset += len(line)
    if start is None or end is None:
        raise IntegrityError(f"{where}: the {TOML_KEY}.{name} entry is not written as a [{TOML_KEY}.{name}] "
                             "table; okfgit does not rewrite it (change or remove it by hand)")
    return start, end
