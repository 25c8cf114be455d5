"""Codex CLI 0.171.0 as it reads instruction files: its 32 KiB budget counts the project's
files only, and an AGENTS.override.md hides the AGENTS.md beside it (and okfgit's block)."""

from __future__ import annotations

import json
from pathlib import Path

from okfgit.local.state import State
from okfgit.targets import budget
from tests.conftest import Runner


def test_the_budget_counts_project_files_only(tmp_path: Path, home: Path) -> None:
    codex = home / ".codex"
    codex.mkdir(exist_ok=True)
    (codex / "AGENTS.md").write_text("x" * 30_000)  # global: loaded besides, outside the budget
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text("y" * 4_000)
    env = {"CODEX_HOME": str(codex)}
    seen = budget.explain(State(tmp_path / "okf"), None, work, env, home)
    assert seen.codex_bytes == 4_000 and seen.over_budget == []
    (work / "AGENTS.override.md").write_text("z" * 33_000)  # what Codex reads instead at the root
    seen = budget.explain(State(tmp_path / "okf"), None, work, env, home)
    assert seen.codex_bytes == 33_000
    assert [s.split(":")[0] for s in seen.over_budget] == ["Codex"]
    assert seen.to_json()["codex"]["files"][1]["path"] == str(work / "AGENTS.override.md")


def test_an_override_that_hides_the_block_is_said_by_status_and_doctor(project: Path, okfgit: Runner,
                                                                        home: Path) -> None:
    okfgit("sync", cwd=project)
    assert "okf:begin id=project" in (project / "AGENTS.md").read_text()
    (project / "AGENTS.override.md").write_text("# Local rules for Codex\n")
    status = okfgit("status", cwd=project, expect=2)
    assert (f"hidden from an agent: Codex: {project / 'AGENTS.override.md'} hides {project / 'AGENTS.md'} "
            "and okfgit's project block in it") in status.out
    assert "1 okfgit block hidden from Codex by an AGENTS.override.md" in status.out
    assert json.loads(okfgit("status", "--json", cwd=project, expect=2).out)["hidden"]
    doctor = okfgit("doctor", "--scope", "project", cwd=project)  # a warning: doctor still passes
    assert "block-hidden" in doctor.out and "AGENTS.override.md" in doctor.out
    # Codex's own home: an override there hides the global block
    okfgit("init", "--scope", "global", cwd=project)
    (project / "AGENTS.override.md").unlink()
    okfgit("sync", cwd=project)
    (home / ".codex" / "AGENTS.override.md").write_text("# mine\n")
    status = okfgit("status", cwd=project, expect=2)
    assert f"{home / '.codex' / 'AGENTS.override.md'} hides {home / '.codex' / 'AGENTS.md'}" in status.out
    doctor = okfgit("doctor", "--scope", "global", cwd=project)
    assert "block-hidden" in doctor.out and str(home / ".codex" / "AGENTS.override.md") in doctor.out
