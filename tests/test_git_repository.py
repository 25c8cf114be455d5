"""git.repository.Repo answers as git itself does: refs, trees, blobs, diffs (compat tests with real git);
the one process starter and its environment rule; the index entries a commit stages."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from okfgit.context import Context
from okfgit.errors import UsageError
from okfgit.git import command, config
from okfgit.git.objects import Change, Entry, blob_oid
from okfgit.git.repository import Repo
from tests.conftest import Runner, fsck


def _commit(git: Runner, repo: Path, message: str) -> str:
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo).out.strip()


@pytest.fixture
def history(repo: Path, git: Runner, tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository whose commits hold every kind of entry and change a reader meets."""
    kb = repo / ".okf"
    (kb / "a" / "b").mkdir(parents=True)
    (kb / "index.md").write_text("# KB\n")
    (kb / "a" / "x.md").write_text("---\ntype: Note\n---\nx\n")
    (kb / "a" / "b" / "deep.md").write_text("deep\n")
    (kb / "a-b.md").write_text("sorts before the folder a/\n")
    (kb / "a0.md").write_text("sorts after the folder a/\n")
    (kb / "ünï cödé name.md").write_text("unicode\n")
    (kb / "run.sh").write_text("#!/bin/sh\n")
    (kb / "run.sh").chmod(0o755)
    os.symlink("a/x.md", kb / "link.md")
    (kb / "gone.md").write_text("soon gone\n")
    (kb / "becomes").write_text("a file that becomes a folder\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    git("init", "-q", "-b", "main", cwd=sub)
    git("commit", "-q", "--allow-empty", "-m", "sub", cwd=sub)
    sub_head = git("rev-parse", "HEAD", cwd=sub).out.strip()
    git("update-index", "--add", "--cacheinfo", f"160000,{sub_head},.okf/module", cwd=repo)
    first = _commit(git, repo, "everything")
    (kb / "a" / "x.md").write_text("---\ntype: Note\n---\nx changed\n")
    (kb / "gone.md").unlink()
    (kb / "becomes").unlink()
    (kb / "becomes").mkdir()
    (kb / "becomes" / "inside.md").write_text("now a folder\n")
    (kb / "run.sh").chmod(0o644)
    (kb / "new file.md").write_text("added\n")
    second = _commit(git, repo, "changes")
    return repo, [first, second]


def _ls_tree(git: Runner, repo: Path, tree: str, recursive: bool) -> dict[str, Entry]:
    out = git("ls-tree", *(["-r"] if recursive else []), "-z", "--full-tree", tree, cwd=repo).out
    entries = {}
    for record in out.split("\0"):
        if record:
            meta, _, path = record.partition("\t")
            mode, kind, oid = meta.split(" ")
            if kind == "blob" or not recursive:
                entries[path] = Entry(oid, int(mode, 8))
    return entries


def test_the_repository_answers_as_git_does(history: tuple[Path, list[str]], git: Runner,
                                           env: dict[str, str]) -> None:
    repo, (first, second) = history
    r = Repo.open(repo)
    assert r.head_commit() == second and r.head_branch() == "refs/heads/main"
    for rev in ("HEAD", "HEAD~1", "main", first[:10]):
        assert r.resolve(rev) == git("rev-parse", "--verify", f"{rev}^{{commit}}", cwd=repo).out.strip()
    with pytest.raises(UsageError):
        r.resolve("--help")
    for commit in (first, second):
        for prefix in ("", ".okf", ".okf/a"):
            tree = git("rev-parse", f"{commit}:{prefix}", cwd=repo).out.strip()
            assert r.tree_oid(commit, prefix) == tree
            assert r.tree_entries(commit, prefix) == _ls_tree(git, repo, tree, recursive=True)
            # One blob at a time, in the order of the path strings (a-b.md, a/b/deep.md, a/x.md, a0.md)
            assert list(r.blobs(commit, prefix)) == sorted(_ls_tree(git, repo, tree, recursive=True).items())
            assert r.listing(tree) == _ls_tree(git, repo, tree, recursive=False)
        assert r.tree_oid(commit, ".okf/missing") is None and r.tree_oid(commit, ".okf/index.md") is None
        assert r.tree_entries(commit, ".okf/missing") == {}
        whole = _ls_tree(git, repo, commit, recursive=False)
        okf = _ls_tree(git, repo, f"{commit}:.okf", recursive=False)
        assert r.entry_at(commit, ".okf") == whole[".okf"] and r.entry_at(commit, "") is None
        for name in ("module", "link.md", "becomes", "nope.md", "ünï cödé name.md"):
            assert r.entry_at(commit, f".okf/{name}") == okf.get(name), name
    assert r.tree_entries(None) == {} and r.tree_oid(None) is None
    trees = [r.tree_oid(c, ".okf") for c in (first, second)]
    assert None not in trees
    paths = ["a/x.md", "a/b/deep.md", "link.md", "nope.md", "missing/x.md", "becomes/inside.md", "module"]
    assert r.entries_in(trees[1], paths) == {p: r.entry_at(second, f".okf/{p}") for p in paths}
    blobs = [e.oid for e in r.tree_entries(second, ".okf").values()]
    assert {oid: r.read_blob(oid) for oid in blobs} == {
        oid: subprocess.run(["git", "cat-file", "blob", oid], cwd=repo, env=env, capture_output=True,
                            check=True).stdout for oid in blobs}
    assert all(blob_oid(r.read_blob(oid)) == oid for oid in blobs)
    for missing in ("0" * 40, trees[0]):  # nothing there; a tree is not a blob
        with pytest.raises(KeyError):
            r.read_blob(missing)


def test_a_diff_names_each_changed_path_once_as_git_does(history: tuple[Path, list[str]], git: Runner) -> None:
    repo, (first, second) = history
    r = Repo.open(repo)
    old, new = r.tree_oid(first, ".okf"), r.tree_oid(second, ".okf")
    for a, b in ((old, new), (new, old), (None, old), (new, None), (old, old)):
        raw = git("diff-tree", "-r", "-z", "--no-renames", a or "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
                  b or "4b825dc642cb6eb9a060e54bf8d69288fbee4904", cwd=repo).out.split("\0")
        want: dict[str, Change] = {}
        for meta, path in zip(raw[0::2], raw[1::2]):
            fields = meta.split(" ")
            before = fields[2] if set(fields[2]) != {"0"} else None
            after = fields[3] if set(fields[3]) != {"0"} else None
            was = want.get(path)
            want[path] = Change(path, (was.old if was else None) or before, after or (was.new if was else None))
        got = r.diff_paths(a, b)
        assert len({c.path for c in got}) == len(got)
        assert {c.path: c for c in got} == want, (a, b)


def test_unborn_detached_and_linked_worktree(repo: Path, git: Runner, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    git("init", "-q", "-b", "main", str(empty), cwd=tmp_path)
    assert Repo.open(empty).head_commit() is None and Repo.open(empty).head_branch() == "refs/heads/main"
    head = git("rev-parse", "HEAD", cwd=repo).out.strip()
    git("worktree", "add", "-q", "--detach", str(tmp_path / "wt"), cwd=repo)
    wt = Repo.open(tmp_path / "wt")
    assert wt.head_commit() == head and wt.head_branch() is None
    assert wt.common_dir == (repo / ".git").resolve() and wt.main_workdir == repo.resolve()
    (tmp_path / "wt" / "deep").mkdir()
    assert Repo.open(tmp_path / "wt").workdir == wt.workdir
    with pytest.raises(UsageError):
        Repo.open(tmp_path / "wt" / "deep")  # exactly a working tree's root
    git("clone", "-q", "--bare", str(repo), str(tmp_path / "bare.git"), cwd=tmp_path)
    git("worktree", "add", "-q", "--detach", str(tmp_path / "wt2"), cwd=tmp_path / "bare.git")
    assert Repo.open(tmp_path / "wt2").main_workdir == (tmp_path / "bare.git").resolve()  # Claude Code keys by it


def test_the_previous_branch_only_when_heads_newest_reflog_entry_proves_it(repo: Path, git: Runner,
                                                                           tmp_path: Path) -> None:
    """What post-checkout capture relies on (spec/okf-merge.md §5): git's @{-1} when the
    newest entry of HEAD's reflog is the checkout that just ran, else nothing (never a guess)."""
    main = git("rev-parse", "HEAD", cwd=repo).out.strip()
    git("branch", "feature", cwd=repo)
    git("checkout", "-q", "feature", cwd=repo)
    assert Repo.open(repo).previous_branch(main) == "main"
    git("checkout", "-q", "-b", "other", cwd=repo)
    assert Repo.open(repo).previous_branch(main) == "feature"  # a new branch at the same commit
    git("commit", "-q", "--allow-empty", "-m", "moved", cwd=repo)
    assert Repo.open(repo).previous_branch(main) is None  # the newest entry is that commit
    git("checkout", "-q", "--detach", "main", cwd=repo)
    git("checkout", "-q", "feature", cwd=repo)
    assert Repo.open(repo).previous_branch(main) is None  # a detached previous HEAD
    git("worktree", "add", "-q", str(tmp_path / "wt"), "other", cwd=repo)
    git("checkout", "-q", "-b", "in-wt", cwd=tmp_path / "wt")
    other = git("rev-parse", "other", cwd=repo).out.strip()
    assert Repo.open(tmp_path / "wt").previous_branch(other) == "other"  # a linked worktree's own HEAD
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    assert Repo.open(repo).previous_branch(main) is None  # expired
    log = repo / ".git" / "logs" / "HEAD"
    log.unlink()
    git("config", "core.logAllRefUpdates", "false", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    assert Repo.open(repo).previous_branch(main) is None  # no reflog...
    assert not log.exists()  # ...and none made by reading it (libgit2 would create it)


def test_config_is_asked_of_git_only_when_a_file_could_set_it(repo: Path, git: Runner, env: dict[str, str],
                                                              tmp_path: Path) -> None:
    r = Repo.open(repo, env)
    assert r.config_get("okf.run") is None
    git("config", "user.name", "okfgit person", cwd=repo)  # names "okf" but sets nothing of okf's
    assert not config.may_set(env, r.gitdir, "okf.run")
    git("config", "okf.run", "r1", cwd=repo)
    assert r.config_get("okf.run") == "r1"
    git("config", "--unset", "okf.run", cwd=repo)
    included = repo.parent / "extra.gitconfig"
    included.write_text("[okf]\n\trun = from-include\n")
    git("config", "include.path", str(included), cwd=repo)
    assert r.config_get("okf.run") == "from-include"  # an include could set it: git is asked
    elsewhere = tmp_path / "elsewhere.gitconfig"  # a global config libgit2 would not read
    elsewhere.write_text("[okf]\n\tcapture = off\n")
    assert Repo.open(repo, {**env, "GIT_CONFIG_GLOBAL": str(elsewhere)}).config_get("okf.capture") == "off"


def test_one_environment_rule_for_every_process(repo: Path, env: dict[str, str]) -> None:
    """A git hook's variables for its own repository never reach a git okfgit runs; identity,
    config locations and transport settings do."""
    hook = {**env, "GIT_DIR": "/elsewhere/.git", "GIT_INDEX_FILE": "/elsewhere/index", "GIT_WORK_TREE": "/x",
            "GIT_OBJECT_DIRECTORY": "/x", "GIT_PREFIX": "sub/", "GIT_SSH_COMMAND": "ssh -v",
            "GIT_CONFIG_KEY_0": "okf.run", "GIT_CONFIG_VALUE_0": "r9", "GIT_CONFIG_COUNT": "1"}
    kept = command.environment(hook)
    assert not {"GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX"} & set(kept)
    assert kept["GIT_SSH_COMMAND"] == "ssh -v" and kept["GIT_AUTHOR_NAME"] == env["GIT_AUTHOR_NAME"]
    done = command.run(["git", "rev-parse", "--show-toplevel"], hook, cwd=repo)
    assert done.code == 0 and Path(done.out.strip()) == repo.resolve()
    assert Repo.open(repo, hook).config_get("okf.run") == "r9"  # GIT_CONFIG_* settings are git's
    slow = command.run(["git", "-c", "alias.nap=!sleep 5", "nap"], env, cwd=repo, timeout_s=0.3)
    assert slow.code == command.TIMED_OUT and "no answer within" in slow.err


@pytest.mark.parametrize("autocrlf", ["false", "true", "input"])
def test_staged_entries_hold_the_committed_blob_and_git_refreshes_their_stat_data(
        repo: Path, env: dict[str, str], git: Runner, autocrlf: str) -> None:
    """Each written path is staged as exactly the committed blob; git records its stat data
    (plumbing sees no change), except where git's own filters would store the file otherwise."""
    git("config", "core.autocrlf", autocrlf, cwd=repo)
    git("config", "filter.upper.clean", "tr a-z A-Z", cwd=repo)  # stores a file otherwise than it reads
    (repo / ".gitattributes").write_text("*.crlf text eol=crlf\n*.up filter=upper\n")
    git("add", ".gitattributes", cwd=repo)
    git("commit", "-q", "-m", "attributes", cwd=repo)
    changes = {"kb/lf.md": b"one\ntwo\n", "kb/crlf.md": b"one\r\ntwo\r\n", "kb/x.crlf": b"a\nb\n",
               "kb/x.up": b"lower\n"}
    oid = Repo.open(repo, env).commit_paths(Context(env, repo), changes, "okf: x\n")
    for path, data in changes.items():
        committed = git("rev-parse", f"{oid}:{path}", cwd=repo).out.strip()
        assert committed == blob_oid(data)
        assert git("ls-files", "-s", path, cwd=repo).out.split()[1] == committed
        assert (repo / path).read_bytes() == data
    assert git("diff-index", "--cached", "--name-only", "HEAD", cwd=repo).out == ""
    unrefreshed = git("diff-files", "--name-only", cwd=repo).out.split()
    assert "kb/lf.md" not in unrefreshed  # stat data recorded
    assert "kb/x.up" in unrefreshed  # git would store "LOWER": the entry keeps okfgit's blob, without stat data
    fsck(git, repo)
