"""The one reader of an agent's JSON files (settings, MCP configs, registries). Bytes in, data out.

JSON as the agents' ``JSON.parse`` reads it: UTF-8, no BOM, no comments, no trailing comma, no
``NaN``. A file okfgit rewrites is refused for a repeated key too: writing it back would drop one.
"""

from __future__ import annotations

import json
from typing import Any

from okfgit.errors import IntegrityError


def parse(data: bytes | str, *, unique_keys: bool = False, obj: bool = False) -> Any:
    """The JSON value in ``data`` (an object when ``obj``); ValueError saying why not."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates if unique_keys else None, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if obj and not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def load(data: bytes | str, where: str) -> dict[str, Any]:
    """The JSON object in ``data``, before okfgit rewrites it; IntegrityError naming ``where``."""
    try:
        return parse(data, unique_keys=True, obj=True)  # type: ignore[no-any-return]
    except ValueError as exc:
        raise IntegrityError(f"{where}: {exc}; not rewriting it (nothing was changed)") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
