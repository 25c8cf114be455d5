"""The README's set-up, run as written: after its commands every agent's file carries okfgit's content.

The commands are read from README.md itself, so the README cannot drift from what works. The
install line (`pipx install .`) is not run: the test puts the okfgit under test on PATH, as the
install would, and runs the set-up line through a real shell in a sandbox HOME.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import Runner
from tests.test_capture import memory

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "/path/to/your/project"


def setup_block() -> list[str]:
    """The command lines of the first shell block under "## Set up"."""
    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## Set up\n(.*?)(?=^## )", text, re.M | re.S)
    assert section, "README.md has no '## Set up' section"
    block = re.search(r"```sh\n(.*?)```", section.group(1), re.S)
    assert block, "the set-up section has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_install_line_works_where_pip_is_refused_and_leaves_okfgit_on_path() -> None:
    lines = setup_block()
    assert lines[0] == "pipx install ."  # PEP 668 systems refuse a plain pip install; pipx puts okfgit on PATH
    readme = (ROOT / "README.md").read_text()
    assert "python3 -m venv" in readme and "~/.local/bin/okfgit" in readme  # the venv alternative, for hooks


def test_the_readme_setup_line_leaves_okfgits_block_in_every_agents_file(
        tmp_path: Path, repo: Path, env: dict[str, str], home: Path, git: Runner) -> None:
    lines = setup_block()
    setup = next(line for line in lines if line.startswith(f"cd {PLACEHOLDER} && "))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "okfgit"  # what `pipx install .` leaves on PATH, running the code under test
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m okfgit "$@"\n')
    wrapper.chmod(0o755)
    shell_env = dict(env, PATH=f"{bin_dir}:{env['PATH']}", PYTHONPATH=str(ROOT))
    proc = subprocess.run(["sh", "-c", setup.replace(PLACEHOLDER, str(repo))], cwd=tmp_path, env=shell_env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr

    global_begin = "<!-- okf:begin id=global -->"
    assert global_begin in (home / ".claude" / "CLAUDE.md").read_text()
    assert global_begin in (home / ".codex" / "AGENTS.md").read_text()
    assert "<!-- okf:begin id=project -->" in (repo / "AGENTS.md").read_text()
    memory_md = (memory(repo, env, home) / "MEMORY.md").read_text()
    assert "knowledge index" in memory_md and str(repo / ".okf" / "index.md") in memory_md
    # the git hooks are installed and call okfgit by name, from PATH
    assert "okfgit" in (repo / ".git" / "hooks" / "post-commit").read_text()
    # what the README says to commit next
    assert "git add AGENTS.md && git commit" in (ROOT / "README.md").read_text()
    git("add", "AGENTS.md", cwd=repo)
    git("commit", "-q", "-m", "AGENTS.md: okfgit's knowledge block", cwd=repo)
