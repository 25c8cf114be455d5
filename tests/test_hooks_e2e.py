"""The real git hooks running the real `okfgit sync`, fired by real git commands.

After every checkout, merge, pull, rebase and commit, Claude Code's memory folder and
AGENTS.md must agree with the KB at HEAD, and what an "agent" wrote must end up as a
capture commit. The hooks find okfgit on PATH: the test puts this interpreter's bin
folder (where the package's `okfgit` script is installed) first.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from okfgit.format import index_md as kb_index
from tests.conftest import Runner, fsck, trailers_by_git
from tests.test_capture import CURRENT, blob, memory, split, write_memory

BIN = os.path.dirname(sys.executable)


@pytest.fixture
def hook_env(env: dict[str, str]) -> dict[str, str]:
    """The test environment with the real okfgit first on PATH (the hooks run it)."""
    if not os.access(os.path.join(BIN, "okfgit"), os.X_OK):
        pytest.skip(f"no okfgit script next to {sys.executable}")
    return {"PATH": BIN + os.pathsep + env.get("PATH", os.defpath)}


@pytest.fixture
def hooked(project: Path, okfgit: Runner, git: Runner, hook_env: dict[str, str]) -> Path:
    okfgit("hooks", "install", cwd=project)
    okfgit("sync", cwd=project)
    return project


def concept(git: Runner, repo: Path, slug: str, text: str, env: dict[str, str], message: str) -> None:
    """Commit a concept the way a person would: write the file, git add, git commit (hooks fire).
    The index is left alone, so that branches adding concepts merge and rebase cleanly."""
    from okfgit.format import concept as okf

    path = repo / ".okf" / f"{slug}.md"
    meta = {"type": "Note", "title": slug.replace("-", " ").title(), "description": f"{text}.",
            "scope": "project", "okf_id": okf.new_okf_id()}
    path.write_bytes(okf.serialize(meta, f"{text}.\n".encode()))
    git("add", ".okf", cwd=repo, extra_env=env)
    git("commit", "-q", "-m", message, cwd=repo, extra_env=env)


def oid_of(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def assert_agree(git: Runner, repo: Path, mem: Path) -> None:
    """Memory folder and AGENTS.md hold exactly the KB at HEAD."""
    listing = git("ls-tree", "-r", "HEAD", ".okf", cwd=repo).out.splitlines()
    kb = {line.split()[2] for line in listing
          if line.endswith(".md") and not line.endswith(("/index.md", "/log.md"))
          and not kb_index.is_needs_merge(line.split("\t")[1])}
    files = {oid_of(p.read_bytes()) for p in mem.rglob("*.md") if p.name != "MEMORY.md"}
    assert files == kb, (sorted(p.name for p in mem.rglob("*.md")), listing)
    agents = (repo / "AGENTS.md").read_text()
    assert "<!-- okf:begin id=project -->" in agents and "[.okf/index.md](.okf/index.md)" in agents
    assert git("status", "--porcelain", "--", ".okf", cwd=repo).out == ""


def one_hook_line(result_err: str) -> None:
    """A hook prints at most one line (git itself prints nothing with -q)."""
    assert result_err.count("\n") <= 1, result_err


def test_checkout_of_a_branch_with_other_knowledge(hooked: Path, git: Runner, env: dict[str, str], home: Path,
                                                   hook_env: dict[str, str]) -> None:
    mem = memory(hooked, env, home)
    git("checkout", "-q", "-b", "feature", cwd=hooked, extra_env=hook_env)
    concept(git, hooked, "feature-flag", "Flags live in flags.toml", hook_env, "add a concept on feature")
    assert_agree(git, hooked, mem)
    assert (mem / "feature-flag.md").exists()
    result = git("checkout", "-q", "main", cwd=hooked, extra_env=hook_env)
    one_hook_line(result.err)
    assert_agree(git, hooked, mem)
    assert not (mem / "feature-flag.md").exists()
    git("checkout", "-q", "feature", cwd=hooked, extra_env=hook_env)
    assert_agree(git, hooked, mem)
    assert (mem / "feature-flag.md").exists()


def test_merge_and_rebase(hooked: Path, git: Runner, env: dict[str, str], home: Path,
                          hook_env: dict[str, str]) -> None:
    mem = memory(hooked, env, home)
    git("checkout", "-q", "-b", "topic", cwd=hooked, extra_env=hook_env)
    concept(git, hooked, "topic-one", "Topic one is about caching", hook_env, "topic one")
    git("checkout", "-q", "main", cwd=hooked, extra_env=hook_env)
    (hooked / "code.txt").write_text("main moved\n")
    git("add", "code.txt", cwd=hooked, extra_env=hook_env)
    git("commit", "-q", "-m", "main moves on", cwd=hooked, extra_env=hook_env)
    merged = git("merge", "-q", "--no-edit", "topic", cwd=hooked, extra_env=hook_env)
    one_hook_line(merged.err)
    assert_agree(git, hooked, mem)
    assert (mem / "topic-one.md").exists()

    git("checkout", "-q", "-b", "topic2", "HEAD~1", cwd=hooked, extra_env=hook_env)
    concept(git, hooked, "topic-two", "Topic two is about queues", hook_env, "topic two")
    assert not (mem / "topic-one.md").exists()
    rebased = git("rebase", "-q", "main", cwd=hooked, extra_env=hook_env)
    one_hook_line(rebased.err)
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=hooked).out.strip() == "topic2"
    assert_agree(git, hooked, mem)
    assert (mem / "topic-one.md").exists() and (mem / "topic-two.md").exists()
    assert not (hooked / ".git" / "rebase-merge").exists()


def test_pull_from_a_local_clone(hooked: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path,
                                 hook_env: dict[str, str], tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git("clone", "-q", str(hooked), str(clone), cwd=tmp_path, extra_env=hook_env)
    okfgit("hooks", "install", cwd=clone)
    okfgit("sync", cwd=clone)
    clone_mem = memory(clone, env, home)
    assert clone_mem != memory(hooked, env, home)
    assert_agree(git, clone, clone_mem)
    concept(git, hooked, "from-upstream", "Upstream learned this", hook_env, "upstream knowledge")
    pulled = git("pull", "-q", "--no-rebase", cwd=clone, extra_env=hook_env)
    one_hook_line(pulled.err)
    assert_agree(git, clone, clone_mem)
    assert (clone_mem / "from-upstream.md").read_bytes() == blob(git, clone, "HEAD:.okf/from-upstream.md")


def test_post_commit_captures_what_the_agent_wrote(hooked: Path, git: Runner, env: dict[str, str], home: Path,
                                                   hook_env: dict[str, str]) -> None:
    mem = memory(hooked, env, home)
    write_memory(mem, "feedback_testing.md", CURRENT)  # the agent, during its session
    (hooked / "code.txt").write_text("work\n")
    git("add", "code.txt", cwd=hooked, extra_env=hook_env)
    work = git("commit", "-q", "-m", "the person's work", cwd=hooked, extra_env=hook_env)
    one_hook_line(work.err)
    assert "captured 1" in work.err
    assert git("log", "-2", "--format=%s", cwd=hooked).out.splitlines() == [
        "okf: capture 1 fact from Claude Code memory", "the person's work"]
    assert ("Okf-Source", "claude-memory") in trailers_by_git(git, hooked)
    meta, _ = split(blob(git, hooked, "HEAD:.okf/memory/feedback-testing.md"))
    assert meta["okf_origin"] == "feedback_testing.md"
    assert_agree(git, hooked, mem)
    # the person's commit is untouched and nothing else is staged or changed
    assert git("status", "--porcelain", cwd=hooked).out == "?? AGENTS.md\n"
    assert not (hooked / ".git" / "okf" / "hook.log").exists()
    fsck(git, hooked)


def test_rebase_defers_capture_to_the_next_sync_and_loses_nothing(hooked: Path, git: Runner, okfgit: Runner,
                                                                  env: dict[str, str], home: Path,
                                                                  hook_env: dict[str, str]) -> None:
    mem = memory(hooked, env, home)
    git("checkout", "-q", "-b", "topic", cwd=hooked, extra_env=hook_env)
    (hooked / "a.txt").write_text("a\n")
    git("add", "a.txt", cwd=hooked, extra_env=hook_env)
    git("commit", "-q", "-m", "a", cwd=hooked, extra_env=hook_env)
    git("checkout", "-q", "main", cwd=hooked, extra_env=hook_env)
    (hooked / "b.txt").write_text("b\n")
    git("add", "b.txt", cwd=hooked, extra_env=hook_env)
    git("commit", "-q", "-m", "b", cwd=hooked, extra_env=hook_env)
    git("checkout", "-q", "topic", cwd=hooked, extra_env=hook_env)
    write_memory(mem, "feedback_testing.md", CURRENT)
    rebased = git("rebase", "-q", "main", cwd=hooked, extra_env=hook_env)
    one_hook_line(rebased.err)
    assert git("log", "-1", "--format=%s", cwd=hooked).out == "a\n"  # no capture inside the rebase
    assert (mem / "feedback_testing.md").read_bytes() == CURRENT
    assert "capture deferred" in rebased.err
    assert "captured 1" in okfgit("sync", cwd=hooked).out
    assert_agree(git, hooked, mem)


def test_okfgit_skip_and_a_failing_okfgit_never_fail_git(hooked: Path, git: Runner, okfgit: Runner,
                                                         env: dict[str, str], home: Path,
                                                         hook_env: dict[str, str]) -> None:
    mem = memory(hooked, env, home)
    write_memory(mem, "feedback_testing.md", CURRENT)
    (hooked / "c.txt").write_text("c\n")
    git("add", "c.txt", cwd=hooked, extra_env=hook_env)
    skipped = git("commit", "-q", "-m", "c", cwd=hooked, extra_env={**hook_env, "OKFGIT_SKIP": "1"})
    assert skipped.err == "" and git("log", "-1", "--format=%s", cwd=hooked).out == "c\n"
    # a settings file okfgit refuses makes sync fail: git still succeeds, one line, a log entry
    agents = hooked / "AGENTS.md"
    agents.write_bytes(b"\xff not utf-8\n")
    (hooked / "d.txt").write_text("d\n")
    git("add", "d.txt", cwd=hooked, extra_env=hook_env)
    failed = git("commit", "-q", "-m", "d", cwd=hooked, extra_env=hook_env)
    assert failed.err.startswith("okfgit: post-commit hook failed (exit 3): ")
    one_hook_line(failed.err)
    log = (hooked / ".git" / "okf" / "hook.log").read_text()
    assert "post-commit: exit 3: okfgit sync" in log
    assert agents.read_bytes() == b"\xff not utf-8\n"
    assert git("log", "-2", "--format=%s", cwd=hooked).out.splitlines() == [
        "okf: capture 1 fact from Claude Code memory", "d"]
    shutil.rmtree(mem)  # Claude's folder gone entirely: projection recreates it
    agents.unlink()
    git("checkout", "-q", "-b", "again", cwd=hooked, extra_env=hook_env)
    git("checkout", "-q", "main", cwd=hooked, extra_env=hook_env)
    assert_agree(git, hooked, mem)
    assert json.loads(okfgit("status", "--json", cwd=hooked, expect=None).out)["in_sync"] is True


BAD = (b"---\ntype: Note\ntitle: Bad\ndescription: Links nowhere.\nscope: project\n"
       b"okf_id: 11111111-1111-4111-8111-111111111111\nokf_source: authored\n---\n\nSee [x](missing.md).\n")


def test_a_commit_that_breaks_the_kb_is_told_once_and_the_no_op_says_nothing(
        hooked: Path, git: Runner, okfgit_proc: Runner, hook_env: dict[str, str]) -> None:
    (hooked / ".okf" / "bad.md").write_bytes(BAD)  # a dangling link, and no index lists it
    git("add", ".okf", cwd=hooked, extra_env=hook_env)
    broke = git("commit", "-q", "-m", "bad", cwd=hooked, extra_env=hook_env)
    one_hook_line(broke.err)
    assert broke.err.endswith(", doctor: 2 errors in project (`okfgit doctor` lists them)\n")
    (hooked / "code.txt").write_text("work\n")
    git("add", "code.txt", cwd=hooked, extra_env=hook_env)
    code = git("commit", "-q", "-m", "code only", cwd=hooked, extra_env=hook_env)
    assert "doctor" not in code.err  # the knowledge did not change: it was said already
    again = okfgit_proc("sync", "--repo", str(hooked), "--hook", "post-commit", cwd=hooked, extra_env=hook_env)
    assert again.out == again.err == ""  # the no-op


def test_a_new_kb_change_while_errors_stand_is_told_again(hooked: Path, git: Runner,
                                                          hook_env: dict[str, str]) -> None:
    (hooked / ".okf" / "bad.md").write_bytes(BAD)
    git("add", ".okf", cwd=hooked, extra_env=hook_env)
    git("commit", "-q", "-m", "bad", cwd=hooked, extra_env=hook_env)
    path = hooked / ".okf" / "unlisted.md"
    path.write_bytes(BAD.replace(b"11111111-1111", b"22222222-2222").replace(b"title: Bad", b"title: Unlisted"))
    git("add", ".okf", cwd=hooked, extra_env=hook_env)
    told = git("commit", "-q", "-m", "another", cwd=hooked, extra_env=hook_env)
    assert told.err.endswith(", doctor: 4 errors in project (`okfgit doctor` lists them)\n")


def test_a_memory_written_on_a_branch_is_committed_there_when_you_switch(
        hooked: Path, git: Runner, env: dict[str, str], home: Path, hook_env: dict[str, str]) -> None:
    mem = memory(hooked, env, home)
    git("branch", "feature", cwd=hooked, extra_env=hook_env)
    feature = git("rev-parse", "feature", cwd=hooked).out
    write_memory(mem, "feedback_testing.md", CURRENT)  # the agent, while main is checked out
    switched = git("checkout", "-q", "feature", cwd=hooked, extra_env=hook_env)
    one_hook_line(switched.err)
    assert "captured 1" in switched.err
    assert git("log", "-1", "--format=%s", "main", cwd=hooked).out == "okf: capture 1 fact from Claude Code memory\n"
    assert git("rev-parse", "feature", cwd=hooked).out == feature  # nothing landed on the branch switched to
    assert git("symbolic-ref", "HEAD", cwd=hooked).out == "refs/heads/feature\n"
    assert git("status", "--porcelain", cwd=hooked).out == "?? AGENTS.md\n"
    assert ("Okf-Source", "claude-memory") in trailers_by_git(git, hooked, "main")
    assert not (mem / "feedback_testing.md").exists()  # feature's knowledge does not hold it
    assert_agree(git, hooked, mem)
    git("checkout", "-q", "main", cwd=hooked, extra_env=hook_env)
    assert (mem / "feedback_testing.md").read_bytes() == blob(git, hooked, "main:.okf/memory/feedback-testing.md")
    assert_agree(git, hooked, mem)
    fsck(git, hooked)


def test_a_switch_no_reflog_proves_holds_the_capture_for_the_next_sync(
        hooked: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path,
        hook_env: dict[str, str]) -> None:
    """Which branch a memory was written on is never guessed: a switch from a detached HEAD
    (like one nothing in HEAD's reflog proves: test_git_repository.py) holds the capture (said
    once; later hooks stay quiet), and the next sync outside a git hook commits it on the
    branch checked out then and projects it there."""
    mem = memory(hooked, env, home)
    git("branch", "feature", cwd=hooked, extra_env=hook_env)
    git("checkout", "-q", "--detach", cwd=hooked, extra_env=hook_env)
    quiet = git("checkout", "-q", "feature", cwd=hooked, extra_env=hook_env)
    assert "capture" not in quiet.err  # nothing written: nothing to hold
    git("checkout", "-q", "--detach", cwd=hooked, extra_env=hook_env)
    tops = {b: git("rev-parse", b, cwd=hooked).out for b in ("main", "feature")}
    write_memory(mem, "feedback_testing.md", CURRENT)  # the agent, before the switch to main
    switched = git("checkout", "-q", "main", cwd=hooked, extra_env=hook_env)
    one_hook_line(switched.err)
    assert "capture held: nothing shows the branch the memories were written on (`okfgit sync` commits them " \
           "on the branch checked out then)" in switched.err
    assert {b: git("rev-parse", b, cwd=hooked).out for b in tops} == tops  # on no branch
    assert (mem / "feedback_testing.md").read_bytes() == CURRENT
    (hooked / "code.txt").write_text("work\n")
    git("add", "code.txt", cwd=hooked, extra_env=hook_env)
    later = git("commit", "-q", "-m", "code", cwd=hooked, extra_env=hook_env)
    assert "capture" not in later.err  # held: said once
    assert git("log", "-1", "--format=%s", cwd=hooked).out == "code\n"
    assert (mem / "feedback_testing.md").read_bytes() == CURRENT
    assert "captured 1" in okfgit("sync", cwd=hooked, extra_env=hook_env).out
    assert git("log", "-1", "--format=%s", "main", cwd=hooked).out == "okf: capture 1 fact from Claude Code memory\n"
    assert git("rev-parse", "feature", cwd=hooked).out == tops["feature"]
    assert (mem / "feedback_testing.md").read_bytes() == blob(git, hooked, "main:.okf/memory/feedback-testing.md")
    assert_agree(git, hooked, mem)
    assert okfgit("sync", cwd=hooked, extra_env=hook_env).out == "okfgit sync: up to date\n"
    fsck(git, hooked)
