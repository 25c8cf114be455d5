"""Path-valued frontmatter fields (OKF v0.2 §6.2): ``resource``, ``sources[].resource``,
``computation``, ``executor.resource`` and ``attester.resource``.

Each names an absolute URL (never checked), a bundle-absolute path (``/tables/orders.md``), a
path relative to the concept's folder (``../tables/orders.md``), or a bundle-relative path
(``policies/revenue-recognition.md`` written in ``computations/x.md``: OKF §5.1, as the
reference bundle acme_retail writes its sources). A value that does not look like a path (a
scope descriptor such as ``all queries in project acme``, a table id ``acme.sales.orders``) is
none of okfgit's business. Doctor checks that each path resolves; ``adopt --dir`` re-roots
them as it does bundle-absolute body links. Bytes in, data out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from okfgit.format import concept as okf
from okfgit.format import markdown as links
from okfgit.errors import ValidationError

_NESTED = ("executor", "attester")  # a mapping whose ``resource`` is a path (OKF §10)


class PathField(NamedTuple):
    """One path-valued field: the top-level key it sits under, where (``sources[1].resource``)
    and the path as written."""

    key: str
    where: str
    value: str


def path_fields(meta: Mapping[str, Any]) -> list[PathField]:
    """The path-valued fields of a frontmatter mapping whose values look like paths."""
    found: list[tuple[str, str, Any]] = [("resource", "resource", meta.get("resource")),
                                         ("computation", "computation", meta.get("computation"))]
    for key in _NESTED:
        value = meta.get(key)
        if isinstance(value, dict):
            found.append((key, f"{key}.resource", value.get("resource")))
    sources = meta.get("sources")
    if isinstance(sources, list):
        found += [("sources", f"sources[{n}].resource", s.get("resource"))
                  for n, s in enumerate(sources) if isinstance(s, dict)]
    return [PathField(key, where, value) for key, where, value in found if _is_path(value)]


def _is_path(value: Any) -> bool:
    """A string that names a file: no whitespace, no scheme, and a folder or a ``.md`` in it."""
    if not isinstance(value, str) or not value or any(ch.isspace() for ch in value):
        return False
    if links.resolve("index.md", value).external:
        return False
    return "/" in value or value.endswith(".md")


def line_of(data: bytes, field: PathField, key_line: int | None) -> int | None:
    """The file line that holds ``field``'s value: the first line from its key's
    (``key_line``) on that names it, else the key's line."""
    if key_line is None:
        return None
    lines = data.split(b"\n")
    want = field.value.encode("utf-8")
    for number in range(key_line, len(lines) + 1):
        if want in lines[number - 1]:
            return number
        if lines[number - 1].rstrip(b"\r") == b"---" and number > key_line:
            break
    return key_line


def resolve(concept: str, value: str, exists: Callable[[str], bool]) -> str | None:
    """The tier path ``value`` (a path-valued field of ``concept``) leads to, or None when it
    names nothing there: bundle-absolute, else relative to the concept's folder, else (a
    path that does not start with ``./`` or ``../``) relative to the bundle root."""
    target = links.resolve(concept, value)
    if not target.escapes and target.path is not None and exists(target.path):
        return target.path
    if not value.startswith(("/", "./", "../")):
        root = links.resolve("index.md", value)
        if not root.escapes and root.path is not None and exists(root.path):
            return root.path
    return None


def rebase(concept: str, value: str, folder: str, exists: Callable[[str], bool]) -> str | None:
    """``value`` as written once the bundle holding ``concept`` moves under ``folder``, or None
    when it needs no change (it resolves relative to the concept's folder, which moves with
    it) or names nothing in the bundle (``exists``). A bundle-absolute path takes the folder
    in front (``/policies/x.md`` -> ``/retail/policies/x.md``); a bundle-relative one too
    (``policies/x.md`` -> ``retail/policies/x.md``), each keeping its form."""
    if not folder:
        return None
    prefix = folder.strip("/")
    if value.startswith("/"):
        return f"/{prefix}{value}"
    relative = links.resolve(concept, value)
    if not relative.escapes and relative.path is not None and exists(relative.path):
        return None
    if resolve(concept, value, exists) is None:
        return None
    return f"{prefix}/{value}"


def rewrite(data: bytes, name: str, moves: Mapping[str, str]) -> bytes:
    """``data`` with each path-valued field's value ``old`` replaced by ``moves[old]``, only
    those characters of the frontmatter changing; ValidationError when the file's frontmatter
    then means anything else than the same mapping with those values moved."""
    parsed = okf.split(data, name)
    head = data[parsed.fm_start:parsed.fm_end].decode("utf-8")
    for old, new in moves.items():
        pattern = re.compile(r"(\b(?:resource|computation)[ \t]*:[ \t]*)(['\"]?)" + re.escape(old)
                             + r"\2(?=[ \t]*(?:[,}\r\n#]|$))")
        head = pattern.sub(lambda m: m.group(1) + m.group(2) + new + m.group(2), head)
    out = data[:parsed.fm_start] + head.encode("utf-8") + data[parsed.fm_end:]
    if okf.split(out, name).meta != _moved(parsed.meta, moves):
        raise ValidationError(f"{name}: cannot re-root its frontmatter paths ({', '.join(moves)}) in place; "
                              "adopt it without --dir, or edit them by hand first")
    return out


def _moved(meta: Mapping[str, Any], moves: Mapping[str, str]) -> dict[str, Any]:
    """``meta`` with every path-valued field whose value is in ``moves`` moved."""
    out = dict(meta)

    def move(value: Any) -> Any:
        return moves.get(value, value) if isinstance(value, str) and _is_path(value) else value

    for key in ("resource", "computation"):
        if key in out:
            out[key] = move(out[key])
    for key in _NESTED:
        if isinstance(out.get(key), dict):
            out[key] = {**out[key], **({"resource": move(out[key]["resource"])} if "resource" in out[key] else {})}
    if isinstance(out.get("sources"), list):
        out["sources"] = [{**s, **({"resource": move(s["resource"])} if "resource" in s else {})}
                          if isinstance(s, dict) else s for s in out["sources"]]
    return out
