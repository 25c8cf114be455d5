"""The global tier through a git remote: init --remote, the remote verb, and sync's exchange.

Two machines are two sandbox homes (HOME, XDG_*, CLAUDE_CONFIG_DIR, CODEX_HOME) sharing
one bare repository on disk as the remote; everything runs real git.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from okfgit.targets.claude_home import memory_dir
from tests.conftest import Result, Runner, _git_env, _run_in_process, _run_process, _runner, fsck, trailers_by_git


@dataclass
class Machine:
    home: Path
    env: dict[str, str]
    okfgit: Runner
    proc: Runner
    proj: Path

    @property
    def tier(self) -> Path:
        return self.home / ".local" / "share" / "okf"

    @property
    def memory(self) -> Path:
        return memory_dir(self.proj.resolve(), self.env, self.home).path

    def git(self, *args: str, cwd: Path | None = None, expect: int | None = 0) -> Result:
        proc = subprocess.run(["git", *args], cwd=cwd or self.tier, env=self.env, capture_output=True, text=True,
                              timeout=120)
        result = Result(proc.returncode, proc.stdout, proc.stderr)
        if expect is not None:
            assert proc.returncode == expect, result
        return result

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").out.strip()

    def new(self, slug: str, description: str) -> None:
        self.okfgit("new", slug, "--scope", "global", "--description", description, cwd=self.proj)

    def edit(self, path: str, old: str, new: str) -> None:
        """A person edits a global concept and commits it with plain git."""
        file = self.tier / path
        file.write_text(file.read_text().replace(old, new))
        self.git("commit", "-q", "-am", f"edit {path}")


def machine(tmp_path: Path, name: str) -> Machine:
    home = tmp_path / name
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[user]\n\tname = Test Author\n"
                                     "\temail = author@example.com\n")
    env = _git_env(home)
    proj = home / "proj"
    proj.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=proj, env=env, check=True, capture_output=True)
    return Machine(home, env, _runner(env, _run_in_process), _runner(env, _run_process), proj)


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True, capture_output=True)
    return path


@pytest.fixture
def a(tmp_path: Path) -> Machine:
    return machine(tmp_path, "a")


@pytest.fixture
def b(tmp_path: Path) -> Machine:
    return machine(tmp_path, "b")


def remote_log(bare: Path) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%H", "main"], cwd=bare, capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else []


# -- init --remote and the remote verb ----------------------------------------------------------


def test_init_with_an_empty_remote_pushes_the_local_tier(a: Machine, bare: Path) -> None:
    result = a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    assert "pushed the local tier" in result.out
    assert remote_log(bare) == [a.head()]
    assert a.git("config", "branch.main.remote").out.strip() == "origin"


def test_init_from_a_remote_with_history_clones_it(a: Machine, b: Machine, bare: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.new("use-uv", "Python projects use uv for environments.")
    a.okfgit("sync", cwd=a.proj)
    assert remote_log(bare)[0] == a.head()
    result = b.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=b.proj)
    assert "took the remote's history" in result.out
    assert b.head() == a.head()
    assert (b.tier / "use-uv.md").read_bytes() == (a.tier / "use-uv.md").read_bytes()
    assert b.git("status", "--porcelain").out == ""
    b.okfgit("sync", cwd=b.proj)
    assert any("uv for environments" in f.read_text() for f in b.memory.glob("*.md"))


def test_init_merges_an_existing_local_tier_by_concept(a: Machine, b: Machine, bare: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.new("from-a", "A fact machine A learned.")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    b.okfgit("init", "--scope", "global", cwd=b.proj)
    b.new("from-b", "A fact machine B learned.")
    mine = b.head()
    result = b.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=b.proj)
    assert "merged the remote's history by concept" in result.out
    assert (b.tier / "from-a.md").exists() and (b.tier / "from-b.md").exists()
    parents = b.git("log", "-1", "--format=%P").out.split()
    assert mine in parents and a.head() in parents
    message = b.git("log", "-1", "--format=%B").out
    assert "Okf-Operation: merge" in message and f"Okf-Source: {bare}" in message
    index = (b.tier / "index.md").read_text()
    assert "from-a.md" in index and "from-b.md" in index
    assert remote_log(bare)[0] == b.head()
    b.okfgit("doctor", "--scope", "global", cwd=b.proj)


def test_a_url_with_a_password_is_refused(a: Machine) -> None:
    result = a.okfgit("init", "--scope", "global", "--remote", "https://me:s3cret@example.com/kb.git",
                      cwd=a.proj, expect=2)
    assert "password" in result.err and "s3cret" not in result.err + result.out
    a.okfgit("init", "--scope", "global", cwd=a.proj)
    assert "s3cret" not in a.okfgit("remote", "set", "https://me:s3cret@example.com/kb.git", cwd=a.proj,
                                    expect=2).err
    assert "origin" not in a.git("remote").out


def test_remote_show_set_remove_and_a_plain_git_remote(a: Machine, bare: Path, tmp_path: Path) -> None:
    a.okfgit("init", "--scope", "global", cwd=a.proj)
    assert "global remote: none" in a.okfgit("remote", cwd=a.proj).out
    a.git("remote", "add", "origin", str(bare))  # a plain git remote is respected
    a.new("x", "A fact.")
    result = a.okfgit("sync", cwd=a.proj)
    assert "pushed the global tier" in result.out
    assert remote_log(bare)[0] == a.head()
    shown = json.loads(a.okfgit("remote", "show", "--json", cwd=a.proj).out)
    assert shown["url"] == str(bare) and shown["ahead"] == 0 and shown["behind"] == 0
    assert shown["last_exchange"] is not None
    other = tmp_path / "other.git"
    subprocess.run(["git", "init", "-q", "--bare", str(other)], check=True)
    assert str(other) in a.okfgit("remote", "set", str(other), cwd=a.proj).out
    assert a.git("remote", "get-url", "origin").out.strip() == str(other)
    assert "removed" in a.okfgit("remote", "remove", cwd=a.proj).out
    assert a.git("remote").out == ""
    assert "global remote: none" in a.okfgit("remote", "show", cwd=a.proj).out


def test_init_with_an_unreachable_remote_changes_nothing(a: Machine, tmp_path: Path) -> None:
    result = a.okfgit("init", "--scope", "global", "--remote", str(tmp_path / "nowhere.git"), cwd=a.proj, expect=3)
    assert "cannot fetch" in result.err
    assert a.git("remote").out == ""
