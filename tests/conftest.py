"""Test harness: real git repositories in temp folders, the real CLI, and a locked-out home.

Every test runs with HOME, XDG_*, CLAUDE_CONFIG_DIR and CODEX_HOME pointed into its own
temp folder (so are the agents' homes that follow HOME or XDG_CONFIG_HOME: ~/.gemini,
~/.copilot, ~/.config/opencode, ~/.config/amp; the variables that would move them elsewhere
are removed), system and global git config ignored, and a pinned author and clock, so
commit ids are reproducible and nothing can touch the real machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REAL_HOME = Path(os.path.expanduser("~")).resolve()
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BUNDLES = FIXTURES / "okf-bundles"  # real OKF v0.2 bundles and their licence (see its README.md)
EPOCH = "1764460800"  # 2025-11-30T00:00:00Z
THOROUGH = os.environ.get("OKFGIT_THOROUGH") == "1"  # .ci/run's second pass of the property tests


def examples(n: int) -> int:
    """How many generated cases a property test tries: ``n`` when OKFGIT_THOROUGH=1 (CI runs
    the property tests so once more), a quarter of it (at least 25) in the default run, which
    must stay well under its CPU budget."""
    return n if THOROUGH else max(25, n // 4)


# Hypothesis's too_slow health check times input generation on the wall clock: on a machine
# shared with other work it fails a test that proves nothing wrong. Every property test keeps
# its own example count (``examples``) and deadline; only that check is off.
settings.register_profile("okfgit", suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("okfgit")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each Hypothesis test ``property``, so ``-m property`` selects exactly them."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)


@dataclass
class Result:
    code: int
    out: str
    err: str

    def __repr__(self) -> str:  # shown by pytest on failure
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


# Variables that move a home okfgit writes into (or decide where its files go): removed from
# every test's environment, so that each of those homes is the temp HOME's.
SCRUBBED = ("GIT_", "OKF", "CLAUDE", "CODEX", "XDG_", "GEMINI", "COPILOT", "OPENCODE", "AMP_", "SANDBOX")


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CODEX_HOME=str(home / ".codex"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_AUTHOR_NAME="Test Author",
        GIT_AUTHOR_EMAIL="author@example.com",
        GIT_COMMITTER_NAME="Test Author",
        GIT_COMMITTER_EMAIL="author@example.com",
        GIT_AUTHOR_DATE=f"@{EPOCH} +0000",
        GIT_COMMITTER_DATE=f"@{EPOCH} +0000",
        SOURCE_DATE_EPOCH=EPOCH,
        EDITOR="false",
    )
    env.pop("CI", None)
    # Let the CLI processes use (and write) okfgit's bytecode cache: recompiling every
    # module in every subprocess would double the suite's time.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _make_home(home: Path) -> None:
    """A test's home: a git identity, and the folders of the agents that have run there."""
    home.mkdir()
    for agent in (".claude", ".codex"):  # a home where Claude Code and Codex have run
        (home / agent).mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[user]\n\tname = Test Author\n\temail = author@example.com\n")


@pytest.fixture(autouse=True)
def locked_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point every home-like variable into tmp_path, for in-process code too."""
    home = tmp_path / "home"
    _make_home(home)
    for key in list(os.environ):
        if key.startswith(SCRUBBED):
            monkeypatch.delenv(key, raising=False)
    for key, value in _git_env(home).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(Path, "home", _no_default_home)
    yield home


def _no_default_home() -> Path:
    raise RuntimeError("a test reached for the default home folder (Path.home()); pass HOME or a Context instead")


# What okfgit would write into if a test leaked out of its sandbox home: the agents' files,
# the global tier, and the memory folders of repositories under the temp folder.
GUARDED_FILES = (".claude/CLAUDE.md", ".claude/settings.json", ".codex/AGENTS.md", ".codex/config.toml",
                 ".cursor/mcp.json", ".gemini/GEMINI.md", ".gemini/settings.json", ".gemini/projects.json",
                 ".copilot/copilot-instructions.md", ".config/opencode/AGENTS.md", ".config/amp/AGENTS.md")
GUARDED_TREES = (".local/share/okf", ".codex")


def home_fingerprint(real_home: Path) -> dict[str, object]:
    """What a leaking test would change in ``real_home``: guarded files' bytes, the global tier's
    listing, memory folders of temp-folder repositories, and okfgit's MCP entry in ~/.claude.json.

    Only okfgit's own traces are compared, so a Claude Code session running on the same
    machine (which writes transcripts under ~/.claude/projects) cannot make it fail.
    """
    out: dict[str, object] = {}
    for name in GUARDED_FILES:
        path = real_home / name
        out[name] = path.read_bytes() if path.is_file() else None
    for name in GUARDED_TREES:
        root = real_home / name
        out[name] = sorted((str(p.relative_to(root)), p.stat().st_size if p.is_file() else -1)
                           for p in root.rglob("*")) if root.is_dir() else None
    projects = real_home / ".claude" / "projects"
    out["projects"] = sorted(p.name for p in projects.iterdir() if "-tmp-" in p.name) if projects.is_dir() else []
    out["gemini"] = _gemini_temp_memory(real_home / ".gemini" / "tmp")
    settings = real_home / ".claude.json"
    try:
        import json

        servers = json.loads(settings.read_text()).get("mcpServers") or {}
        out[".claude.json"] = sorted(k for k in servers if "okf" in k)
    except (OSError, ValueError, AttributeError):
        out[".claude.json"] = None
    return out


def _gemini_temp_memory(root: Path) -> list[str]:
    """Files in the Gemini CLI memory folders of projects in the temp folder (a Gemini session
    on this machine writes its own chats and logs there: only okfgit's kind of trace counts)."""
    import tempfile

    temp = os.path.realpath(tempfile.gettempdir())
    out: list[str] = []
    for project in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            owner = (project / ".project_root").read_text().strip()
        except OSError:
            continue
        if owner.startswith((temp, "/tmp/")):
            memory = project / "memory"
            out += sorted(str(p.relative_to(root)) for p in memory.rglob("*")) if memory.is_dir() else []
    return out


@pytest.fixture(autouse=True, scope="session")
def real_home_untouched() -> Iterator[None]:
    """The real ~/.claude, ~/.codex, the agents' home files, their memory folders of temp-folder
    projects and the XDG data folder are the same after the run as before it."""
    before = home_fingerprint(REAL_HOME)
    yield
    assert home_fingerprint(REAL_HOME) == before, "the test run changed files in the real home folder"


@pytest.fixture
def env(locked_home: Path) -> dict[str, str]:
    return _git_env(locked_home)


@pytest.fixture
def home(locked_home: Path) -> Path:
    return locked_home


Runner = Callable[..., Result]


def _run_in_process(args: tuple[str, ...], cwd: Path, input: str | None, env: dict[str, str]) -> Result:
    """The real CLI entry point (``okfgit.cli.main``) in this process, as click's CliRunner runs it."""
    from click.testing import CliRunner

    from okfgit.cli import main

    runner = CliRunner()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        with runner.isolation(input=input, env=env) as (out, err, _):
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            sys.stdout.flush()
            sys.stderr.flush()
            return Result(code, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace"))
    finally:
        os.chdir(before)


def _run_process(args: tuple[str, ...], cwd: Path, input: str | None, env: dict[str, str]) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "okfgit", *args], cwd=cwd, env=env, input=input,
        capture_output=True, text=True, timeout=120,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _runner(env: dict[str, str], how: Callable[[tuple[str, ...], Path, str | None, dict[str, str]], Result]) -> Runner:
    def run(*args: str, cwd: Path, input: str | None = None, extra_env: dict[str, str] | None = None,
            expect: int | None = 0) -> Result:
        full = dict(env)
        if extra_env:
            full.update(extra_env)
        result = how(args, cwd, input, full)
        if expect is not None:
            assert result.code == expect, result
        return result

    return run


@pytest.fixture
def okfgit(env: dict[str, str]) -> Runner:
    """Run the real CLI in this process (click's CliRunner): okfgit("new", "x", cwd=repo) -> Result."""
    return _runner(env, _run_in_process)


@pytest.fixture
def okfgit_proc(env: dict[str, str]) -> Runner:
    """Run the real CLI as its own process, where a real process matters (hooks, crashes, locks, imports)."""
    return _runner(env, _run_process)


@pytest.fixture
def git(env: dict[str, str]) -> Runner:
    """Run real git: git("log", "--oneline", cwd=repo) -> Result (exit 0 expected)."""
    return _git_runner(env)


def _git_runner(env: dict[str, str]) -> Runner:
    def run(*args: str, cwd: Path, input: str | None = None, expect: int | None = 0,
            extra_env: dict[str, str] | None = None) -> Result:
        full = dict(env)
        if extra_env:
            full.update(extra_env)
        proc = subprocess.run(["git", *args], cwd=cwd, env=full, input=input, capture_output=True, text=True,
                              timeout=120)
        result = Result(proc.returncode, proc.stdout, proc.stderr)
        if expect is not None:
            assert proc.returncode == expect, result
        return result

    return run


def _make_repo(path: Path, git: Runner) -> None:
    path.mkdir()
    git("init", "-q", "-b", "main", cwd=path)
    (path / "README.md").write_text("# proj\n")
    git("add", "README.md", cwd=path)
    git("commit", "-q", "-m", "initial", cwd=path)


def _make_project(path: Path, git: Runner, okfgit: Runner) -> None:
    _make_repo(path, git)
    okfgit("init", "--scope", "project", cwd=path)


@dataclass
class _Template:
    """A repository built once: each folder and file (bytes, or None for a folder; mode) by
    its path, a folder before what is in it."""

    entries: dict[str, tuple[bytes | None, int]]
    git: Runner  # git in the environment it was built in


_TEMPLATES: dict[str, _Template] = {}
_AS_WRITTEN: dict[Path, list[tuple[str, int, int, int]]] = {}  # a written repo: its files' stat data then


def _template(kind: str, make: Callable[[Path, Runner, Runner], None], factory: pytest.TempPathFactory) -> _Template:
    """What ``make`` builds, built once in this session, in a home made as every test's home is
    and with the environment every test has."""
    template = _TEMPLATES.get(kind)
    if template is None:
        root = factory.mktemp(f"template-{kind}")
        home = root / "home"
        _make_home(home)
        env = _git_env(home)
        made = root / "proj"
        make(made, _git_runner(env), _runner(env, _run_in_process))
        entries: dict[str, tuple[bytes | None, int]] = {}
        for folder, _, files in os.walk(made):
            entries[os.path.relpath(folder, made)] = None, os.stat(folder).st_mode & 0o7777
            for name in files:
                path = os.path.join(folder, name)
                assert not os.path.islink(path), path
                with open(path, "rb") as fh:
                    entries[os.path.relpath(path, made)] = fh.read(), os.stat(path).st_mode & 0o7777
        template = _TEMPLATES[kind] = _Template(entries, _git_runner(env))
    return template


def _write(dest: Path, entries: list[tuple[str, tuple[bytes | None, int]]], git: Runner) -> None:
    """Write ``entries`` (of a template) under ``dest``, each file anew, then let git record the
    files' stat data in the index as it does in a repository made in place: the index holds
    the template's (inode, times), and the crash tests read it with diff-files, which trusts it."""
    for rel, (data, mode) in entries:
        path = os.path.normpath(dest / rel)
        if data is None:
            os.makedirs(path, mode, exist_ok=True)
            continue
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    git("update-index", "-q", "--refresh", cwd=dest)
    _AS_WRITTEN[dest] = _stat_data(dest)


def _stat_data(root: Path) -> list[tuple[str, int, int, int]]:
    out = []
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            st = os.lstat(os.path.join(folder, name))
            out.append((os.path.join(folder, name), st.st_ino, st.st_size, st.st_mtime_ns))
    return out


@pytest.fixture
def repo(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh project repository with one commit (a README).

    Built once per session and written out for each test (git init, add and commit in every
    test cost a fifth of the suite's CPU): the same repository, byte for byte and mode for
    mode (author and clock are pinned, and git records no path in it), its files written now."""
    template = _template("repo", lambda path, git, _: _make_repo(path, git), tmp_path_factory)
    _write(tmp_path / "proj", list(template.entries.items()), template.git)
    return tmp_path / "proj"


@pytest.fixture
def project(repo: Path, okfgit: Runner, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project repository whose project tier is initialised (``okfgit init --scope project``).

    While ``repo`` is as it was written, what the init adds and changes (the same every time:
    nothing in it depends on the path) is written into it from a repository built once and
    initialised; after a fixture changed ``repo``, the init runs on what it made."""
    before = _TEMPLATES["repo"].entries
    after = _template("project", _make_project, tmp_path_factory)
    if _stat_data(repo) == _AS_WRITTEN.get(repo) and before.keys() <= after.entries.keys():
        _write(repo, [(rel, entry) for rel, entry in after.entries.items() if before.get(rel) != entry], after.git)
    else:
        okfgit("init", "--scope", "project", cwd=repo)
    return repo


def built_once(kind: str, make: Callable[[Path, Runner, Runner], None], dest: Path,
               factory: pytest.TempPathFactory) -> Path:
    """What ``make(path, git, okfgit)`` builds, built once in this session under the name
    ``kind`` (as ``repo`` is) and written out at ``dest`` for this test: for a repository
    that several tests start from, whose building costs more than its writing."""
    template = _template(kind, make, factory)
    _write(dest, list(template.entries.items()), template.git)
    return dest


def make_project(path: Path, git: Runner, okfgit: Runner) -> None:
    """A project repository at ``path`` as the ``project`` fixture gives it (for ``built_once``)."""
    _make_project(path, git, okfgit)


def trailers_by_git(git: Runner, cwd: Path, rev: str = "HEAD") -> list[tuple[str, str]]:
    """Trailers of a commit as `git interpret-trailers --parse` reads them."""
    message = git("log", "-1", "--format=%B", rev, cwd=cwd).out
    parsed = git("interpret-trailers", "--parse", cwd=cwd, input=message).out
    out = []
    for line in parsed.splitlines():
        key, _, value = line.partition(": ")
        out.append((key, value))
    return out


def fsck(git: Runner, cwd: Path) -> None:
    result = git("fsck", "--strict", "--no-progress", cwd=cwd)
    assert "error" not in result.err.lower(), result
