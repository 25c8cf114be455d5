"""okfgit project on bad input: clear messages, the right exit code, nothing lost.

Tests run as any user (root included), so "unwritable" is made with a file standing where
a folder must be, not with permissions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.test_projection import KIT, Kit, build_kit, commit_files, enc, new_repo, project


@pytest.fixture
def kit(home: Path, repo: Path, git: Runner) -> Kit:
    return build_kit(home, repo, git, job=False)


def leftovers(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*.okftmp")]


def test_unwritable_memory_folder_fails_alone(kit: Kit, okfgit: Runner) -> None:
    kit.memory.parent.mkdir(parents=True)
    kit.memory.write_text("a file where the memory folder should be\n")
    result = project(okfgit, kit, expect=3)
    assert f"okfgit: warning: {kit.memory}: cannot write into it: {kit.memory} is not a folder" in result.err
    assert kit.memory.read_text() == "a file where the memory folder should be\n"
    assert "<!-- okf:begin id=global -->" in kit.claude_md.read_text()
    assert "<!-- okf:begin id=project -->" in kit.agents_md.read_text()
    assert "<!-- okf:begin id=global -->" in kit.codex_md.read_text()
    assert not kit.stamp.exists()
    assert leftovers(kit.home, kit.repo) == []
    assert kit.state_json()["memory_files"] == {}
    kit.memory.unlink()
    project(okfgit, kit)  # once the obstacle is gone, everything lands
    assert (kit.memory / "testing.md").is_file()


def test_a_failed_memory_folder_keeps_the_ownership_records(kit: Kit, okfgit: Runner, tmp_path: Path) -> None:
    project(okfgit, kit)
    records = kit.state_json()["memory_files"]
    assert "testing.md" in records
    kit.memory.rename(tmp_path / "aside")
    kit.memory.write_text("in the way\n")
    project(okfgit, kit, expect=3)
    assert kit.state_json()["memory_files"] == records


def test_unwritable_block_folder_fails_alone(kit: Kit, okfgit: Runner, tmp_path: Path) -> None:
    (kit.home / ".codex").rmdir()
    (kit.home / ".codex").write_text("not a folder\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "codex").write_text("#!/bin/sh\n")  # Codex is installed: its folder is to be made
    (tmp_path / "bin" / "codex").chmod(0o755)
    path = f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"
    result = okfgit("project", cwd=kit.repo, extra_env={"PATH": path}, expect=3)
    assert f"{kit.home / '.codex' / 'AGENTS.md'}: cannot write it: a folder on its path is a file" in result.err
    assert (kit.memory / "MEMORY.md").is_file()
    assert "<!-- okf:begin id=global -->" in kit.claude_md.read_text()
    assert leftovers(kit.home, kit.repo) == []


def test_symlinked_agents_md_is_refused_untouched(kit: Kit, okfgit: Runner, tmp_path: Path) -> None:
    real = tmp_path / "shared-agents.md"
    real.write_text("# Shared guide\n")
    kit.agents_md.unlink()
    kit.agents_md.symlink_to(real)
    result = project(okfgit, kit, expect=3)
    assert f"okfgit: warning: {kit.agents_md}: is a symlink; okfgit does not replace links" in result.err
    assert kit.agents_md.is_symlink() and os.readlink(kit.agents_md) == str(real)
    assert real.read_text() == "# Shared guide\n"
    assert (kit.memory / "testing.md").is_file() and "okf:begin" in kit.codex_md.read_text()


def test_agents_md_that_is_not_utf8_is_refused_untouched(kit: Kit, okfgit: Runner) -> None:
    kit.agents_md.write_bytes(b"# Guide\n\xff\xfe latin-1 caf\xe9\n")
    result = project(okfgit, kit, expect=3)
    assert f"{kit.agents_md}: is not UTF-8 (byte 8); nothing was changed" in result.err
    assert kit.agents_md.read_bytes() == b"# Guide\n\xff\xfe latin-1 caf\xe9\n"
    assert (kit.memory / "MEMORY.md").is_file()


@pytest.mark.parametrize("origin, why", [
    ("'../x.md'", "tries to leave the memory folder"),
    ("/etc/evil.md", "is not a relative path"),
    ('"a\\0b.md"', "contains NUL or control characters"),
    ("sub/../../x.md", "tries to leave the memory folder"),
    ("MEMORY.md", "is MEMORY.md, which is the folder's index"),
    ("team/shared/x.md", "lies in a folder Claude Code keeps for itself"),  # a team store, synced from a server
])
def test_origin_that_leaves_the_memory_folder_is_not_followed(origin: str, why: str, kit: Kit, okfgit: Runner,
                                                                git: Runner) -> None:
    path = kit.repo / ".okf" / "escape.md"
    path.write_text(f"---\ntype: Note\ntitle: Escape\nokf_id: e5ca0000-0000-4000-8000-000000000001\n"
                    f"okf_origin: {origin}\n---\nStay inside.\n")
    git("add", "-A", cwd=kit.repo)
    git("commit", "-q", "-m", "escape", cwd=kit.repo)
    result = project(okfgit, kit)
    assert f"project:escape.md@" in result.err and why in result.err
    assert (kit.memory / "escape.md").read_bytes() == path.read_bytes()
    assert not (kit.memory.parent / "x.md").exists() and not Path("/etc/evil.md").exists()
    assert not (kit.memory / "team").exists()
    assert sorted(p.name for p in kit.memory.parent.iterdir()) == ["memory"]


def test_settings_json_that_is_not_json_warns_and_uses_the_default(kit: Kit, okfgit: Runner) -> None:
    settings = kit.home / ".claude" / "settings.json"
    settings.write_text('{"autoMemoryDirectory": "/nowhere",')
    result = project(okfgit, kit)
    assert f"okfgit: warning: {settings}: not valid JSON" in result.err
    assert (kit.memory / "testing.md").is_file()
    assert settings.read_text() == '{"autoMemoryDirectory": "/nowhere",'


def test_repo_without_commits_skips_the_project_tier(tmp_path: Path, home: Path, okfgit: Runner, git: Runner) -> None:
    empty = new_repo(git, tmp_path / "empty")
    global_dir = new_repo(git, home / ".local" / "share" / "okf")
    commit_files(git, global_dir, KIT / "kb" / "global", global_dir)
    result = okfgit("project", cwd=empty)
    assert f"the project tier's repository {empty} has no commits yet; skipped" in result.err
    memory = home / ".claude" / "projects" / enc(str(empty.resolve())) / "memory"
    assert (memory / "commit-style.md").is_file()
    assert not (empty / "AGENTS.md").exists()
    assert "okf:begin id=global" in (home / ".claude" / "CLAUDE.md").read_text()


def test_a_tier_that_does_not_exist_is_skipped_not_created(repo: Path, home: Path, okfgit: Runner,
                                                            git: Runner) -> None:
    commit_files(git, repo, KIT / "kb" / "project", repo / ".okf")
    result = okfgit("project", cwd=repo)
    assert result.code == 0
    assert not (home / ".local" / "share" / "okf").exists()
    assert not (home / ".claude" / "CLAUDE.md").exists() and not (home / ".codex" / "AGENTS.md").exists()
    explicit = okfgit("project", "--scope", "global", cwd=repo)
    assert "the global tier does not exist yet" in explicit.err and "skipped" in explicit.err
    assert not (home / ".local" / "share" / "okf").exists()


def test_a_repo_without_a_project_kb_projects_only_global(repo: Path, home: Path, okfgit: Runner,
                                                          git: Runner) -> None:
    global_dir = new_repo(git, home / ".local" / "share" / "okf")
    commit_files(git, global_dir, KIT / "kb" / "global", global_dir)
    result = okfgit("project", "--json", cwd=repo)
    data = json.loads(result.out)
    assert [t["tier"] for t in data["tiers"]] == ["global"]
    assert not (repo / "AGENTS.md").exists()
    assert result.err == "okfgit: warning: skipped global:legacy-note.md: not projected, it has no valid okf_id " \
                         "(`okfgit doctor` names it; `okfgit adopt` adds one)\n" \
                         "okfgit: warning: global:oops.md@687af2c: okf_origin '../escape.md' tries to leave " \
                         "the memory folder; projected under its own file name\n"


def test_a_concept_that_is_not_utf8_is_skipped_with_its_name(kit: Kit, okfgit: Runner, git: Runner) -> None:
    (kit.repo / ".okf" / "latin.md").write_bytes(b"---\ntype: Note\ntitle: Caf\xe9\n---\nx\n")
    git("add", "-A", cwd=kit.repo)
    git("commit", "-q", "-m", "latin", cwd=kit.repo)
    result = project(okfgit, kit)
    assert "project:latin.md: not UTF-8" in result.err
    assert not (kit.memory / "latin.md").exists()


def test_a_damaged_state_file_is_reported_and_nothing_is_overwritten(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    kit.state.write_text("{not json")
    (kit.memory / "testing.md").write_text("an agent's edit\n")
    path = kit.repo / ".okf" / "testing.md"
    path.write_text(path.read_text() + "More.\n")
    git("commit", "-q", "-am", "more", cwd=kit.repo)
    result = project(okfgit, kit)
    assert f"{kit.state} is damaged" in result.err
    assert (kit.memory / "testing.md").read_text() == "an agent's edit\n"
    assert kit.state_json()["version"] == 2  # a new record, written in place of the damaged one


# -- every folder between the memory folder and a file must be a real folder ------------------


def commit_concept(git: Runner, kit: Kit, kb_path: str, origin: str, okf_id: str) -> Path:
    path = kit.repo / ".okf" / kb_path
    path.write_text(f"---\ntype: Note\ntitle: Sub\nokf_id: {okf_id}\nokf_origin: {origin}\n---\nIn a subfolder.\n")
    git("add", "-A", cwd=kit.repo)
    git("commit", "-q", "-m", f"add {kb_path}", cwd=kit.repo)
    return path


SUB_ID = "5ab00000-0000-4000-8000-000000000001"


def test_a_symlinked_subfolder_is_not_written_through(kit: Kit, okfgit: Runner, git: Runner,
                                                       tmp_path: Path) -> None:
    outside = tmp_path / "outside2"
    outside.mkdir()
    commit_concept(git, kit, "x.md", "ext/x.md", SUB_ID)
    kit.memory.mkdir(parents=True)
    (kit.memory / "ext").symlink_to(outside)
    result = project(okfgit, kit, "--json")
    assert list(outside.iterdir()) == []
    target = kit.memory / "ext" / "x.md"
    assert (f"okfgit: warning: {target}: {kit.memory / 'ext'} is a symlink; okfgit does not write through "
            "links, so project:x.md@") in result.err
    data = json.loads(result.out)
    assert str(target) not in [row["path"] for row in data["written"]]
    assert str(target) in [row["path"] for row in data["skipped"]]
    assert "ext/x.md" not in kit.state_json()["memory_files"]
    assert "ext/x.md" not in (kit.memory / "MEMORY.md").read_text()
    assert (kit.memory / "ext").is_symlink() and (kit.memory / "testing.md").is_file()


def test_a_file_where_a_subfolder_should_be_is_left_alone(kit: Kit, okfgit: Runner, git: Runner) -> None:
    commit_concept(git, kit, "x.md", "ext/deep/x.md", SUB_ID)
    kit.memory.mkdir(parents=True)
    (kit.memory / "ext").mkdir()
    (kit.memory / "ext" / "deep").write_text("a person's file\n")
    result = project(okfgit, kit)
    assert f"{kit.memory / 'ext' / 'deep' / 'x.md'}: {kit.memory / 'ext' / 'deep'} is not a folder" in result.err
    assert (kit.memory / "ext" / "deep").read_text() == "a person's file\n"


def test_a_real_subfolder_is_created_and_written(kit: Kit, okfgit: Runner, git: Runner) -> None:
    path = commit_concept(git, kit, "x.md", "ext/deep/x.md", SUB_ID)
    project(okfgit, kit)
    assert (kit.memory / "ext" / "deep" / "x.md").read_bytes() == path.read_bytes()
    assert "ext/deep/x.md" in kit.state_json()["memory_files"]


def test_a_file_okfgit_wrote_is_not_removed_through_a_symlinked_subfolder(kit: Kit, okfgit: Runner, git: Runner,
                                                                           tmp_path: Path) -> None:
    data = commit_concept(git, kit, "x.md", "ext/x.md", SUB_ID).read_bytes()
    project(okfgit, kit)
    written = kit.memory / "ext" / "x.md"
    assert written.read_bytes() == data
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_bytes(data)  # the very bytes okfgit recorded writing
    written.unlink()
    (kit.memory / "ext").rmdir()
    (kit.memory / "ext").symlink_to(outside)
    git("rm", "-q", ".okf/x.md", cwd=kit.repo)
    git("commit", "-q", "-m", "drop x", cwd=kit.repo)
    result = project(okfgit, kit)
    assert (outside / "x.md").read_bytes() == data
    assert f"{written}: {kit.memory / 'ext'} is a symlink; okfgit does not write through links" in result.err
    assert "ext/x.md" not in kit.state_json()["memory_files"]
