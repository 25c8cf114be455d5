"""Provenance trailers: format them and parse them back (spec/okf-trailers.md).

pygit2's ``Commit.message_trailers`` collapses repeated keys and mishandles folded and
CRLF lines, so okfgit parses trailers itself; the tests hold this parser to what
``git interpret-trailers --parse`` prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from okfgit.errors import IntegrityError

Trailer = tuple[str, str]

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$")


def format_message(subject: str, trailers: Sequence[Trailer], body: str = "") -> str:
    """A commit message: subject, optional body, then one paragraph of trailers, LF only."""
    subject = " ".join(subject.split())
    if not subject:
        raise IntegrityError("a commit needs a subject")
    parts = [subject]
    if body.strip():
        parts.append(body.strip("\n").replace("\r\n", "\n"))
    if trailers:
        parts.append("\n".join(format_trailer(k, v) for k, v in trailers))
    return "\n\n".join(parts) + "\n"


def format_trailer(key: str, value: str) -> str:
    if not _KEY.match(key) or not key.isascii():
        raise IntegrityError(f"invalid trailer key {key!r}")
    if any(ch in value for ch in "\r\n\x00"):
        raise IntegrityError(f"trailer {key} value must be one line: {value!r}")
    return f"{key}: {value.strip()}"


def path_field(path: str) -> str:
    """A path as one space-separated field of a trailer value: ``%`` as ``%25``, space as ``%20``."""
    return path.replace("%", "%25").replace(" ", "%20")


def parse_trailers(message: str | bytes) -> list[Trailer]:
    """Trailers of a commit message, in order, repeated keys kept, folded lines joined."""
    if isinstance(message, bytes):
        message = message.decode("utf-8", errors="replace")
    lines = [line.rstrip("\r") for line in message.split("\n")]
    lines = [line for line in lines if not line.startswith("#")]
    while lines and not lines[-1].strip():
        lines.pop()
    start = len(lines)
    while start > 0 and lines[start - 1].strip():
        start -= 1
    if start == 0:
        # git never reads the subject paragraph as trailers
        return []
    block = lines[start:]
    result: list[list[str]] = []
    for line in block:
        if line[:1] in (" ", "\t"):
            if not result:
                return []
            result[-1][1] = f"{result[-1][1]} {line.strip()}".strip()
            continue
        match = _LINE.match(line)
        if not match:
            return []
        result.append([match.group(1), match.group(2).strip()])
    return [(k, v) for k, v in result]


def values(trailers: Iterable[Trailer], key: str) -> list[str]:
    """Every value of ``key`` (case-insensitive, as git compares trailer keys)."""
    wanted = key.lower()
    return [v for k, v in trailers if k.lower() == wanted]
