"""Where Claude Code and Codex keep their files, computed the way they compute it.

Claude Code keys a project's memory folder by an encoding of the canonical repo root that
most third-party tools get wrong, so the encoding here follows Claude Code's own
``sanitizePath``: JavaScript string semantics, that is UTF-16 code units, not code points.
Pure: the environment and the home folder are passed in, so tests never see the real home.
"""

from __future__ import annotations

import os
import os.path
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from okfgit.format import json_object
from okfgit.format.names import nfc

_MAX_ENCODED = 200
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def claude_home(environ: Mapping[str, str], home: Path) -> Path:
    """``$CLAUDE_CONFIG_DIR`` when set (even when empty, as Claude Code's ``??`` reads it:
    an empty value is the folder Claude Code runs in), else ``home/.claude``."""
    value = environ.get("CLAUDE_CONFIG_DIR")
    # Claude Code NFC-normalises its config home; on Linux an NFD spelling is another folder.
    return Path(nfc(value)) if value is not None else home / ".claude"


def empty_config_home(environ: Mapping[str, str]) -> str | None:
    """Why okfgit will not write Claude Code's home-level files (``CLAUDE.md``,
    ``settings.json``) under this environment, or None: a set but empty
    ``$CLAUDE_CONFIG_DIR`` makes Claude Code's home the folder it runs in, which is the
    project's own folder, and a machine's global block does not belong in a project file."""
    if environ.get("CLAUDE_CONFIG_DIR") == "":
        return ("CLAUDE_CONFIG_DIR is set but empty, so Claude Code's home is the folder it runs in (the "
                "project); okfgit writes no home-level file there")
    return None


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
    """The Claude Code memory folder for a repo, what decided it, and why a source was not used."""

    path: Path
    warnings: tuple[str, ...] = ()
    shared_by: Path | None = None  # the settings file whose autoMemoryDirectory every project shares
    source: str = "the default, ~/.claude"  # what decided the folder, as `status` says it
    watched: tuple[str, ...] = ()  # every file whose change could move the folder (the fast path's stamp)


# The variables that move the memory folder, in the order Claude Code asks them.
OVERRIDE = "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"
REMOTE_ROOT = "CLAUDE_CODE_REMOTE_MEMORY_DIR"
DIR_NAME = "CLAUDE_CODE_PROJECT_DIR_NAME"
SANDBOXED = "CLAUDE_CODE_SANDBOXED"  # set: Claude Code trusts the folder it runs in
MANAGED_DIR = "OKF_CLAUDE_MANAGED_DIR"  # where okfgit reads Claude Code's managed policy (tests, other layouts)
FLAG_SETTINGS = "OKF_CLAUDE_SETTINGS"  # the file (or JSON) a person passes to `claude --settings`
INLINE_FLAG = f"${FLAG_SETTINGS}"  # the source's name when that variable holds JSON itself
ENV_KEYS = (OVERRIDE, REMOTE_ROOT, DIR_NAME, SANDBOXED, MANAGED_DIR, FLAG_SETTINGS)
_DIR_NAME_OK = re.compile(r"[A-Za-z0-9_-]{1,64}")
_RESERVED_NAME = re.compile(r"(?:con|prn|aux|nul|com[0-9]|lpt[0-9])", re.IGNORECASE)


def managed_dir(environ: Mapping[str, str]) -> Path:
    """Where Claude Code reads its managed policy settings on this platform."""
    value = environ.get(MANAGED_DIR)
    if value:
        return Path(value)
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode")
    if sys.platform == "win32":
        return Path("C:\\Program Files\\ClaudeCode")
    return Path("/etc/claude-code")


def settings_sources(project_root: Path | None, environ: Mapping[str, str], home: Path,
                     repo_root: Path | None = None) -> list[tuple[str, Path]]:
    """(label, file) of every settings file Claude Code asks for ``autoMemoryDirectory``, in
    its order: managed policy (``managed-settings.json``, then its ``managed-settings.d/``
    drop-ins by name), ``--settings``, a trusted project's ``.claude/settings.local.json`` and
    ``.claude/settings.json``, the user's ``settings.json``."""
    policy = managed_dir(environ)
    out = [("managed policy", policy / "managed-settings.json")]
    try:
        drop_ins = sorted(n for n in os.listdir(policy / "managed-settings.d")
                          if n.endswith(".json") and not n.startswith("."))
    except OSError:
        drop_ins = []
    out += [("managed policy", policy / "managed-settings.d" / n) for n in drop_ins]
    flag = environ.get(FLAG_SETTINGS)
    if flag:
        out.append(("--settings", Path(INLINE_FLAG if flag.lstrip().startswith("{") else flag)))
    if project_root is not None and _trusted(project_root, repo_root or project_root, environ, home):
        out.append(("project local settings", project_root / ".claude" / "settings.local.json"))
        out.append(("project settings", project_root / ".claude" / "settings.json"))
    out.append(("user settings", claude_home(environ, home) / "settings.json"))
    return out


def memory_dir(repo_root: Path, environ: Mapping[str, str], home: Path, *,
               project_root: Path | None = None) -> MemoryDirChoice:
    """The folder Claude Code 2.1.332 reads and writes memory files in for ``repo_root`` (the
    canonical repo root; ``project_root``, where Claude Code runs and finds ``.claude/``,
    defaults to it). First match wins:

    1. ``$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE``, the whole path (absolute, no ``~``);
    2. ``autoMemoryDirectory`` from the first settings source that sets it
       (``settings_sources``; absolute or ``~/...``); a value Claude Code rejects gives
       the default folder, as in Claude Code;
    3. ``<root>/projects/<name>/memory``: ``<root>`` is ``$CLAUDE_CODE_REMOTE_MEMORY_DIR``,
       else the config home (``claude_home``); ``<name>`` is ``$CLAUDE_CODE_PROJECT_DIR_NAME``
       when ``$CLAUDE_CONFIG_DIR`` is set non-empty, the root is the config home and the
       name is valid, else ``encode_project_dir(repo_root)``.

    An unreadable settings file is skipped with a warning naming it (Claude Code skips it too).
    Never raises for a bad settings file.
    """
    project_root = project_root or repo_root
    warnings: list[str] = []
    sources = settings_sources(project_root, environ, home, repo_root)
    watched = tuple(str(f) for _, f in sources if str(f) != INLINE_FLAG) + (
        str(_global_config(environ, home)), str(managed_dir(environ) / "managed-settings.d"))
    override = environ.get(OVERRIDE)
    if override:
        path = _validated_memory_path(override, home, tilde=False)
        if path is not None:
            return MemoryDirChoice(path, source=f"${OVERRIDE}", watched=watched)
        warnings.append(f"${OVERRIDE} {override!r} is not an absolute path Claude Code accepts, so Claude Code "
                        "ignores it")
    found = _auto_memory_directory(sources, environ, warnings)
    default, default_source = _default(repo_root, project_root, environ, home)
    if found is not None:
        label, settings, raw = found
        path = _validated_memory_path(raw, home) if raw else None
        if path is not None:
            shared = settings if label in ("managed policy", "--settings", "user settings") else None
            return MemoryDirChoice(path, tuple(warnings), shared,
                                   f"autoMemoryDirectory in {settings} ({label})", watched)
        if raw:
            warnings.append(f"{settings}: autoMemoryDirectory {raw!r} is not an absolute path (or '~/...') that "
                            f"Claude Code accepts, so Claude Code ignores it")
    if warnings:
        warnings = [f"{w}; using {default}" for w in warnings]
    return MemoryDirChoice(default, tuple(warnings), source=default_source, watched=watched)


def _default(repo_root: Path, project_root: Path, environ: Mapping[str, str], home: Path) -> tuple[Path, str]:
    remote = environ.get(REMOTE_ROOT)
    config = claude_home(environ, home)
    if remote:
        root, source = Path(remote), f"${REMOTE_ROOT}"
    else:
        root = config if config.is_absolute() else project_root / config  # "": where Claude Code runs
        source = "$CLAUDE_CONFIG_DIR" if environ.get("CLAUDE_CONFIG_DIR") is not None else "the default, ~/.claude"
    name, config_value = environ.get(DIR_NAME, ""), environ.get("CLAUDE_CONFIG_DIR")
    # Claude Code's `k===rt()`: the root is the config home, even when the remote root names it.
    if config_value and (not remote or remote == nfc(config_value)) and _DIR_NAME_OK.fullmatch(name) \
            and not _RESERVED_NAME.fullmatch(name):
        return _nfc(root / "projects" / name / "memory"), f"{source} and ${DIR_NAME}"
    return _nfc(root / "projects" / encode_project_dir(str(repo_root)) / "memory"), source


def _auto_memory_directory(sources: list[tuple[str, Path]], environ: Mapping[str, str],
                           warnings: list[str]) -> tuple[str, Path, str] | None:
    """(label, file, value) of the first source whose ``autoMemoryDirectory`` is set (an empty
    string counts, as Claude Code's ``!= null`` does: it then keeps the default folder). The
    managed drop-ins override the base file and each other by name, as in a policy folder."""
    policy: tuple[str, Path, str] | None = None
    for label, settings in sources:
        if label != "managed policy" and policy is not None:
            return policy
        raw, problem = _read_source(settings, environ)
        if problem is not None:
            warnings.append(f"{settings}: {problem}, so Claude Code skips it")
            continue
        if raw is None:
            continue
        if label != "managed policy":
            return label, settings, raw
        policy = (label, settings, raw)
    return policy


def _read_source(settings: Path, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(``autoMemoryDirectory``, None), (None, None) when unset (no file, absent or null), or
    (None, why the file cannot be used). An empty string is a value: Claude Code stops there."""
    key = "autoMemoryDirectory"
    try:
        inline = str(settings) == INLINE_FLAG
        data = environ.get(FLAG_SETTINGS, "").encode("utf-8", "surrogateescape") if inline else settings.read_bytes()
        value = json_object.parse(data, obj=True).get(key)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or exc})"
    except ValueError as exc:
        return None, str(exc)
    if value is not None and not isinstance(value, str):
        return None, f"{key} is not a string"
    return value, None


def _global_config(environ: Mapping[str, str], home: Path) -> Path:
    """Claude Code's global config (``.claude.json``), where it records trusted folders."""
    return Path(environ.get("CLAUDE_CONFIG_DIR") or home) / ".claude.json"


def _trusted(project_root: Path, repo_root: Path, environ: Mapping[str, str], home: Path) -> bool:
    """Whether Claude Code trusts the project: ``$CLAUDE_CODE_SANDBOXED`` is set, or its global
    config records ``projects[<folder>].hasTrustDialogAccepted`` for the canonical repo root
    (a linked worktree's main one) or for the folder or one above it up to the repository
    root. Only then does it read the project's ``.claude/`` settings."""
    if environ.get(SANDBOXED):
        return True
    try:
        projects = json_object.parse(_global_config(environ, home).read_bytes(), obj=True).get("projects")
    except (OSError, ValueError):
        return False
    if not isinstance(projects, dict):
        return False
    for folder in (repo_root, project_root, *project_root.parents):
        entry = projects.get(nfc(str(folder)))
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
        if (folder / ".git").exists():
            break
    return False


def _validated_memory_path(raw: str, home: Path, *, tilde: bool = True) -> Path | None:
    # Mirrors Claude Code's validateMemoryPath: what it rejects it silently replaces with
    # the default folder, so okfgit must reject the same values or write where Claude never
    # looks. Only "~/" expands (not in the environment override), and never to the home
    # folder itself or its parent.
    candidate = raw
    if tilde and raw.startswith(("~/", "~\\")):
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
