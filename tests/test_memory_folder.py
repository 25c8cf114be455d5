"""Claude Code's memory folder, wherever Claude Code 2.1.332 puts it: projection and capture
move together, status names what decided the folder, and every file is one regular file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from okfgit.targets.claude_home import encode_project_dir
from tests.conftest import Runner
from tests.test_capture import OLDER, write_memory

# Each source Claude Code asks, in its order; the last three hold one folder for every project.
SOURCES = ["override", "remote-root", "project-dir-name", "project-settings", "managed-policy", "settings-flag",
           "user-settings"]


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("source", SOURCES)
def test_projection_and_capture_use_the_folder_claude_uses(source: str, project: Path, okfgit: Runner, git: Runner,
                                                            home: Path, tmp_path: Path) -> None:
    extra: dict[str, str] = {}
    folder = tmp_path / "chosen" / "memory"
    setting = {"autoMemoryDirectory": str(folder)}
    if source == "override":
        extra = {"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": str(folder)}
        named = "$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"
    elif source == "remote-root":
        folder = tmp_path / "remote" / "projects" / encode_project_dir(str(project.resolve())) / "memory"
        extra = {"CLAUDE_CODE_REMOTE_MEMORY_DIR": str(tmp_path / "remote"), "CLAUDE_CODE_PROJECT_DIR_NAME": "ignored"}
        named = "$CLAUDE_CODE_REMOTE_MEMORY_DIR"
    elif source == "project-dir-name":  # with $CLAUDE_CONFIG_DIR set, as conftest sets it
        folder = home / ".claude" / "projects" / "team-kb" / "memory"
        extra = {"CLAUDE_CODE_PROJECT_DIR_NAME": "team-kb"}
        named = "$CLAUDE_CONFIG_DIR and $CLAUDE_CODE_PROJECT_DIR_NAME"
    elif source == "project-settings":  # a trusted project's own settings
        write_json(home / ".claude" / ".claude.json",
                   {"projects": {str(project.resolve()): {"hasTrustDialogAccepted": True}}})
        settings = write_json(project / ".claude" / "settings.local.json", setting)
        named = f"autoMemoryDirectory in {settings.resolve()} (project local settings)"
    elif source == "managed-policy":
        settings = write_json(tmp_path / "etc-claude-code" / "managed-settings.json", setting)
        extra = {"OKF_CLAUDE_MANAGED_DIR": str(settings.parent)}
        named = f"autoMemoryDirectory in {settings} (managed policy)"
    elif source == "settings-flag":
        settings = write_json(tmp_path / "session-settings.json", setting)
        extra = {"OKF_CLAUDE_SETTINGS": str(settings)}
        named = f"autoMemoryDirectory in {settings} (--settings)"
    else:
        settings = write_json(home / ".claude" / "settings.json", setting)
        named = f"autoMemoryDirectory in {settings} (user settings)"
    shared = source in ("managed-policy", "settings-flag", "user-settings")
    write_memory(folder, "project_freeze.md", OLDER)
    status = okfgit("status", cwd=project, extra_env=extra, expect=None).out
    assert f"memory folder: {folder} (from {named})" in status
    default = home / ".claude" / "projects" / encode_project_dir(str(project.resolve()))
    if shared:  # one folder for every project: projected into, never captured from
        assert f"capture is off: {settings} sets autoMemoryDirectory" in status
        okfgit("sync", cwd=project, extra_env=extra)
        assert git("ls-tree", "-r", "--name-only", "HEAD", ".okf", cwd=project).out.count("release-freeze") == 0
        assert (folder / "project_freeze.md").read_bytes() == OLDER
    else:
        assert "new: project_freeze.md -> project:memory/release-freeze.md" in status
        okfgit("sync", cwd=project, extra_env=extra)
        committed = git("show", "HEAD:.okf/memory/release-freeze.md", cwd=project).out
        assert (folder / "project_freeze.md").read_text() == committed  # captured, then projected back there
    assert (folder / "MEMORY.md").is_file()
    assert all(os.lstat(f).st_nlink == 1 for f in folder.rglob("*"))  # one name each: Claude reads no other
    assert not default.exists()  # nothing in the folder Claude Code would not read
    assert okfgit("sync", cwd=project, extra_env=extra).out == "okfgit sync: up to date\n"
