"""The capture switch: the machine's git config and the project's committed setting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from okfgit.knowledge import capture_policy as switch
from okfgit.context import Context
from okfgit.knowledge.tiers import open_workspace

SETTINGS = ".okf/okfgit.toml"


def decide(repo: Path | None, cwd: Path) -> switch.Decision:
    ctx = Context(environ=dict(os.environ), cwd=cwd)
    return switch.capture_decision(ctx, open_workspace(ctx, repo))


def commit_settings(git, repo: Path, data: bytes | None) -> None:
    path = repo / SETTINGS
    if data is None:
        git("rm", "-q", SETTINGS, cwd=repo)
    else:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        git("add", SETTINGS, cwd=repo)
    git("commit", "-q", "-m", "capture setting", cwd=repo)


MACHINE = {"unset": None, "on": "on", "off": "off"}
PROJECT = {"unset": None, "on": b'capture = "on"\n', "off": b'# no agent memories from here\ncapture = "off"\n'}


@pytest.mark.parametrize("project", sorted(PROJECT))
@pytest.mark.parametrize("machine", sorted(MACHINE))
def test_both_must_agree(repo: Path, git, machine: str, project: str) -> None:
    if MACHINE[machine]:
        git("config", "okf.capture", MACHINE[machine], cwd=repo)
    if PROJECT[project]:
        commit_settings(git, repo, PROJECT[project])
    decision = decide(repo, repo)
    assert (decision.machine, decision.project) == (machine, project)
    assert decision.enabled is (machine != "off" and project != "off")


def test_reasons_say_which_applies(repo: Path, git) -> None:
    assert decide(repo, repo).reason == (
        "capture is on: git config okf.capture is not set (default on); the project has no .okf/okfgit.toml at HEAD")
    git("config", "okf.capture", "off", cwd=repo)
    assert decide(repo, repo).reason == "capture is off: git config okf.capture is off"
    git("config", "okf.capture", "on", cwd=repo)
    commit_settings(git, repo, PROJECT["off"])
    # the machine's on cannot override the project's off
    assert decide(repo, repo).reason == 'capture is off: .okf/okfgit.toml at HEAD says capture = "off"'


def test_machine_setting_comes_from_global_config_too(repo: Path, git) -> None:
    git("config", "--global", "okf.capture", "false", cwd=repo)
    assert decide(repo, repo).machine == "off"
    git("config", "okf.capture", "yes", cwd=repo)  # the repo's own config wins, as in git
    assert decide(repo, repo).machine == "on"


def test_an_invalid_machine_value_means_off(repo: Path, git) -> None:
    git("config", "okf.capture", "maybe", cwd=repo)
    decision = decide(repo, repo)
    assert (decision.enabled, decision.machine) == (False, "invalid")
    assert decision.reason.startswith("capture is off: git config okf.capture is not a boolean (")


def test_without_a_project_repo_only_the_machine_decides(tmp_path: Path, git) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    assert decide(None, outside).enabled
    git("config", "--global", "okf.capture", "off", cwd=outside)
    decision = decide(None, outside)
    assert (decision.enabled, decision.machine, decision.project) == (False, "off", "unset")


def test_the_project_setting_is_read_at_head(repo: Path, git) -> None:
    commit_settings(git, repo, PROJECT["off"])
    assert not decide(repo, repo).enabled
    commit_settings(git, repo, None)
    assert decide(repo, repo).enabled
    git("checkout", "-q", "HEAD~1", cwd=repo)  # an older commit that still says off
    assert decide(repo, repo).project == "off"


@pytest.mark.parametrize("data,why", [
    (b"capture = off\n", "is not valid TOML ("),
    (b'capture = "no"\n', "has capture = 'no'; use \"on\" or \"off\""),
    (b'capture = "Off"\n', "has capture = 'Off'; use \"on\" or \"off\""),
    (b"capture = 0\n", "has capture = 0; use \"on\" or \"off\""),
    (b'captur = "off"\n', "has unknown keys (captur), so its intent is uncertain"),
    (b'capture = "off"\n\xff\n', "is not UTF-8"),
    (b"# " + b"x" * 70000 + b"\n", "is larger than 65536 bytes"),
])
def test_an_unreadable_project_setting_means_off(repo: Path, git, data: bytes, why: str) -> None:
    git("config", "okf.capture", "on", cwd=repo)
    commit_settings(git, repo, data)
    decision = decide(repo, repo)
    assert (decision.enabled, decision.project) == (False, "unreadable")
    assert decision.reason.startswith(f"capture is off: .okf/okfgit.toml at HEAD {why}")


def test_booleans_are_accepted(repo: Path, git) -> None:
    commit_settings(git, repo, b"capture = false\n")
    assert decide(repo, repo).project == "off"
    commit_settings(git, repo, b"capture = true\n")
    assert decide(repo, repo).project == "on"
    commit_settings(git, repo, b"# nothing set\n")
    assert decide(repo, repo).project == "unset"


def test_a_symlink_at_head_means_off(repo: Path, git) -> None:
    (repo / "elsewhere.toml").write_text('capture = "on"\n')
    (repo / ".okf").mkdir()
    (repo / SETTINGS).symlink_to("../elsewhere.toml")
    git("add", "elsewhere.toml", SETTINGS, cwd=repo)
    git("commit", "-q", "-m", "link", cwd=repo)
    decision = decide(repo, repo)
    assert (decision.enabled, decision.project) == (False, "unreadable")
    assert "is not a regular file" in decision.reason


def test_a_folder_at_the_settings_path_means_off(repo: Path, git) -> None:
    (repo / SETTINGS).mkdir(parents=True)
    (repo / SETTINGS / "x").write_text("x\n")
    git("add", SETTINGS, cwd=repo)
    git("commit", "-q", "-m", "folder", cwd=repo)
    assert decide(repo, repo).project == "unreadable"


def test_an_okf_that_is_not_a_folder_means_off(repo: Path, git) -> None:
    (repo / "real-okf").mkdir()
    (repo / ".okf").symlink_to("real-okf")
    git("add", ".okf", cwd=repo)
    git("commit", "-q", "-m", "odd", cwd=repo)
    decision = decide(repo, repo)
    assert decision.project == "unreadable"
    assert decision.reason == (
        "capture is off: .okf at HEAD is not a folder, so the project's setting cannot be read")


@pytest.mark.parametrize("committed,worktree", [
    (PROJECT["on"], PROJECT["off"]),  # someone just wrote off
    (None, PROJECT["off"]),  # a new, untracked setting
    (PROJECT["on"], None),  # deleted but not committed
    (PROJECT["on"], b'capture = "on"  # same meaning, other bytes\n'),
])
def test_uncommitted_changes_to_the_setting_mean_off(repo: Path, git, committed: bytes | None,
                                                     worktree: bytes | None) -> None:
    if committed is not None:
        commit_settings(git, repo, committed)
    path = repo / SETTINGS
    if worktree is None:
        path.unlink()
    else:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(worktree)
    decision = decide(repo, repo)
    assert (decision.enabled, decision.project) == (False, "unreadable")
    assert decision.reason == ("capture is off: .okf/okfgit.toml has uncommitted changes; capture stays off until "
                               "they are committed")


def test_decision_as_json(repo: Path) -> None:
    assert decide(repo, repo).to_json() == {
        "enabled": True,
        "reason": "capture is on: git config okf.capture is not set (default on); "
                  "the project has no .okf/okfgit.toml at HEAD",
        "machine": "unset",
        "project": "unset",
    }
