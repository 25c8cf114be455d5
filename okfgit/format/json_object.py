"""A person's JSON settings file read strictly, before okfgit edits one entry in it.

An object only; a key that appears twice, ``NaN`` or ``Infinity`` are refused, because
writing the file back would silently drop or change them. Bytes in, data out.
"""

from __future__ import annotations

import json
from typing import Any

from okfgit.errors import IntegrityError


def load(text: str, where: str) -> dict[str, Any]:
    """The JSON object in ``text``; IntegrityError naming ``where`` (nothing is changed) otherwise."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise IntegrityError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                             "not rewriting it (nothing was changed)") from None
    except ValueError as exc:
        raise IntegrityError(f"{where}: {exc}; not rewriting it (nothing was changed)") from None
    if not isinstance(data, dict):
        raise IntegrityError(f"{where}: not a JSON object; not rewriting it (nothing was changed)")
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
