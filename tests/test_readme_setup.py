"""The README, run as written: every command it shows works, in a fresh home.

The commands are read from README.md itself, so the README cannot drift from what works. In the
default run the okfgit under test stands where the install puts it (a wrapper on PATH) and each
shell block runs through a real shell, as a person pastes it; the slow test runs the install
lines themselves (pipx, a virtualenv) on the system Python, as on a fresh Debian machine, where
a bare `pip install` is refused (PEP 668) and there is no `python`, only `python3`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.test_capture import memory

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PLACEHOLDER = "/path/to/your/project"


def section(heading: str) -> str:
    """The text under a ``##`` heading, its ``###`` subsections included."""
    found = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## )", README, re.M | re.S)
    assert found, f"README.md has no '{heading}' section"
    return found.group(1)


def sh_blocks(text: str = README) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def setup_block() -> list[str]:
    """The command lines of the first shell block under "## Set up"."""
    return [line for line in sh_blocks(section("Set up"))[0].splitlines() if line.strip()]


def readme_test_command() -> str:
    """The README's one test command line."""
    found = [b.strip() for b in sh_blocks(section("Set up")) if "pytest" in b]
    assert len(found) == 1 and "\n" not in found[0], found
    return found[0]


def okfgit_on_path(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment with the okfgit under test where an install puts it: a script on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "okfgit"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m okfgit "$@"\n')
    wrapper.chmod(0o755)
    return dict(env, PATH=f"{bin_dir}:{env['PATH']}", PYTHONPATH=str(ROOT))


def run_block(block: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A README shell block as a person pastes it: each line in turn, stopping at a failure."""
    proc = subprocess.run(["bash", "-e", "-c", block], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (block, proc.stdout, proc.stderr)
    return proc


# -- what the README asks of a machine ---------------------------------------------------------


def test_every_install_the_readme_shows_works_where_a_bare_pip_is_refused() -> None:
    """PEP 668 systems (Debian, Ubuntu) refuse `pip install` outside a virtualenv and have no
    `python`: every pip the README runs is a virtualenv's or pipx's, every python is python3
    or a virtualenv's."""
    for block in sh_blocks():
        for line in block.splitlines():
            command = line.split("#", 1)[0]
            for match in re.finditer(r"(\S*)\bpip3? install", command):
                assert match.group(1).endswith("/bin/") or match.group(0).startswith("pipx"), line
            assert not re.search(r"(?<![\w/.-])python(?![\w.-])", command), line
    for span in re.findall(r"`([^`\n]+)`", README):  # the commands the prose shows, too
        assert not re.search(r"(?<![\w/.-])python(?![\w.-])", span), span
    assert setup_block()[0] == "pipx install . && pipx ensurepath"
    assert "python3 -m venv" in README and "mkdir -p ~/.local/bin" in README  # the venv way, for hooks


def test_ci_runs_exactly_the_readme_test_command() -> None:
    assert readme_test_command() == ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
                                     ".venv/bin/python -m pytest")
    assert readme_test_command() in (ROOT / ".ci" / "run").read_text().splitlines()


# -- the commands, run as written ---------------------------------------------------------------


def test_the_readme_setup_line_leaves_okfgits_block_in_every_agents_file(
        tmp_path: Path, repo: Path, env: dict[str, str], home: Path, git: Runner) -> None:
    setup = next(line for line in setup_block() if line.startswith(f"cd {PLACEHOLDER} && "))
    run_block(setup.replace(PLACEHOLDER, str(repo)), tmp_path, okfgit_on_path(tmp_path, env))

    global_begin = "<!-- okf:begin id=global -->"
    assert global_begin in (home / ".claude" / "CLAUDE.md").read_text()
    assert global_begin in (home / ".codex" / "AGENTS.md").read_text()
    assert "<!-- okf:begin id=project -->" in (repo / "AGENTS.md").read_text()
    memory_md = (memory(repo, env, home) / "MEMORY.md").read_text()
    assert "knowledge index" in memory_md and str(repo / ".okf" / "index.md") in memory_md
    # the git hooks are installed and call okfgit by name, from PATH
    assert "okfgit" in (repo / ".git" / "hooks" / "post-commit").read_text()
    # what the README says to commit next
    commit = sh_blocks(section("Set up"))[1].strip()
    assert commit.startswith("git add AGENTS.md && git commit")
    run_block(commit, repo, env)


def test_the_first_session_the_run_and_the_review_work_as_written(tmp_path: Path, env: dict[str, str],
                                                                  git: Runner) -> None:
    """"A first session" in any git repository (`my-project`), then the run, its promotion (no
    remote yet: the commands are printed) and the review of its branch, then MCP."""
    shell = okfgit_on_path(tmp_path, env)
    project = tmp_path / "my-project"
    project.mkdir()
    git("init", "-q", "-b", "main", cwd=project)
    git("commit", "-q", "--allow-empty", "-m", "initial", cwd=project)

    first = run_block(sh_blocks(section("A first session"))[0], tmp_path, shell)
    assert "project:decisions/cache-policy.md@" in first.stdout + first.stderr
    assert "Okf-Operation: new" in first.stdout

    run = sh_blocks(section("From a run to a reviewed pull request"))
    promoted = run_block(run[0], project, shell)
    assert "has no remote yet" in promoted.stdout and "git remote add origin '<url>'" in promoted.stdout
    assert "proposed supersession" not in promoted.stderr  # the contradicting note stays in the run
    body = project / ".git" / "okf" / "pr-bodies" / "okf-cache-speedup.md"
    assert body.is_file()
    reviewed = run_block(run[1], project, shell)
    assert "## okfgit review: merge" in reviewed.stdout and "okf-harvest" in reviewed.stdout
    assert git("branch", "--show-current", cwd=project).out.strip() == "main"

    mcp = [line for line in sh_blocks(section("Agents over MCP"))[0].splitlines()
           if not line.startswith(("pipx ", " "))]  # the SDK is installed here; the slow test injects it
    served = run_block("\n".join(mcp), project, shell)
    assert "MCP SDK: installed" in served.stdout
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["okfgit"]["command"] == "okfgit"


# -- the install lines, for real ----------------------------------------------------------------


def fresh_home(tmp_path: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A new account's home (/etc/skel's files, a git identity) and the environment a login
    shell starts from: the system's PATH only, no virtualenv, none of the test's."""
    home = tmp_path / name
    shutil.copytree("/etc/skel", home) if Path("/etc/skel").is_dir() else home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = A Person\n\temail = person@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n")
    return home, {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def login(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``command`` in a new login shell, as in a new terminal (its ~/.profile puts ~/.local/bin
    on PATH once it exists)."""
    return subprocess.run(["bash", "-l", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900, stdin=subprocess.DEVNULL)


def checkout(tmp_path: Path) -> Path:
    """This checkout's files (tracked and new, not ignored), as a clone would have them."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    out = tmp_path / "okfgit-checkout"
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, out / rel)
    return out


@pytest.mark.slow
def test_the_readme_install_lines_work_on_the_system_python(tmp_path: Path) -> None:
    if shutil.which("pipx", path="/usr/local/bin:/usr/bin:/bin") is None:
        pytest.fail("pipx is not installed; the README's install needs it (apt-get install pipx)")
    source = checkout(tmp_path)
    home, env = fresh_home(tmp_path, "pipx-user")
    lines = setup_block()

    installed = login(lines[0], source, env)
    assert installed.returncode == 0, installed.stderr
    project = home / "project"
    assert login(f"mkdir {project} && cd {project} && git init -q && git commit -q --allow-empty -m initial",
                 home, env).returncode == 0
    setup = login(lines[1].replace(PLACEHOLDER, str(project)), home, env)  # a new terminal
    assert setup.returncode == 0, setup.stderr
    assert "<!-- okf:begin id=project -->" in (project / "AGENTS.md").read_text()
    assert "okfgit" in (project / ".git" / "hooks" / "post-commit").read_text()

    before = login("okfgit mcp status", project, env)
    assert "MCP SDK: missing, so `okfgit mcp` cannot serve; install it with: pipx inject okfgit 'mcp>=2.2,<3'" \
        in before.stdout, before
    inject = sh_blocks(section("Agents over MCP"))[0].splitlines()[0].split("#", 1)[0].strip()
    assert login(inject, project, env).returncode == 0
    assert "MCP SDK: installed" in login("okfgit mcp status", project, env).stdout

    venv_home, venv_env = fresh_home(tmp_path, "venv-user")
    recipe = next(b.strip() for b in sh_blocks(section("Set up")) if b.startswith("python3 -m venv ~/.venvs"))
    made = login(recipe, source, venv_env)  # from the checkout, as the README says
    assert made.returncode == 0, made.stderr
    found = login("command -v okfgit && okfgit --version", venv_home, venv_env)
    assert found.stdout.splitlines()[0] == str(venv_home / ".local" / "bin" / "okfgit"), found

    managed = list(Path("/usr/lib").glob("python3*/EXTERNALLY-MANAGED"))
    if managed:  # why the README never says a bare pip install: this system refuses it
        refused = login("python3 -m pip install --dry-run .", source, env)
        assert refused.returncode != 0 and "externally-managed-environment" in refused.stdout + refused.stderr
