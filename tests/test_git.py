"""The git layer's writes against real repositories: CAS commits, working tree and index updates."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from okfgit.context import Context
from okfgit.errors import RefMoved, RepoStateError
from okfgit.git import commit
from okfgit.git.objects import blob_oid
from okfgit.git.repository import Repo
from tests.conftest import Runner, fsck


def ctx_for(env: dict[str, str], cwd: Path) -> Context:
    return Context(environ=env, cwd=cwd)


def test_blob_oid_is_git_hash_object(tmp_path: Path) -> None:
    data = b"---\ntype: Note\n---\nbody \xe2\x80\x94\n"
    (tmp_path / "f").write_bytes(data)
    expected = subprocess.run(["git", "hash-object", str(tmp_path / "f")], capture_output=True, text=True).stdout
    assert blob_oid(data) == expected.strip()


def test_commit_paths_moves_only_written_paths(repo: Path, env: dict[str, str], git: Runner) -> None:
    (repo / "staged.txt").write_text("staged\n")
    git("add", "staged.txt", cwd=repo)
    (repo / "unstaged.txt").write_text("mine\n")
    r = Repo.open(repo)
    head = r.head_commit()
    oid = r.commit_paths(ctx_for(env, repo), {"kb/a.md": b"A\n", "README.md": None}, "okf: test\n")
    assert git("rev-parse", "HEAD", cwd=repo).out.strip() == oid
    assert git("rev-parse", "HEAD~1", cwd=repo).out.strip() == head
    assert git("show", "--name-status", "--format=", "HEAD", cwd=repo).out.split() == ["D", "README.md", "A", "kb/a.md"]
    assert (repo / "kb" / "a.md").read_bytes() == b"A\n"
    assert not (repo / "README.md").exists()
    status = git("status", "--porcelain", cwd=repo).out.splitlines()
    assert status == ["A  staged.txt", "?? unstaged.txt"]
    assert "okfgit: okf: test" in git("reflog", "-1", "--format=%gs", cwd=repo).out
    fsck(git, repo)


def test_commit_on_unborn_branch(tmp_path: Path, env: dict[str, str], git: Runner) -> None:
    path = tmp_path / "fresh"
    git("init", "-q", "-b", "main", str(path), cwd=tmp_path)
    r = Repo.open(path)
    assert r.head_commit() is None
    oid = r.commit_paths(ctx_for(env, path), {"index.md": b"# x\n"}, "okf: first\n")
    assert git("rev-list", "--count", "HEAD", cwd=path).out.strip() == "1"
    assert git("rev-parse", "HEAD", cwd=path).out.strip() == oid


def test_commit_ids_are_reproducible(tmp_path: Path, env: dict[str, str], git: Runner) -> None:
    oids = []
    for name in ("a", "b"):
        path = tmp_path / name
        git("init", "-q", "-b", "main", str(path), cwd=tmp_path)
        oids.append(Repo.open(path).commit_paths(ctx_for(env, path), {"x.md": b"x\n"}, "okf: x\n"))
    assert oids[0] == oids[1]


def test_cas_refuses_when_branch_moved_underneath(repo: Path, env: dict[str, str], git: Runner) -> None:
    r = Repo.open(repo)
    ctx = ctx_for(env, repo)
    # Simulate a concurrent writer: build our commit on the old HEAD, then move the branch first.
    old = r.head_commit()
    (repo / "other.txt").write_text("o\n")
    git("add", "other.txt", cwd=repo)
    git("commit", "-q", "-m", "concurrent", cwd=repo)
    moved = git("rev-parse", "HEAD", cwd=repo).out.strip()
    with pytest.raises(RefMoved, match="moved while okfgit was writing"):
        commit.move_ref(r, ctx, "refs/heads/main", old or "", old, "okf: x\n")
    assert git("rev-parse", "HEAD", cwd=repo).out.strip() == moved


def test_a_plan_from_a_head_that_moved_is_ref_moved_and_changes_nothing(repo: Path, env: dict[str, str],
                                                                        git: Runner) -> None:
    """One error type for "the branch moved" (a stale base, a lost compare-and-swap): a caller
    may plan again on the new head."""
    r = Repo.open(repo)
    planned_on = r.head_commit()
    git("commit", "-q", "--allow-empty", "-m", "someone else", cwd=repo)
    moved = git("rev-parse", "HEAD", cwd=repo).out.strip()
    for branch in (None, "main"):
        with pytest.raises(RefMoved, match="moved while okfgit was preparing"):
            r.commit_paths(ctx_for(env, repo), {"x.md": b"x\n"}, "okf: x\n", base=planned_on, branch=branch)
    assert git("rev-parse", "HEAD", cwd=repo).out.strip() == moved and not (repo / "x.md").exists()
    assert not (repo / ".git" / "okf" / "journal" / "main.json").exists()


@pytest.mark.parametrize("marker, words", [
    ("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert"),
    ("BISECT_LOG", "bisect"), ("rebase-merge", "rebase"),
])
def test_refuses_mid_operation(repo: Path, env: dict[str, str], git: Runner, marker: str, words: str) -> None:
    head = git("rev-parse", "HEAD", cwd=repo).out.strip()
    target = repo / ".git" / marker
    if marker.startswith("rebase"):
        target.mkdir()
        (target / "head-name").write_text("refs/heads/main\n")
        (target / "onto").write_text(head + "\n")
    else:
        target.write_text(head + "\n")
    with pytest.raises(RepoStateError, match=words):
        Repo.open(repo).commit_paths(ctx_for(env, repo), {"x.md": b"x\n"}, "okf: x\n")
    assert git("rev-parse", "HEAD", cwd=repo).out.strip() == head
    assert not (repo / "x.md").exists()


def test_untracked_file_in_the_way_is_never_overwritten(repo: Path, env: dict[str, str], git: Runner) -> None:
    (repo / "x.md").write_text("a person's unsaved words\n")
    with pytest.raises(RepoStateError, match="uncommitted edits in x.md"):
        Repo.open(repo).commit_paths(ctx_for(env, repo), {"x.md": b"ours\n"}, "okf: x\n")
    assert (repo / "x.md").read_text() == "a person's unsaved words\n"


def test_branch_commit_leaves_checkout_alone(repo: Path, env: dict[str, str], git: Runner) -> None:
    r = Repo.open(repo)
    head = r.head_commit()
    oid = r.commit_paths(ctx_for(env, repo), {"kb/x.md": b"x\n"}, "okf: x\n", branch="okf/x", new_branch=True)
    assert git("rev-parse", "HEAD", cwd=repo).out.strip() == head
    assert git("rev-parse", "okf/x", cwd=repo).out.strip() == oid
    assert not (repo / "kb").exists()
    assert git("status", "--porcelain", cwd=repo).out == ""


def test_refuses_to_write_through_a_committed_symlinked_folder(repo: Path, env: dict[str, str], git: Runner,
                                                               tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "kb").symlink_to(outside, target_is_directory=True)
    git("add", "kb", cwd=repo)
    git("commit", "-q", "-m", "link", cwd=repo)
    head = git("rev-parse", "HEAD", cwd=repo).out
    with pytest.raises(RepoStateError, match="kb is a symlink at HEAD, not a folder"):
        Repo.open(repo).commit_paths(ctx_for(env, repo), {"kb/leak.md": b"x\n"}, "okf: x\n")
    assert list(outside.iterdir()) == []
    assert git("rev-parse", "HEAD", cwd=repo).out == head
    assert git("status", "--porcelain", cwd=repo).out == ""


def test_refuses_a_file_where_a_folder_is_needed(repo: Path, env: dict[str, str], git: Runner) -> None:
    (repo / "notes").write_text("plain\n")
    git("add", "notes", cwd=repo)
    git("commit", "-q", "-m", "n", cwd=repo)
    head = git("rev-parse", "HEAD", cwd=repo).out
    with pytest.raises(RepoStateError, match="notes is a file at HEAD, not a folder"):
        Repo.open(repo).commit_paths(ctx_for(env, repo), {"notes/x.md": b"x\n"}, "okf: x\n")
    assert git("rev-parse", "HEAD", cwd=repo).out == head
    assert git("status", "--porcelain", cwd=repo).out == ""


def test_refuses_an_uncommitted_symlinked_folder(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (repo / "kb").symlink_to(outside, target_is_directory=True)
    with pytest.raises(RepoStateError, match="kb is a symlink in the working tree"):
        Repo.open(repo).commit_paths(ctx_for(env, repo), {"kb/x.md": b"x\n"}, "okf: x\n")
    assert list(outside.iterdir()) == []


def test_keeps_the_executable_bit(repo: Path, env: dict[str, str], git: Runner) -> None:
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    git("add", "run.sh", cwd=repo)
    git("commit", "-q", "-m", "x", cwd=repo)
    Repo.open(repo).commit_paths(ctx_for(env, repo), {"run.sh": b"#!/bin/sh\necho\n"}, "okf: x\n")
    assert git("ls-tree", "HEAD", "run.sh", cwd=repo).out.startswith("100755 ")
    assert git("status", "--porcelain", cwd=repo).out == ""


def test_a_broken_git_file_is_a_clear_error(tmp_path: Path, okfgit: Runner) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / ".git").write_text("this is not a gitdir line\n")
    result = okfgit("project", cwd=bad, expect=2)
    assert result.err.startswith("okfgit: error: ") and "internal error" not in result.err
