"""``log.md`` files (OKF §9): dated groups under ``## YYYY-MM-DD`` headings, newest first,
each entry a list item that is never edited (a correction is a new entry)."""

from __future__ import annotations

import re
from typing import NamedTuple

from okfgit.errors import UsageError, ValidationError
from okfgit.format import concept as okf

NAME = "log.md"
_DATE_HEADING = re.compile(r"^##[ \t]+(\d{4}-\d{2}-\d{2})[ \t]*$")
_ITEM = re.compile(r"^[ \t]{0,3}[-*+][ \t]")


def add_entry(data: bytes | None, day: str, text: str, title: str) -> bytes:
    """``data`` with ``- text`` added as the newest entry of the ``## day`` group.

    Only bytes are inserted: every existing entry keeps its bytes. The group is created
    where date order (newest first) puts it when it does not exist yet.
    """
    entry = " ".join(text.split())
    if not entry:
        raise UsageError("a log entry needs some text")
    if data is None:
        return f"{title}\n\n## {day}\n- {entry}\n".encode()
    okf.check_text(data, NAME)
    text_in = data.decode("utf-8")
    nl = "\r\n" if "\r\n" in text_in else "\n"
    lines = text_in.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    groups = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _DATE_HEADING.match(line.rstrip("\r\n")))]
    for i, date in groups:
        if date == day:
            return _insert(data, offsets[_first_item(lines, i)], f"- {entry}{nl}")
    later = [i for i, date in groups if date < day]
    if later:
        return _insert(data, offsets[later[0]], f"## {day}{nl}- {entry}{nl}{nl}")
    return data + f"{_separator(data, nl)}## {day}{nl}- {entry}{nl}".encode()


def _separator(data: bytes, nl: str) -> str:
    """What goes between existing text and an appended group: one blank line."""
    if not data or data.endswith((b"\n\n", b"\r\n\r\n")):
        return ""
    return nl if data.endswith(b"\n") else nl + nl


def _first_item(lines: list[str], heading: int) -> int:
    """Where a new entry goes in the group under ``heading``: before its first item."""
    i = heading + 1
    while i < len(lines) and not _DATE_HEADING.match(lines[i].rstrip("\r\n")):
        if _ITEM.match(lines[i]):
            return i
        i += 1
    return heading + 1


def _insert(data: bytes, at: int, text: str) -> bytes:
    return data[:at] + text.encode("utf-8") + data[at:]


def entries(data: bytes) -> list[tuple[str, str]]:
    """Every entry as ``(day, text)``: the item line and its continuation lines (indented, up
    to the next item, heading or blank line), line ends normalised; in file order. An item
    outside any dated group has day ``""``."""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    out: list[tuple[str, str]] = []
    day = ""
    current: list[str] | None = None
    for line in text.split("\n"):
        heading = _DATE_HEADING.match(line)
        if heading or line.startswith("#") or not line.strip():
            current = None
            if heading:
                day = heading.group(1)
            continue
        if _ITEM.match(line):
            current = [line.rstrip()]
            out.append((day, ""))
        elif current is not None:
            current.append(line.rstrip())
        else:
            continue
        out[-1] = (day, "\n".join(current))
    return out


def rewritten(old: bytes, new: bytes | None) -> list[tuple[str, str]]:
    """The entries of ``old`` that ``new`` no longer has, word for word under the same day
    (all of them when the log is removed): OKF §9's log is append-only."""
    kept = set(entries(new)) if new is not None else set()
    return [entry for entry in entries(old) if entry not in kept]


# -- a log as written, for a merge of two -----------------------------------------------


_LEVEL2 = re.compile(r"^##(?:[ \t]|$)")
_HEADING = re.compile(r"^#{1,6}(?:[ \t]|$)")


class Group(NamedTuple):
    """One date group as written: its heading line, its entries, the blank lines after it."""

    heading: str
    items: list[str]  # each entry with its continuation lines, endings included; prose kept as an item
    tail: str  # the blank lines after the group


class Log(NamedTuple):
    """A log as written: the text above the first date group, then the groups."""

    preamble: str
    groups: dict[str, Group]  # by date, in the file's order


def read(data: bytes, path: str) -> Log:
    """``data`` cut into its parts, every byte kept (an entry with its continuation lines and the
    blank lines inside its group); ValidationError for a log whose structure it cannot trust (a
    date group twice, another heading of level 1 or 2)."""
    text = okf.check_text(data, path) if data else ""
    lines = text.splitlines(keepends=True)
    preamble: list[str] = []
    groups: dict[str, Group] = {}
    current: str | None = None
    for line in lines:
        content = line.rstrip("\r\n")
        date = _DATE_HEADING.match(content)
        if date:
            if date.group(1) in groups:
                raise ValidationError(f"{path}: the date group {date.group(1)} appears twice")
            current = date.group(1)
            groups[current] = Group(line, [], "")
            continue
        if current is None:
            preamble.append(line)
            continue
        if _LEVEL2.match(content) or _HEADING.match(content) and not content.startswith("###"):
            raise ValidationError(f"{path}: a heading that is no date group ({content!r})")
        group = groups[current]
        if not content.strip():
            groups[current] = group._replace(tail=group.tail + line)
        elif group.items and not group.tail and not _ITEM.match(content) and not content.startswith("#"):
            group.items[-1] += line  # a continuation line of the entry above
        else:
            if group.items:  # a blank line inside the group stays with what precedes it
                group.items[-1] += group.tail
                group = group._replace(tail="")
            groups[current] = Group(group.heading + group.tail, group.items + [line], "")
    return Log("".join(preamble), groups)
