"""Exit codes are chosen in one place, cli.main: 0 ok, 2 usage/validation, 3 unwritable/integrity;
under --quiet (agent hooks; Claude Code reads 2 as "block") every failure is 1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import Runner

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("verb", ["sync", "project"])
def test_an_unwritable_target_is_3_and_1_under_quiet(project: Path, okfgit: Runner, verb: str) -> None:
    (project / "AGENTS.md").mkdir()  # a folder where okfgit writes a file: that target fails
    loud = okfgit(verb, cwd=project, expect=3)
    assert f"okfgit: warning: {project / 'AGENTS.md'}: is not a regular file" in loud.err
    quiet = okfgit(verb, "--quiet", cwd=project, expect=1)
    assert quiet.out == "" and f"okfgit: warning: {project / 'AGENTS.md'}: is not a regular file" in quiet.err


@pytest.mark.parametrize("verb", ["sync", "project"])
def test_an_integrity_error_is_3_and_1_under_quiet(project: Path, okfgit: Runner, verb: str) -> None:
    state = project / ".git" / "okf" / "state.json"
    state.parent.mkdir(exist_ok=True)
    state.write_text(json.dumps({"version": 99}))  # written by a newer okfgit: refuse, changing nothing
    assert "newer okfgit" in okfgit(verb, cwd=project, expect=3).err
    quiet = okfgit(verb, "--quiet", cwd=project, expect=1)
    assert quiet.out == "" and quiet.err.startswith("okfgit: error: ") and "newer okfgit" in quiet.err


@pytest.mark.parametrize("verb", ["sync", "project"])
def test_a_usage_error_is_2_and_1_under_quiet(project: Path, okfgit: Runner, verb: str) -> None:
    err = "okfgit: error: invalid run slug 'no/such run': letters, digits, '.', '_' and '-' only\n"
    assert okfgit(verb, "--run", "no/such run", cwd=project, expect=2).err == err
    assert okfgit(verb, "--quiet", "--run", "no/such run", cwd=project, expect=1).err == err


def test_quiet_success_is_0_and_silent(project: Path, okfgit: Runner) -> None:
    for verb in ("sync", "project"):
        r = okfgit(verb, "--quiet", cwd=project)
        assert (r.out, r.err) == ("", "")


def test_only_cli_main_chooses_an_exit_code() -> None:
    """No other module exits, and no command spells a code: it returns its report's."""
    exits = re.compile(r"\bsys\.exit\(|\bSystemExit\b|\bos\._exit\(")
    chosen = re.compile(r"^\s*return\s+(?:[1-9]|.*\belse [1-9]\b|.*\bEXIT_).*$", re.M)
    offenders = []
    for path in sorted((ROOT / "okfgit").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        if rel not in ("okfgit/cli.py", "okfgit/__main__.py") and exits.search(text):
            offenders.append(rel)
        if rel.startswith("okfgit/commands/"):
            offenders += [f"{rel}: {m.group(0).strip()}" for m in chosen.finditer(text)]
    assert offenders == []
