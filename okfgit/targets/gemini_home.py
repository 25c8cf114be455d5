"""Where Gemini CLI keeps its files, computed the way Gemini CLI 0.61.0 computes them.

- Its home is ``$GEMINI_CLI_HOME`` when set, else the user's home; its folder is
  ``<home>/.gemini`` (``Storage.getGlobalGeminiDir``), where it reads ``settings.json`` and
  the global context file. Its runtime state lives there too (``<home>/.cache/.gemini``
  under ``SANDBOX=sandbox-exec``).
- Context files are named by ``context.fileName`` in settings (a string or a list; the
  first name is the one it writes), default ``GEMINI.md``: ``<gemini folder>/<name>`` for
  every project, and each trusted folder's files up to the git root.
- The private memory of a project is ``<runtime>/tmp/<short id>/memory/``: ``MEMORY.md``
  (loaded into every session) and sibling ``*.md`` notes the agent edits directly. The short
  id is the project folder's entry in ``<runtime>/projects.json`` (``{"projects": {path:
  id}}``, the id a slug of the folder name, ``-1``, ``-2``... on a collision), owned by the
  ``.project_root`` file in ``<runtime>/tmp/<id>/``. Gemini CLI assigns it on its first run
  in a folder; okfgit only reads it.

Pure but for reading those files: the environment and the home are passed in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from okfgit.format import json_object

HOME_VAR = "GEMINI_CLI_HOME"
SANDBOX_VAR = "SANDBOX"  # "sandbox-exec": the runtime state moves under <home>/.cache/.gemini
DEFAULT_CONTEXT = "GEMINI.md"
MEMORY_INDEX = "MEMORY.md"
_PROJECT_ROOT_FILE = ".project_root"


def home(environ: Mapping[str, str], user_home: Path) -> Path:
    """Gemini CLI's idea of the home folder: ``$GEMINI_CLI_HOME`` when set, else the user's."""
    value = environ.get(HOME_VAR)
    return Path(value) if value else user_home


def gemini_dir(environ: Mapping[str, str], user_home: Path) -> Path:
    """``<home>/.gemini``: settings, the global context file, MCP servers, hooks."""
    return home(environ, user_home) / ".gemini"


def runtime_dir(environ: Mapping[str, str], user_home: Path) -> Path:
    """Where Gemini CLI keeps its state (``projects.json``, ``tmp/``)."""
    if environ.get(SANDBOX_VAR) == "sandbox-exec":
        return home(environ, user_home) / ".cache" / ".gemini"
    return gemini_dir(environ, user_home)


def context_file_names(project_root: Path | None, environ: Mapping[str, str], user_home: Path) -> list[str]:
    """``context.fileName`` as Gemini CLI reads it (the project's ``.gemini/settings.json``
    over the user's), else ``[GEMINI.md]``. Unreadable settings count as unset."""
    files = [gemini_dir(environ, user_home) / "settings.json"]
    if project_root is not None:
        files.insert(0, project_root / ".gemini" / "settings.json")
    for settings in files:
        value = _setting(settings, ("context", "fileName"))
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        names = [n.strip() for n in names if isinstance(n, str) and _file_name(n.strip())]
        if names:
            return names
    return [DEFAULT_CONTEXT]


def memory_indexes(project_root: Path | None, environ: Mapping[str, str], user_home: Path) -> tuple[str, ...]:
    """The files of the private memory folder Gemini CLI reads as the project's memory itself,
    not as notes: ``MEMORY.md``, and, while that is missing, a context file (``GEMINI.md``), the
    older layout (its ``getUserProjectMemoryPaths``)."""
    return (MEMORY_INDEX, *context_file_names(project_root, environ, user_home))


def _file_name(name: str) -> bool:
    """``name`` names a file directly in a folder: a settings value or a registry id that
    would lead elsewhere (a separator, ``..``) or that no path can hold (NUL, control
    characters) counts as unset, so one odd value never stops a sync."""
    return bool(name) and name not in (".", "..") and not any(c in "/\\" or ord(c) < 32 for c in name)


@dataclass(frozen=True, slots=True)
class MemoryFolder:
    """A project's private memory folder in Gemini CLI, or why it has none yet."""

    path: Path | None
    short_id: str | None
    why: str = ""  # when ``path`` is None
    registry: Path | None = None  # projects.json (the fast path watches it)


def memory_folder(project_root: Path, environ: Mapping[str, str], user_home: Path) -> MemoryFolder:
    """The private memory folder Gemini CLI uses for a session started in ``project_root``."""
    runtime = runtime_dir(environ, user_home)
    registry = runtime / "projects.json"
    try:
        data = json_object.parse(registry.read_bytes())
    except FileNotFoundError:
        return MemoryFolder(None, None, "Gemini CLI has not run in this project yet (no projects.json)", registry)
    except (OSError, ValueError) as exc:
        return MemoryFolder(None, None, f"{registry} cannot be read ({exc})", registry)
    projects = data.get("projects") if isinstance(data, dict) else None
    key = os.path.normpath(os.path.abspath(project_root))
    short_id = projects.get(key) if isinstance(projects, dict) else None
    if not isinstance(short_id, str) or not _file_name(short_id):
        return MemoryFolder(None, None, f"Gemini CLI has not run in {key} yet (not in {registry})", registry)
    marker = runtime / "tmp" / short_id / _PROJECT_ROOT_FILE
    try:
        owner = marker.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        owner = key
    except (OSError, UnicodeDecodeError) as exc:
        return MemoryFolder(None, None, f"{marker} cannot be read ({exc})", registry)
    if os.path.normpath(owner) != key:
        return MemoryFolder(None, None, f"{marker} says the short id {short_id!r} is {owner}'s", registry)
    return MemoryFolder(runtime / "tmp" / short_id / "memory", short_id, registry=registry)


def _setting(path: Path, keys: tuple[str, ...]) -> object:
    try:
        value: object = json_object.parse(path.read_bytes())
    except (OSError, ValueError):
        return None
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
