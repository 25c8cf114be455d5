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


def test_the_process_exit_skips_teardown_but_keeps_every_byte_and_code(project: Path, okfgit: Runner,
                                                                       okfgit_proc: Runner) -> None:
    """``python -m okfgit`` (and the ``okfgit`` script) ends with ``os._exit`` after flushing
    (cli.run): output longer than a pipe's buffer arrives whole, exit codes are kept, and a
    write made just before it is on disk."""
    for n in range(40):
        okfgit("new", f"fact-{n:02d}", "--description", f"Fact {n} " + "word " * 40 + ".", "--no-edit",
               cwd=project)
    listed = okfgit_proc("search", "fact", "--json", cwd=project)
    assert len(listed.out) > 8192 and listed.out == okfgit("search", "fact", "--json", cwd=project).out
    assert okfgit_proc("sync", "--run", "no/such run", cwd=project, expect=2).err.startswith("okfgit: error: ")
    okfgit_proc("sync", cwd=project)
    assert (project / "AGENTS.md").is_file() and (project / ".git" / "okf" / "sync.json").is_file()
    assert okfgit_proc("status", cwd=project).out.rstrip().endswith("in sync")


def test_a_profiler_still_reports_at_exit(env: dict[str, str], tmp_path: Path) -> None:
    """With a profiler attached the process exits as Python usually does, so it reports."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "cProfile", "-m", "okfgit", "--version"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("okfgit, version ") and "function calls" in proc.stdout
