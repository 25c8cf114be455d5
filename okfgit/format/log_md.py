"""``log.md`` files (OKF §9): dated groups under ``## YYYY-MM-DD`` headings, newest first,
each entry a list item that is never edited (a correction is a new entry)."""

from __future__ import annotations

import re
from typing import NamedTuple

from okfgit.errors import UsageError
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
    log = read(data, NAME)
    nl = "\r\n" if b"\r\n" in data else "\n"
    line = f"- {entry}{nl}"
    groups = list(log.groups)
    for n, group in enumerate(groups):
        if group.date == day:
            first = next((i for i, item in enumerate(group.items) if _ITEM.match(item)), None)
            if first is None:  # right under the heading: after a blank line it would continue a paragraph
                end = len(group.heading.splitlines(keepends=True)[0])
                groups[n] = group._replace(heading=group.heading[:end] + line + group.heading[end:])
            else:
                groups[n] = group._replace(items=[*group.items[:first], line, *group.items[first:]])
            return render(log._replace(groups=groups))
    later = next((n for n, group in enumerate(groups) if group.date < day), None)
    if later is not None:
        groups.insert(later, Group(day, f"## {day}{nl}", [line], nl))
        return render(log._replace(groups=groups))
    return data + f"{_separator(data, nl)}## {day}{nl}{line}".encode()


def _separator(data: bytes, nl: str) -> str:
    """What goes between existing text and an appended group: one blank line."""
    if not data or data.endswith((b"\n\n", b"\r\n\r\n")):
        return ""
    return nl if data.endswith(b"\n") else nl + nl


class Group(NamedTuple):
    """One date group as written: its heading line (and the blank lines right under it), its
    entries, the blank lines after it."""

    date: str
    heading: str
    items: list[str]  # each entry with its continuation lines, endings included; prose kept as an item
    tail: str  # the blank lines after the group


class Log(NamedTuple):
    """A log as written: the text above the first date group, then the groups in the file's
    order, and what makes its structure untrustworthy (a date group twice, another heading
    of level 1 or 2), for a merge to refuse; every byte is in one of the parts."""

    preamble: str
    groups: list[Group]
    problems: list[str]

    def entries(self) -> list[tuple[str, str]]:
        """Every entry as ``(day, text)``, line ends and trailing blanks left out: what an
        edit of the log must keep (OKF §9's entries are never edited)."""
        return [(group.date, _normalised(item)) for group in self.groups for item in group.items]


_LEVEL2 = re.compile(r"^##(?:[ \t]|$)")
_HEADING = re.compile(r"^#{1,6}(?:[ \t]|$)")


def read(data: bytes, path: str) -> Log:
    """``data`` cut into its parts, every byte kept: an entry with its continuation lines and
    the blank lines inside its group. ValidationError when it is no text (not UTF-8, binary)."""
    text = okf.check_text(data, path) if data else ""
    preamble: list[str] = []
    groups: list[Group] = []
    problems: list[str] = []
    for line in text.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        date = _DATE_HEADING.match(content)
        if date:
            if any(group.date == date.group(1) for group in groups):
                problems.append(f"{path}: the date group {date.group(1)} appears twice")
            groups.append(Group(date.group(1), line, [], ""))
            continue
        if not groups:
            preamble.append(line)
            continue
        if _LEVEL2.match(content) or _HEADING.match(content) and not content.startswith("###"):
            problems.append(f"{path}: a heading that is no date group ({content!r})")
        group = groups[-1]
        if not content.strip():
            groups[-1] = group._replace(tail=group.tail + line)
        elif group.items and not group.tail and not _ITEM.match(content) and not content.startswith("#"):
            group.items[-1] += line  # a continuation line of the entry above
        elif group.items:  # a blank line inside the group stays with what precedes it
            group.items[-1] += group.tail
            group.items.append(line)
            if group.tail:
                groups[-1] = group._replace(tail="")
        else:
            groups[-1] = group._replace(heading=group.heading + group.tail, items=[line], tail="")
    return Log("".join(preamble), groups, problems)


def render(log: Log) -> bytes:
    """A log's bytes from its parts (``read``'s inverse)."""
    parts = [log.preamble]
    for group in log.groups:
        parts += [group.heading, *group.items, group.tail]
    return "".join(parts).encode("utf-8")


def _normalised(item: str) -> str:
    return "\n".join(line.rstrip() for line in item.splitlines()).rstrip("\n")


def rewritten(old: bytes, new: bytes | None, path: str = NAME) -> list[tuple[str, str]]:
    """The entries of ``old`` that ``new`` no longer has, word for word under the same day
    (all of them when the log is removed): OKF §9's log is append-only."""
    kept = set(read(new, path).entries()) if new is not None else set()
    return [entry for entry in read(old, path).entries() if entry not in kept]
