"""The no-op fast path: HEAD read without pygit2 agrees with git, and every change is noticed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from okfgit.git.repository import Repo
from okfgit.local import fastpath
from tests.conftest import Runner
from tests.test_projection import RUN, Kit, build_kit, project

FAST = "nothing to do: the knowledge at HEAD and every target are as okfgit left them"
FULL = "nothing to do: every target is up to date"


@pytest.fixture
def kit(home: Path, repo: Path, git: Runner) -> Kit:
    return build_kit(home, repo, git)


def rev(git: Runner, cwd: Path, what: str = "HEAD") -> str:
    return git("rev-parse", what, cwd=cwd).out.strip()


def agrees_with_the_git_layer(git: Runner, worktree: Path) -> str | None:
    """The hook path's reader of refs (``local/fastpath``) gives the git layer's answers (and
    git's): the repository, its common dir, HEAD's commit and the branch it names."""
    layer = Repo.open(worktree)
    root, gitdir = fastpath.find_repo(str(worktree))  # type: ignore[misc]
    assert (Path(root), Path(gitdir)) == (layer.workdir, layer.gitdir)
    assert Path(fastpath.common_dir(gitdir)) == layer.common_dir
    assert fastpath.head_ref(gitdir) == layer.head_branch()
    head = fastpath.read_head(gitdir)
    assert head == layer.head_commit()
    if head is not None:
        assert head == rev(git, worktree)
    return head


def test_the_hook_paths_reader_of_refs_agrees_with_the_git_layer(repo: Path, git: Runner, tmp_path: Path) -> None:
    """``local/fastpath`` is the one second reader of refs (spec/okf-layout.md, kept fast
    paths): held here to the git layer's answer in every shape of refs it reads."""
    agrees_with_the_git_layer(git, repo)  # loose ref
    git("pack-refs", "--all", "--prune", cwd=repo)
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    agrees_with_the_git_layer(git, repo)  # packed-refs
    git("commit", "-q", "--allow-empty", "-m", "two", cwd=repo)
    agrees_with_the_git_layer(git, repo)  # loose beside a stale packed one
    git("symbolic-ref", "refs/heads/alias", "refs/heads/main", cwd=repo)
    git("symbolic-ref", "HEAD", "refs/heads/alias", cwd=repo)
    assert fastpath.read_head(str(repo / ".git")) == rev(git, repo)  # a chain of symbolic refs
    git("checkout", "-q", "--detach", "HEAD~1", cwd=repo)
    agrees_with_the_git_layer(git, repo)  # detached
    git("checkout", "-q", "--orphan", "fresh", cwd=repo)
    assert agrees_with_the_git_layer(git, repo) is None  # unborn
    assert fastpath.head_token(str(tmp_path / "nowhere" / ".git")) == fastpath.ABSENT


def test_find_repo_in_a_linked_worktree(repo: Path, git: Runner, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "side", str(worktree), cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "side", cwd=worktree)
    (worktree / "deep" / "er").mkdir(parents=True)
    root, gitdir = fastpath.find_repo(str(worktree / "deep" / "er"))  # type: ignore[misc]
    assert root == str(worktree.resolve())
    assert gitdir == str((repo / ".git" / "worktrees" / "wt").resolve())
    assert fastpath.common_dir(gitdir) == str((repo / ".git").resolve())
    assert agrees_with_the_git_layer(git, worktree) != rev(git, repo)
    assert fastpath.head_token(str(worktree / ".git")) == rev(git, worktree)
    assert fastpath.find_repo("/") is None or fastpath.find_repo("/")[0] != str(repo)  # type: ignore[index]


def test_the_command_module_loads_neither_pygit2_nor_yaml(env: dict[str, str]) -> None:
    code = ("import sys, okfgit.cli, okfgit.commands.project\n"
            "print(sorted(m for m in ('pygit2', 'yaml', 'okfgit.git.repository') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_a_no_op_run_imports_neither_pygit2_nor_yaml(kit: Kit, okfgit: Runner, okfgit_proc: Runner) -> None:
    project(okfgit, kit)
    result = okfgit_proc("project", "--run", RUN, cwd=kit.repo, extra_env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.out.startswith(FAST)
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.err.splitlines() if "|" in line}
    assert "okfgit.local.fastpath" in imported
    assert not {"pygit2", "yaml", "okfgit.flows.projection", "okfgit.git.repository"} & imported


@pytest.mark.parametrize("change", [
    "commit-outside-kb", "edit-outside-block", "agent-file", "memory-md-edit", "okf-run-config", "scope", "env",
    "ownership-record", "new-global-tier-commit",
])
def test_every_relevant_change_ends_the_fast_path(change: str, kit: Kit, okfgit: Runner, git: Runner,
                                                  tmp_path: Path) -> None:
    project(okfgit, kit)
    assert project(okfgit, kit).out.startswith(FAST)
    args: list[str] = ["--run", RUN]
    extra: dict[str, str] = {}
    if change == "commit-outside-kb":
        (kit.repo / "app.py").write_text("print(1)\n")
        git("add", "app.py", cwd=kit.repo)
        git("commit", "-q", "-m", "code", cwd=kit.repo)
    elif change == "edit-outside-block":
        kit.claude_md.write_text(kit.claude_md.read_text() + "A new personal line.\n")
    elif change == "agent-file":
        (kit.memory / "agent_note.md").write_text("---\nname: agent-note\n---\nNote.\n")
    elif change == "memory-md-edit":
        with open(kit.memory / "MEMORY.md", "a") as fh:
            fh.write("- [Agent note](agent_note.md) \u2014 x\n")
    elif change == "okf-run-config":
        args = []
        git("config", "okf.run", RUN, cwd=kit.repo)
    elif change == "scope":
        args = ["--run", RUN, "--scope", "project"]
    elif change == "env":
        extra = {"CODEX_HOME": str(tmp_path / "codex2")}
        (tmp_path / "codex2").mkdir()
    elif change == "ownership-record":  # another okfgit run changed what okfgit owns (capture adopts a file)
        from okfgit.local import state

        owned = state.load(kit.repo / ".git")
        del owned.targets[str(kit.agents_md)]
        state.save(owned)
    elif change == "new-global-tier-commit":
        (kit.global_dir / "new.md").write_text("---\ntype: Note\ntitle: New\n"
                                               "okf_id: 0e0e0e0e-0000-4000-8000-00000000000e\n---\nNew.\n")
        git("add", "new.md", cwd=kit.global_dir)
        git("commit", "-q", "-m", "new", cwd=kit.global_dir)
    result = okfgit("project", *args, cwd=kit.repo, extra_env=extra)
    assert not result.out.startswith(FAST), change
    if change == "new-global-tier-commit":
        assert (kit.memory / "new.md").is_file()
    if change == "env":
        assert (tmp_path / "codex2" / "AGENTS.md").is_file()
    if change == "okf-run-config":
        assert (kit.memory / "state.md").is_file()  # the job tier still takes part, via git config
    again = okfgit("project", *args, cwd=kit.repo, extra_env=extra)
    assert again.out.startswith(FAST), (change, again)


def test_a_racy_stamp_is_not_trusted(kit: Kit, okfgit: Runner) -> None:
    project(okfgit, kit)
    stamp_mtime = kit.stamp.stat().st_mtime_ns
    stamp = json.loads(kit.stamp.read_text())
    os.utime(kit.claude_md, ns=(stamp_mtime, stamp_mtime))  # same tick as the stamp
    stamp["stats"][str(kit.claude_md)] = fastpath.stat_token(str(kit.claude_md))
    kit.stamp.write_text(json.dumps(stamp))
    os.utime(kit.stamp, ns=(stamp_mtime, stamp_mtime))
    env = dict(os.environ)
    assert not fastpath.check(env, str(kit.repo), repo=None, scope="all", target="all", run=RUN)
    assert project(okfgit, kit).out.startswith(FULL)  # the full run rewrites the stamp...
    assert project(okfgit, kit).out.startswith(FAST)  # ...after which it is trusted again


def test_check_says_not_sure_rather_than_fail(tmp_path: Path) -> None:
    assert not fastpath.check({}, str(tmp_path), repo=None, scope="all", target="all", run=None)
    (tmp_path / ".git").write_text("gitdir: /nowhere/at/all\n")
    assert not fastpath.check({}, str(tmp_path), repo=None, scope="all", target="all", run=None)
    (tmp_path / ".git").unlink()
    (tmp_path / ".git" / "okf").mkdir(parents=True)
    (tmp_path / ".git" / "okf" / "fastpath.json").write_text("{broken")
    assert not fastpath.check({"HOME": str(tmp_path)}, str(tmp_path), repo=None, scope="all", target="all", run=None)
