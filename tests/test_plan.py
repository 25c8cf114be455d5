"""Unit tests of the write contract's two halves: a Plan renders what it would change and
writes nothing; ``plan.apply`` performs it (commits, then renames, then file writes), records
a failed file write without stopping the others, and puts a renamed file back when the write
that was to replace it fails."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from okfgit import plan as plan_mod
from okfgit.context import Context
from okfgit.errors import OkfError, UnwritableError
from okfgit.knowledge.tiers import Tier
from okfgit.plan import FileMove, FileWrite, Plan, TierCommit
from tests.conftest import Runner, fsck, trailers_by_git


def _tier(repo: Path) -> Tier:
    return Tier("project", repo, ".okf")


def _commit(repo: Path, changes: dict[str, bytes | None], base: str | None = None) -> TierCommit:
    return TierCommit(_tier(repo), "test", "okf: a planned commit", changes,
                      trailers=(("Okf-Source", "unit test"),), base=base)


def test_an_empty_plan_is_empty_and_applies_to_nothing(repo: Path, env: dict[str, str]) -> None:
    plan = Plan(commits=[_commit(repo, {})])
    assert plan.empty and plan_mod.render(plan) == ""
    done = plan_mod.apply(Context(env, repo), plan)
    assert done.commits == [] and done.written == [] and done.failed == []


def test_render_writes_nothing_and_apply_does_what_it_showed(repo: Path, env: dict[str, str], git: Runner,
                                                            tmp_path: Path) -> None:
    target = tmp_path / "out" / "deep" / "file.md"
    old = tmp_path / "old.md"
    old.write_bytes(b"one\ntwo\n")
    plan = Plan(commits=[_commit(repo, {"a/b.md": b"# B\n"})],
                writes=[FileWrite(target, b"new\n", "a target", fsync=False),
                        FileWrite(old, b"one\nthree\n", "an update", fsync=True, old=b"one\ntwo\n")],
                warnings=["a warning the user should see"])
    text = plan_mod.render(plan)
    assert "# commit in project (" in text and "#   okf: a planned commit" in text
    assert "+++ b/project:a/b.md" in text and "+# B" in text
    assert f"--- /dev/null\n+++ b/{target}\n@@ -0,0 +1 @@\n+new" in text
    assert "-two\n+three" in text and "# warning: a warning the user should see" in text
    assert not target.exists() and old.read_bytes() == b"one\ntwo\n"
    assert git("rev-list", "--count", "HEAD", cwd=repo).out == "1\n"

    done = plan_mod.apply(Context(env, repo), plan)
    assert [c.subject for c, _ in done.commits] == ["okf: a planned commit"]
    assert git("rev-parse", "HEAD", cwd=repo).out.strip() == done.commits[0][1]
    assert git("show", "HEAD:.okf/a/b.md", cwd=repo).out == "# B\n"
    assert trailers_by_git(git, repo) == [("Okf-Operation", "test"), ("Okf-Tool", plan_mod.TOOL),
                                          ("Okf-Source", "unit test")]
    assert target.read_bytes() == b"new\n" and old.read_bytes() == b"one\nthree\n"
    assert [w.path for w in done.written] == [target, old] and done.failed == []
    fsck(git, repo)


def test_a_commit_deletes_paths_and_refuses_when_head_moved(repo: Path, env: dict[str, str], git: Runner) -> None:
    ctx = Context(env, repo)
    first = plan_mod.apply(ctx, Plan(commits=[_commit(repo, {"x.md": b"x\n", "y.md": b"y\n"})])).commits[0][1]
    plan_mod.apply(ctx, Plan(commits=[_commit(repo, {"x.md": None}, base=first)]))
    assert git("ls-tree", "-r", "--name-only", "HEAD", ".okf", cwd=repo).out == ".okf/y.md\n"
    with pytest.raises(OkfError):  # planned from `first`, but HEAD has moved since
        plan_mod.apply(ctx, Plan(commits=[_commit(repo, {"y.md": None}, base=first)]))
    assert git("ls-tree", "-r", "--name-only", "HEAD", ".okf", cwd=repo).out == ".okf/y.md\n"
    fsck(git, repo)


def test_a_failed_write_is_recorded_and_the_others_still_happen(repo: Path, env: dict[str, str],
                                                                tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"mine\n")
    good = tmp_path / "good.md"
    bad = blocker / "under-a-file.md"  # its folder is a file: the write cannot happen
    plan = Plan(writes=[FileWrite(bad, b"x\n", "impossible", fsync=False),
                        FileWrite(good, b"ok\n", "possible", fsync=False)])
    done = plan_mod.apply(Context(env, repo), plan)
    assert [w.path for w in done.written] == [good] and good.read_bytes() == b"ok\n"
    assert [w.path for w, _ in done.failed] == [bad] and str(bad) in done.failed[0][1]
    assert blocker.read_bytes() == b"mine\n"
    with pytest.raises(UnwritableError, match="under-a-file.md"):
        done.raise_failed()


def test_a_renamed_file_is_put_back_when_its_replacement_cannot_be_written(repo: Path, env: dict[str, str],
                                                                           tmp_path: Path) -> None:
    hook = tmp_path / "post-merge"
    hook.write_bytes(b"#!/bin/sh\necho mine\n")
    hook.chmod(0o755)
    inode = hook.stat().st_ino
    legacy = tmp_path / "post-merge.legacy"
    # The first write leaves a read-only file where the hook was, so the second (the
    # replacement) is refused: the person's hook must come back under its own name.
    done = plan_mod.apply(Context(env, repo), Plan(
        moves=[FileMove(hook, legacy, "a foreign hook kept")],
        writes=[FileWrite(hook, b"first\n", "read-only", fsync=False, mode=0o444),
                FileWrite(hook, b"#!/bin/sh\nokfgit\n", "ours", fsync=False, mode=0o755)]))
    assert [w.data for w, _ in done.failed] == [b"#!/bin/sh\nokfgit\n"]
    assert "read-only" in done.failed[0][1]
    assert hook.read_bytes() == b"#!/bin/sh\necho mine\n" and hook.stat().st_ino == inode
    assert stat.S_IMODE(hook.stat().st_mode) == 0o755 and not legacy.exists()


def test_a_failed_rename_stops_before_any_write(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "written.md"
    with pytest.raises(UnwritableError, match="cannot rename"):
        plan_mod.apply(Context(env, repo), Plan(
            moves=[FileMove(tmp_path / "missing", tmp_path / "missing.legacy", "kept")],
            writes=[FileWrite(target, b"x\n", "after the rename", fsync=False)]))
    assert not target.exists()


def test_touch_sets_the_time_and_keeps_the_bytes_and_mode_is_applied(repo: Path, env: dict[str, str],
                                                                     tmp_path: Path) -> None:
    kept = tmp_path / "kept.md"
    kept.write_bytes(b"theirs\n")
    made = tmp_path / "made.sh"
    when = 1_700_000_000_000_000_000
    done = plan_mod.apply(Context(env, repo), Plan(writes=[
        FileWrite(kept, b"ignored", "recall order", fsync=False, mtime_ns=when, touch=True),
        FileWrite(made, b"#!/bin/sh\n", "a script", fsync=False, mode=0o755, mtime_ns=when + 1),
    ]))
    assert done.failed == []
    assert kept.read_bytes() == b"theirs\n" and kept.stat().st_mtime_ns == when
    assert made.read_bytes() == b"#!/bin/sh\n" and made.stat().st_mtime_ns == when + 1
    assert stat.S_IMODE(made.stat().st_mode) == 0o755


def test_a_removal_of_a_missing_file_is_not_a_failure(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    there = tmp_path / "there.md"
    there.write_bytes(b"x\n")
    link = tmp_path / "dangling.md"
    link.symlink_to(tmp_path / "nowhere")
    done = plan_mod.apply(Context(env, repo), Plan(writes=[
        FileWrite(there, None, "removed", fsync=False, old=b"x\n"),
        FileWrite(tmp_path / "never-was.md", None, "removed", fsync=False),
        FileWrite(link, None, "a dangling link okfgit made", fsync=False),
    ]))
    assert done.failed == [] and len(done.written) == 3
    assert not there.exists() and not link.is_symlink()
