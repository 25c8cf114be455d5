"""Claude Code's memory folder, wherever Claude Code 2.1.332 puts it: projection and capture
move together, and status names what decided the folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.test_capture import OLDER, write_memory


def trusted(home: Path, folder: Path) -> None:
    (home / ".claude").mkdir(exist_ok=True)
    (home / ".claude" / ".claude.json").write_text(json.dumps({"projects": {str(folder): {"hasTrustDialogAccepted": True}}}))


@pytest.mark.parametrize("source", ["override", "project-settings", "remote-root-and-name"])
def test_projection_and_capture_use_the_folder_claude_uses(source: str, project: Path, okfgit: Runner, git: Runner,
                                                            home: Path, tmp_path: Path) -> None:
    extra: dict[str, str] = {}
    if source == "override":
        folder = tmp_path / "cowork" / "mem"
        extra = {"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": str(folder)}
        named = "$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"
    elif source == "project-settings":
        folder = tmp_path / "project-mem"
        trusted(home, project.resolve())
        settings = project / ".claude" / "settings.local.json"
        settings.parent.mkdir()
        settings.write_text(json.dumps({"autoMemoryDirectory": str(folder)}))
        named = f"autoMemoryDirectory in {settings.resolve()} (project local settings)"
    else:
        folder = tmp_path / "remote" / "projects" / ("-" + str(project.resolve()).strip("/").replace("/", "-")
                                                     .replace("_", "-").replace(".", "-")) / "memory"
        extra = {"CLAUDE_CODE_REMOTE_MEMORY_DIR": str(tmp_path / "remote"), "CLAUDE_CODE_PROJECT_DIR_NAME": "ignored"}
        named = "$CLAUDE_CODE_REMOTE_MEMORY_DIR"
    write_memory(folder, "project_freeze.md", OLDER)
    status = okfgit("status", cwd=project, extra_env=extra, expect=None).out
    assert f"memory folder: {folder} (from {named})" in status
    assert "new: project_freeze.md -> project:memory/release-freeze.md" in status
    okfgit("sync", cwd=project, extra_env=extra)
    committed = git("show", "HEAD:.okf/memory/release-freeze.md", cwd=project).out
    assert (folder / "project_freeze.md").read_text() == committed  # captured, then projected back there
    assert (folder / "MEMORY.md").is_file()
    assert not (home / ".claude" / "projects").exists()  # nothing in the default folder
    assert okfgit("sync", cwd=project, extra_env=extra).out == "okfgit sync: up to date\n"
