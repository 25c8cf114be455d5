"""Where Claude Code and Codex keep their files, computed the way they compute it.

Claude Code keys a project's memory folder by an encoding of the canonical repo root that
most third-party tools get wrong, so the encoding here follows Claude Code's own
``sanitizePath``: JavaScript string semantics, that is UTF-16 code units, not code points.
Pure: the environment and the home folder are passed in, so tests never see the real home.
"""

from __future__ import annotations

import json
import os.path
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from okfgit.format.names import nfc

_MAX_ENCODED = 200
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def claude_home(environ: Mapping[str, str], home: Path) -> Path:
    """``$CLAUDE_CONFIG_DIR`` when set and non-empty, else ``home/.claude``."""
    value = environ.get("CLAUDE_CONFIG_DIR", "")
    # Claude Code NFC-normalises its config home; on Linux an NFD spelling is another folder.
    return Path(nfc(value)) if value else home / ".claude"


def codex_home(environ: Mapping[str, str], home: Path) -> Path:
    """``$CODEX_HOME`` when set and non-empty, else ``home/.codex``."""
    value = environ.get("CODEX_HOME", "")
    return Path(value) if value else home / ".codex"


def encode_project_dir(path: str) -> str:
    """Claude Code's folder name for the project at ``path`` (a canonical absolute root).

    Every UTF-16 code unit outside ``[A-Za-z0-9]`` becomes ``-`` (an emoji, two units,
    becomes ``--``). A name longer than 200 characters is cut to 200 and followed by ``-``
    and the base-36 absolute value of the Java-style 32-bit hash of the original path.
    """
    units = _utf16_units(path)
    encoded = "".join(chr(u) if _is_ascii_alnum(u) else "-" for u in units)
    if len(encoded) <= _MAX_ENCODED:
        return encoded
    return f"{encoded[:_MAX_ENCODED]}-{_base36(abs(_java_hash(units)))}"


@dataclass(frozen=True, slots=True)
class MemoryDirChoice:
    """The Claude Code memory folder for a repo, and why the settings could not be used."""

    path: Path
    warnings: tuple[str, ...] = ()
    shared_by: Path | None = None  # the settings file whose autoMemoryDirectory every project shares


def memory_dir(repo_root: Path, environ: Mapping[str, str], home: Path) -> MemoryDirChoice:
    """The folder Claude Code reads and writes memory files in for ``repo_root``.

    Default ``<claude home>/projects/<encode_project_dir(repo_root)>/memory``. A string
    ``autoMemoryDirectory`` in ``<claude home>/settings.json`` replaces the whole path when
    Claude Code would accept it (absolute, or ``~/...`` expanded against ``home``); an
    unreadable settings file or a value Claude Code would ignore gives the default and a
    warning naming the file. Never raises for a bad settings file.
    """
    config = claude_home(environ, home)
    default = _nfc(config / "projects" / encode_project_dir(str(repo_root)) / "memory")
    settings = config / "settings.json"
    raw, problem = _read_setting(settings, "autoMemoryDirectory")
    if problem is not None:
        return MemoryDirChoice(default, (f"{settings}: {problem}; using {default}",))
    if raw is None:
        return MemoryDirChoice(default)
    override = _validated_memory_path(raw, home)
    if override is None:
        warning = (
            f"{settings}: autoMemoryDirectory {raw!r} is not an absolute path (or '~/...') "
            f"that Claude Code accepts, so Claude Code ignores it; using {default}"
        )
        return MemoryDirChoice(default, (warning,))
    return MemoryDirChoice(override, shared_by=settings)


def _read_setting(settings: Path, key: str) -> tuple[str | None, str | None]:
    """(value, None), (None, None) when unset, or (None, why the file cannot be used)."""
    try:
        data = settings.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or exc})"
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if not isinstance(parsed, dict):
        return None, "not a JSON object"
    value = parsed.get(key)
    if value is None or value == "":
        return None, None
    if not isinstance(value, str):
        return None, f"{key} is not a string"
    return value, None


def _validated_memory_path(raw: str, home: Path) -> Path | None:
    # Mirrors Claude Code's validateMemoryPath: what it rejects it silently replaces with
    # the default folder, so okfgit must reject the same values or write where Claude never
    # looks. Only "~/" expands, and never to the home folder itself or its parent.
    candidate = raw
    if raw.startswith(("~/", "~\\")):
        rest = raw[2:]
        if os.path.normpath(rest or ".") in (".", ".."):
            return None
        candidate = os.path.join(str(home), rest)
    normalized = os.path.normpath(candidate).rstrip("/\\")
    if (
        not os.path.isabs(normalized)
        or len(normalized) < 3
        or re.fullmatch(r"[A-Za-z]:", normalized)
        or normalized.startswith(("\\\\", "//"))
        or "\0" in normalized
    ):
        return None
    return _nfc(Path(normalized))


def _nfc(path: Path) -> Path:
    # Claude Code NFC-normalises the memory path it uses.
    return Path(nfc(str(path)))



def _utf16_units(text: str) -> list[int]:
    # surrogatepass: a path decoded with surrogateescape holds lone surrogates, one unit each.
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _is_ascii_alnum(unit: int) -> bool:
    return 0x30 <= unit <= 0x39 or 0x41 <= unit <= 0x5A or 0x61 <= unit <= 0x7A


def _java_hash(units: list[int]) -> int:
    """Java's String.hashCode: ``h = 31*h + unit`` wrapped to a signed 32-bit int each step."""
    h = 0
    for unit in units:
        h = (h * 31 + unit) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h >= 0x8000_0000 else h


def _base36(number: int) -> str:
    if number == 0:
        return "0"
    digits = []
    while number:
        number, remainder = divmod(number, 36)
        digits.append(_BASE36[remainder])
    return "".join(reversed(digits))
