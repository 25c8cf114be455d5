"""The capture switch: whether okfgit may capture agents' memories in this repository.

Capturing what an agent wrote into a shared repository is a privacy decision, so two
parties must agree and either can say no:

- the machine: ``git config okf.capture on|off`` (any git boolean; unset means on), read
  the way git reads it (local, then global and system config, includes honoured);
- the project, for everyone who clones it: ``capture = "off"`` in ``.okf/okfgit.toml``,
  read from the tree at HEAD. A machine's ``on`` cannot override it.

The same file says where ``user`` memories (facts about the person) go: ``user_memories =
"global"`` (the default: the machine's own global tier, never pushed) or ``"project"``, and
how many concept files Claude Code's memory folder holds, ``memory_files`` (the machine's
``git config okf.memoryFiles`` wins over it: ``memory_files``).

When the project's setting exists but cannot be read with certainty (not a regular
file, not UTF-8, not TOML, an unknown key or value, or uncommitted edits to it), capture
is off: okfgit does not guess in the direction of sharing. ``spec/okf-hooks.md`` pins it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from okfgit.context import Context
from okfgit.errors import OkfError, UsageError
from okfgit.git import config
from okfgit.git.objects import Entry, blob_oid
from okfgit.git.repository import Repo
from okfgit.knowledge.tiers import PROJECT_PREFIX, Workspace

CONFIG_KEY = "okf.capture"
SETTINGS_NAME = "okfgit.toml"
SETTINGS_PATH = f"{PROJECT_PREFIX}/{SETTINGS_NAME}"  # in the project repo
_KNOWN_KEYS = {"capture", "user_memories", "memory_files"}
MEMORY_FILES_KEY = "okf.memoryFiles"
# The memory folder's budget unless set: a knowledge base of ordinary size is projected whole.
MEMORY_FILES = 10_000
USER_MEMORIES = ("global", "project")  # where a ``user`` memory (about the person) goes
_VALUES = {"on": "on", "off": "off", True: "on", False: "off"}
_MAX_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Decision:
    """Effective capture, and both parties' say.

    ``machine``: ``on`` | ``off`` | ``unset`` (default on) | ``invalid`` (counts as off).
    ``project``: ``on`` | ``off`` | ``unset`` | ``unreadable`` (counts as off).
    """

    enabled: bool
    reason: str
    machine: str
    project: str

    def to_json(self) -> dict[str, object]:
        return {"enabled": self.enabled, "reason": self.reason, "machine": self.machine, "project": self.project}


def capture_decision(ctx: Context, ws: Workspace) -> Decision:
    """Whether capture is on for ``ws``'s project repository, and why."""
    machine, machine_why = machine_setting(ctx, ws.project_repo)
    project, project_why = project_setting(ws.project_repo)
    enabled = machine in ("on", "unset") and project in ("on", "unset")
    if enabled:
        reason = f"capture is on: {machine_why}; {project_why}"
    elif project in ("off", "unreadable"):
        reason = f"capture is off: {project_why}"  # the project's word is final
    else:
        reason = f"capture is off: {machine_why}"
    return Decision(enabled, reason, machine, project)


def machine_setting(ctx: Context, repo_root: Path | None) -> tuple[str, str]:
    """(``on``|``off``|``unset``|``invalid``, why) from ``git config --type=bool okf.capture``."""
    try:
        gitdir = Repo.open(repo_root).gitdir if repo_root is not None else None
        value = config.get(ctx.environ, CONFIG_KEY, cwd=repo_root or ctx.cwd, gitdir=gitdir, as_bool=True)
    except UsageError as exc:
        return "invalid", f"git config {CONFIG_KEY} is not a boolean ({exc}), so off"
    except OkfError as exc:
        return "invalid", f"cannot run git to read {CONFIG_KEY} ({exc}), so off"
    if value is None:
        return "unset", f"git config {CONFIG_KEY} is not set (default on)"
    word = "on" if value == "true" else "off"
    return word, f"git config {CONFIG_KEY} is {word}"


def project_setting(repo_root: Path | None) -> tuple[str, str]:
    """(``on``|``off``|``unset``|``unreadable``, why) from ``.okf/okfgit.toml`` at HEAD."""
    word, why, _ = _settings(repo_root)
    return word, why


def user_memories(repo_root: Path | None) -> str:
    """Where this project sends ``user`` memories: ``global`` (the default: facts about a
    person stay on their machine) or ``project`` when ``.okf/okfgit.toml`` says
    ``user_memories = "project"``. An unreadable file turns capture off anyway."""
    _, _, parsed = _settings(repo_root)
    return "project" if parsed.get("user_memories") == "project" else "global"


def memory_files(ctx: Context, repo_root: Path | None) -> tuple[int, str, str | None]:
    """How many concept files Claude Code's memory folder holds (its budget), what said so,
    and why a setting was not used (unreadable: the default holds then)."""
    problem = None
    try:
        gitdir = Repo.open(repo_root).gitdir if repo_root is not None else None
        value = config.get(ctx.environ, MEMORY_FILES_KEY, cwd=repo_root or ctx.cwd, gitdir=gitdir)
    except OkfError as exc:
        value, problem = None, f"git config {MEMORY_FILES_KEY} cannot be read ({exc})"
    if value is not None:
        if value.strip().isdigit():
            return int(value), f"git config {MEMORY_FILES_KEY}", None
        problem = f"git config {MEMORY_FILES_KEY} is {value!r}, not a whole number"
    _, _, parsed = _settings(repo_root)
    found = parsed.get("memory_files")
    if isinstance(found, int) and not isinstance(found, bool) and found >= 0 and problem is None:
        return found, f"memory_files in {SETTINGS_PATH}", None
    if found is not None and problem is None:
        problem = f"memory_files in {SETTINGS_PATH} is {found!r}, not a whole number"
    return MEMORY_FILES, "the default", f"{problem}; the memory folder holds {MEMORY_FILES:,} files" if problem else None


def _settings(repo_root: Path | None) -> tuple[str, str, dict[str, object]]:
    """(capture word, why, the parsed settings) from ``.okf/okfgit.toml`` at HEAD."""
    if repo_root is None:
        return "unset", "no project repository", {}
    repo = Repo.open(repo_root)
    head = repo.head_commit()
    okf_dir = repo.entry_at(head, PROJECT_PREFIX)
    if okf_dir is not None and not okf_dir.is_tree:
        return "unreadable", f"{PROJECT_PREFIX} at HEAD is not a folder, so the project's setting cannot be read", {}
    entry = repo.entry_at(head, SETTINGS_PATH) if okf_dir is not None else None
    if entry is not None and not entry.is_file:
        return "unreadable", f"{SETTINGS_PATH} at HEAD is not a regular file (a symlink, folder or submodule)", {}
    if _uncommitted(repo, entry):
        return ("unreadable", f"{SETTINGS_PATH} has uncommitted changes; capture stays off until they are committed",
                {})
    if entry is None:
        return "unset", f"the project has no {SETTINGS_PATH} at HEAD", {}
    return _parse(repo.read_blob(entry.oid))


def _uncommitted(repo: Repo, entry: Entry | None) -> bool:
    """The working tree's settings file differs from HEAD's (added, edited or removed).

    Someone who just wrote ``capture = "off"`` means it now; until the edit is committed
    the project's word is uncertain, so capture is off."""
    file = repo.workdir / SETTINGS_PATH
    if file.is_symlink():
        return True
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        return entry is not None
    except OSError:
        return True
    return entry is None or entry.oid != blob_oid(data)


def _parse(data: bytes) -> tuple[str, str, dict[str, object]]:
    where = f"{SETTINGS_PATH} at HEAD"
    if len(data) > _MAX_BYTES:
        return "unreadable", f"{where} is larger than {_MAX_BYTES} bytes", {}
    import tomllib  # only when the project has a settings file

    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "unreadable", f"{where} is not UTF-8", {}
    except tomllib.TOMLDecodeError as exc:
        return "unreadable", f"{where} is not valid TOML ({exc})", {}
    unknown = sorted(set(parsed) - _KNOWN_KEYS)
    if unknown:
        return "unreadable", f"{where} has unknown keys ({', '.join(unknown)}), so its intent is uncertain", {}
    users = parsed.get("user_memories", "global")
    if users not in USER_MEMORIES:
        return "unreadable", f"{where} has user_memories = {users!r}; use \"global\" or \"project\"", {}
    if "capture" not in parsed:
        return "unset", f"{where} does not set capture", parsed
    value = parsed["capture"]
    word = _VALUES.get(value) if isinstance(value, (str, bool)) else None
    if word is None:
        return "unreadable", f"{where} has capture = {value!r}; use \"on\" or \"off\"", {}
    return word, f"{where} says capture = \"{word}\"", parsed
