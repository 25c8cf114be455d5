"""The write protocol (spec/okf-writes.md): one lock, git's index.lock, a journal, recovery.

Real processes where a real process matters: a crash is a SIGKILL at a named step
(``OKFGIT_TEST_CRASH_AT``), and concurrent writers are separate processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Runner, fsck
from tests.test_local_store import forget_facts

CRASH = "OKFGIT_TEST_CRASH_AT"


def head(git: Runner, repo: Path) -> str:
    return git("rev-parse", "HEAD", cwd=repo).out.strip()


def porcelain(git: Runner, repo: Path, *paths: str) -> str:
    return git("status", "--porcelain", "--", *paths, cwd=repo).out


def index_matches_head(git: Runner, repo: Path, prefix: str = ".okf") -> bool:
    """Index and working tree agree with HEAD for every path under ``prefix`` (plumbing: no refresh)."""
    staged = git("diff-index", "--cached", "--name-only", "HEAD", "--", prefix, cwd=repo).out
    worktree = git("diff-files", "--name-only", "--", prefix, cwd=repo).out
    return staged == "" and worktree == ""


def journal_files(repo: Path) -> list[Path]:
    folder = repo / ".git" / "okf" / "journal"
    return sorted(folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize("step", ["before-ref", "after-ref", "mid-worktree", "index-written"])
def test_a_new_killed_at_each_step_is_finished_or_never_happened(project: Path, okfgit_proc: Runner, okfgit: Runner,
                                                                 git: Runner, step: str) -> None:
    top = head(git, project)
    result = okfgit_proc("new", "fact", "--description", "A fact.", cwd=project, extra_env={CRASH: step},
                         expect=None)
    assert result.code == -9  # killed where the test asked
    moved = head(git, project) != top
    assert moved == (step != "before-ref")
    if moved and step != "index-written":
        # the state the journal exists for: HEAD has the concept, the index does not yet
        assert not index_matches_head(git, project)
        assert journal_files(project)
    # the next okfgit command finishes the commit before anything else
    after = okfgit("ls", cwd=project)
    assert index_matches_head(git, project)
    assert porcelain(git, project, ".okf") == ""
    assert not journal_files(project)
    assert not (project / ".git" / "index.lock").exists()
    if moved and step != "index-written":
        assert "finished okfgit's interrupted commit" in after.err
    assert ("fact.md" in after.out) == moved
    fsck(git, project)


def test_the_users_next_commit_keeps_a_concept_whose_commit_was_interrupted(project: Path, okfgit_proc: Runner,
                                                                             okfgit: Runner, git: Runner) -> None:
    okfgit_proc("new", "fact", "--description", "A fact.", cwd=project, extra_env={CRASH: "after-ref"}, expect=None)
    # the dangerous state: a `git commit` now would delete the concept okfgit committed
    assert "D  .okf/fact.md" in porcelain(git, project)
    okfgit("status", cwd=project)  # any okfgit command finishes the commit
    (project / "app.py").write_text("x\n")
    git("add", "app.py", cwd=project)
    git("commit", "-q", "-m", "work", cwd=project)
    assert git("cat-file", "-e", "HEAD:.okf/fact.md", cwd=project).code == 0
    assert (project / ".okf" / "fact.md").is_file()


def test_status_and_doctor_name_an_index_behind_head_with_the_repair(project: Path, okfgit: Runner,
                                                                     git: Runner) -> None:
    okfgit("new", "fact", "--description", "A fact.", cwd=project)
    # what a killed commit without a journal would leave: HEAD has the concept, the index not
    git("rm", "-q", "--cached", ".okf/fact.md", cwd=project)
    status = okfgit("status", cwd=project, expect=2)  # a person must look: exit 2
    assert ".okf/fact.md" in status.out and "git reset -q HEAD -- .okf/fact.md" in status.out
    doctor = okfgit("doctor", "--scope", "project", cwd=project, expect=None)
    assert "index-behind" in doctor.out and "git reset -q HEAD -- .okf/fact.md" in doctor.out
    git("reset", "-q", "HEAD", "--", ".okf/fact.md", cwd=project)
    assert "index-behind" not in okfgit("doctor", "--scope", "project", cwd=project, expect=None).out


def test_status_reads_the_index_only_when_the_index_or_head_changed(project: Path, okfgit: Runner, git: Runner,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The store records an index found in step with HEAD (local/index_stamp.py): the next
    check takes that answer without reading the index, and an index git changes in the same
    clock tick as the store's write of the record, or a new HEAD, is checked again."""
    from okfgit import plan
    from okfgit.git.repository import Repo
    from okfgit.knowledge.tiers import Tier
    from okfgit.local import index_stamp
    from okfgit.local.store import Store

    okfgit("new", "fact", "--description", "A fact.", cwd=project)
    gitdir = str((project / ".git").resolve())
    index = project / ".git" / "index"
    old = index.stat().st_mtime_ns - 2_000_000_000  # an index from before this run, as most are
    os.utime(index, ns=(old, old))
    okfgit("status", cwd=project)
    assert index_stamp.in_step(Store(project / ".git"), gitdir, ".okf", head(git, project))
    asked: list[str] = []
    real = Repo.index_behind

    def counted(self: Repo, prefix: str, depth: int = 50) -> list[str]:
        asked.append(prefix)
        return real(self, prefix, depth)

    monkeypatch.setattr(Repo, "index_behind", counted)
    tier = Tier("project", project, ".okf")
    assert plan.index_behind(tier) is None and asked == []  # the record answered
    git("rm", "-q", "--cached", ".okf/fact.md", cwd=project)  # the next index, at once
    behind = plan.index_behind(tier)
    assert behind is not None and behind.paths == [".okf/fact.md"] and asked == [".okf"]
    git("reset", "-q", "HEAD", "--", ".okf/fact.md", cwd=project)
    okfgit("status", cwd=project)
    assert index_stamp.in_step(Store(project / ".git"), gitdir, ".okf", head(git, project))
    # an index written in the clock tick of the store's write of the record: racy, not kept
    seen = index_stamp.token(gitdir)
    assert seen is not None
    ahead = seen[2] + 3600 * 10**9  # as if git wrote it after the record, in the same tick
    os.utime(index, ns=(ahead, ahead))
    index_stamp.save(Store(project / ".git"), gitdir, ".okf", head(git, project), index_stamp.token(gitdir))
    assert not index_stamp.in_step(Store(project / ".git"), gitdir, ".okf", head(git, project))
    asked.clear()
    assert plan.index_behind(tier) is None and asked == [".okf"]


def test_index_lock_present_is_exit_3_and_changes_nothing(project: Path, okfgit: Runner, git: Runner) -> None:
    top = head(git, project)
    lock = project / ".git" / "index.lock"
    lock.write_bytes(b"")
    result = okfgit("new", "fact", "--description", "A fact.", cwd=project, expect=3)
    assert "index.lock" in result.err and "nothing was changed" in result.err
    assert head(git, project) == top
    assert lock.exists()  # git's lock is never taken away from it
    lock.unlink()
    assert porcelain(git, project) == ""
    assert not journal_files(project)
    okfgit("new", "fact", "--description", "A fact.", cwd=project)
    assert porcelain(git, project) == ""


def test_a_stale_index_lock_of_a_killed_okfgit_is_removed_but_gits_own_is_not(project: Path, okfgit_proc: Runner,
                                                                              okfgit: Runner, git: Runner) -> None:
    okfgit_proc("new", "fact", "--description", "A fact.", cwd=project, extra_env={CRASH: "index-locked"},
                expect=None)
    assert (project / ".git" / "index.lock").exists()
    record = json.loads(journal_files(project)[0].read_text())
    assert record["index_lock"] is not None
    okfgit("new", "other", "--description", "Another fact.", cwd=project)
    assert not (project / ".git" / "index.lock").exists()
    assert porcelain(git, project) == ""


def test_a_read_only_kb_folder_is_exit_3_before_the_commit(project: Path, okfgit: Runner, git: Runner) -> None:
    top = head(git, project)
    folder = project / ".okf"
    folder.chmod(0o555)
    try:
        result = okfgit("new", "fact", "--description", "A fact.", cwd=project, expect=3)
    finally:
        folder.chmod(0o755)
    assert "not writable" in result.err and "nothing was changed" in result.err
    assert head(git, project) == top
    assert porcelain(git, project) == ""


def test_without_git_on_path_okfgit_asks_git_only_where_it_must(project: Path, okfgit: Runner, git: Runner,
                                                                tmp_path: Path) -> None:
    """libgit2 reads and commits; git itself is asked only where its answer may differ (here: a
    config file that includes another), and then its absence is a clear exit 3."""
    empty = tmp_path / "nogit"
    empty.mkdir()
    nogit = {"PATH": str(empty)}
    okfgit("new", "fact", "--description", "A fact.", cwd=project, extra_env=nogit)
    assert porcelain(git, project, ".okf") == "" and (project / ".okf" / "fact.md").is_file()
    okfgit("status", cwd=project, extra_env=nogit)
    # installing the git hooks writes files into the hooks folder only: with no core.hooksPath
    # in any config, git is not asked where that folder is
    okfgit("hooks", "install", cwd=project, extra_env=nogit)
    assert (project / ".git" / "hooks" / "post-merge").is_file()
    included = tmp_path / "more.gitconfig"
    included.write_text("[okf]\n\tcapture = on\n")
    git("config", "include.path", str(included), cwd=project)
    top = head(git, project)
    for args in (["new", "other", "--description", "Another fact."], ["status"]):
        result = okfgit(*args, cwd=project, extra_env=nogit, expect=3)
        assert "cannot run git" in result.err and "internal error" not in result.err, result
    assert head(git, project) == top


def test_a_write_killed_in_a_tier_the_next_commands_only_read_leaves_no_temp_object(
        project: Path, okfgit: Runner, git: Runner) -> None:
    """What a promote killed while libgit2 wrote an object into the job tier leaves: the journal
    record its index lock made, then a half-written temp object. The next command that only
    reads the job tier recovers the record and sweeps the object (CI once found it left)."""
    okfgit("run", "start", "r1", cwd=project)
    job = project / "runstate" / "r1" / "okf"
    record = job / ".git" / "okf" / "journal" / "main.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"pid": 0, "since": 0.0, "index_lock": None, "intent": None}) + "\n")
    stray = job / ".git" / "objects" / "tmp_object_git2_Ab12Cd"
    stray.write_bytes(b"x\x01half an object")
    okfgit("ls", "--run", "r1", cwd=project)
    assert not stray.exists() and not record.exists()
    fsck(git, job)


@pytest.mark.slow
def test_concurrent_new_and_sync_never_leave_the_index_behind(project: Path, okfgit: Runner, env: dict[str, str],
                                                              git: Runner, tmp_path: Path) -> None:
    """Three writers at once, 30 rounds: after each, `.okf` is clean in `git status`."""
    rounds = 30
    corruptions = 0
    for n in range(rounds):
        procs = [
            subprocess.Popen([sys.executable, "-m", "okfgit", "new", f"a{n}", "--description", "A fact."],
                             cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE),
            subprocess.Popen([sys.executable, "-m", "okfgit", "sync"], cwd=project, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE),
            subprocess.Popen([sys.executable, "-m", "okfgit", "new", f"b{n}", "--dir", "d", "--description",
                              "Another fact."], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE),
        ]
        codes = [p.wait(timeout=120) for p in procs]
        errs = [p.stderr.read().decode() for p in procs if p.stderr is not None]
        for p in procs:
            for stream in (p.stdout, p.stderr):
                if stream is not None:
                    stream.close()
        assert codes == [0, 0, 0], errs
        if porcelain(git, project, ".okf") != "" or not index_matches_head(git, project):
            corruptions += 1
    tree = git("ls-tree", "-r", "--name-only", "HEAD", "--", ".okf", cwd=project).out.split()
    assert all(f".okf/a{n}.md" in tree and f".okf/d/b{n}.md" in tree for n in range(rounds))
    fsck(git, project)
    print(f"concurrent rounds x{rounds}: {corruptions} corruptions")
    assert corruptions == 0


def test_a_sync_killed_before_it_recorded_a_conflict_commits_no_second_sibling(
        project: Path, okfgit_proc: Runner, okfgit: Runner, git: Runner, env: dict[str, str], home: Path) -> None:
    from tests.test_capture import conflict_setup, memory

    mem = memory(project, env, home)
    mem.mkdir(parents=True, exist_ok=True)
    conflict_setup(project, mem, okfgit, git)
    okfgit_proc("sync", cwd=project, extra_env={CRASH: "captured"}, expect=-9)
    assert ".okf/memory/feedback-testing.needs-merge.md" in git("ls-tree", "-r", "--name-only", "HEAD",
                                                                cwd=project).out
    top = head(git, project)
    okfgit("sync", cwd=project)
    assert head(git, project) == top  # the same variant is not committed twice
    names = git("ls-tree", "-r", "--name-only", "HEAD", "--", ".okf/memory", cwd=project).out.split()
    assert ".okf/memory/feedback-testing.needs-merge-2.md" not in names
    assert porcelain(git, project, ".okf") == ""


@pytest.mark.parametrize("as_link", [False, True])
def test_a_read_only_target_is_refused_alike_as_a_file_or_a_link(project: Path, okfgit: Runner, home: Path,
                                                                 tmp_path: Path, as_link: bool) -> None:
    """Read-only means the owner's write bit is off: refused for root too, naming the fix."""
    okfgit("init", "--scope", "global", cwd=project)
    target = home / ".claude" / "CLAUDE.md"
    real = tmp_path / "dotfiles" / "CLAUDE.md" if as_link else target
    real.parent.mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    real.write_text("# Mine\n")
    real.chmod(0o444)
    if as_link:
        target.symlink_to(real)
    try:
        result = okfgit("project", "--target", "claude", cwd=project, expect=3)
    finally:
        real.chmod(0o644)
    assert "read-only" in result.err and f"chmod u+w {real}" in result.err, result
    assert real.read_text() == "# Mine\n"


def test_cat_and_links_of_an_unreadable_concept_say_it_is_unreadable_and_why(project: Path, okfgit: Runner,
                                                                              git: Runner) -> None:
    (project / ".okf" / "bad.md").write_text("---\ntype: [unclosed\n---\n\n# Bad\n")
    git("add", ".okf/bad.md", cwd=project)
    git("commit", "-q", "-m", "a broken concept", cwd=project)
    for verb, code in (("cat", 0), ("links", 2)):  # cat still shows the bytes
        result = okfgit(verb, "bad", cwd=project, expect=code)
        assert "bad.md@" in result.err and "is unreadable as a concept" in result.err and "YAML" in result.err
        assert "no concept" not in result.err


@pytest.mark.parametrize("flag", ["--title", "--description"])
def test_a_line_break_in_title_or_description_is_a_usage_error(project: Path, okfgit: Runner, git: Runner,
                                                              flag: str) -> None:
    top = head(git, project)
    args = ["new", "fact", "--description", "A fact."] + [flag, "a\nb"]
    result = okfgit(*args, cwd=project, expect=2)
    assert f"{flag} is one" in result.err
    assert head(git, project) == top


def test_adopt_of_a_lone_cr_file_is_refused_not_wrapped_in_a_second_frontmatter(project: Path, okfgit: Runner,
                                                                                git: Runner, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "old.md").write_bytes(b"---\rtype: Note\rtitle: Old\r---\r\r# Old\r")
    top = head(git, project)
    result = okfgit("adopt", str(src), cwd=project, expect=2)
    assert "old.md" in result.err and "lone CR" in result.err
    assert head(git, project) == top


def alias_bomb() -> bytes:
    """345 bytes of nested YAML aliases: 9^7 strings if expanded, and as many steps to compare."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdef", "bcdefg"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return ("---\nname: bomb\ndescription: A bomb.\n" + "\n".join(lines) + "\nmetadata:\n  type: project\n---\n\n"
            "Boom.\n").encode()


def test_a_yaml_alias_bomb_is_refused_everywhere(project: Path, okfgit: Runner, git: Runner, env: dict[str, str],
                                                  home: Path, tmp_path: Path) -> None:
    from okfgit.format import concept as okf
    from tests.test_capture import memory

    bomb = alias_bomb()
    with pytest.raises(Exception, match="anchors and aliases"):
        okf.split(bomb, "bomb.md")
    mem = memory(project, env, home)
    mem.mkdir(parents=True, exist_ok=True)
    (mem / "bomb.md").write_bytes(bomb)
    top = head(git, project)
    for args in (["capture", "--dry-run"], ["sync"]):
        result = okfgit(*args, cwd=project)
        assert "bomb.md" in result.err and "anchors and aliases" in result.err, result
    status = okfgit("status", cwd=project, expect=None)
    assert "anchors and aliases" in status.out + status.err
    assert head(git, project) == top and (mem / "bomb.md").read_bytes() == bomb
    src = tmp_path / "src"
    src.mkdir()
    (src / "bomb.md").write_bytes(bomb)
    result = okfgit("adopt", str(src), cwd=project, expect=2)
    assert "anchors and aliases" in result.err


def test_a_temp_file_a_killed_cache_write_left_is_swept_by_the_next_reader(project: Path, okfgit: Runner) -> None:
    """A run killed while it wrote a cache in ``.git/okf/`` leaves its temp file; the tier
    may never be written again, so the next run that keeps a cache there removes it (holding
    the write lock), and never one newer than that lock (a live writer's)."""
    okfgit("new", "fact", "--description", "A fact.", cwd=project)
    okf_dir = project / ".git" / "okf"
    left = okf_dir / ".sync.json.0123456789.okftmp"
    live = okf_dir / ".fastpath.json.9876543210.okftmp"
    left.write_bytes(b"{half")
    live.write_bytes(b"{also half")
    old = left.stat().st_mtime_ns - 10**9
    os.utime(left, ns=(old, old))
    ahead = live.stat().st_mtime_ns + 3600 * 10**9  # as if written after the sweeper took the lock
    os.utime(live, ns=(ahead, ahead))
    forget_facts(project / ".git")  # the next read stores its facts again
    assert "fact" in okfgit("ls", cwd=project).out
    assert not left.exists() and live.exists()


# -- a person's commit landing while okfgit plans ----------------------------------------------


def commits_while_okfgit_plans(monkeypatch: pytest.MonkeyPatch, git: Runner, repo: Path, times: int) -> list[str]:
    """Make a person's real commit in ``repo`` right before each of okfgit's next ``times``
    commits (between its plan and its commit: the moment a racing `git commit` lands);
    returns the commits made."""
    from okfgit import plan

    real = plan.ensure_repo
    made: list[str] = []

    def racing(ctx, tier):  # noqa: ANN001, ANN202
        if len(made) < times:
            (repo / "work.txt").write_text(f"a person's work {len(made)}\n")
            git("add", "work.txt", cwd=repo)
            git("commit", "-q", "-m", f"work {len(made)}", cwd=repo)
            made.append(head(git, repo))
        return real(ctx, tier)

    monkeypatch.setattr(plan, "ensure_repo", racing)
    return made


def test_new_plans_again_on_a_person_commit_that_landed_meanwhile(project: Path, okfgit: Runner, git: Runner,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = commits_while_okfgit_plans(monkeypatch, git, project, times=2)
    result = okfgit("new", "cache", "--description", "Cached a day.", "--no-edit", cwd=project)
    assert result.out.startswith("created project:cache.md@") and result.err == ""
    assert len(theirs) == 2
    assert git("rev-parse", "HEAD^", cwd=project).out.strip() == theirs[-1]  # built on the person's commit
    assert git("show", "--name-only", "--format=", "HEAD", cwd=project).out.split() == [".okf/cache.md",
                                                                                          ".okf/index.md"]
    assert (project / "work.txt").read_text() == "a person's work 1\n"
    assert "[Cache](cache.md)" in (project / ".okf" / "index.md").read_text()
    assert porcelain(git, project) == "" and index_matches_head(git, project)
    fsck(git, project)


def test_sync_captures_on_top_of_a_person_commit_and_defers_when_the_branch_keeps_moving(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str], home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_capture import memory, write_memory

    mem = memory(project, env, home)
    fact = write_memory(mem, "freeze.md", b"---\nname: freeze\ndescription: Freeze on Thursday.\ntype: project\n---\nx\n")
    raced = commits_while_okfgit_plans(monkeypatch, git, project, times=99)
    deferred = okfgit("sync", cwd=project)  # every try finds the branch moved
    assert deferred.out.startswith("okfgit sync: capture deferred (repository busy)")
    assert "capture failed" not in deferred.out and len(raced) == 5
    assert fact.read_bytes().startswith(b"---\nname: freeze\n")  # untouched, waiting
    raced.clear()
    monkeypatch.undo()
    theirs = commits_while_okfgit_plans(monkeypatch, git, project, times=1)
    synced = okfgit("sync", cwd=project)
    assert synced.out.startswith("okfgit sync: captured 1,")
    assert git("rev-parse", "HEAD^", cwd=project).out.strip() == theirs[0]
    assert "Okf-Operation: capture" in git("log", "-1", "--format=%B", cwd=project).out
    assert (project / "work.txt").read_text() == "a person's work 0\n"
    assert porcelain(git, project, ".okf", "work.txt") == ""
    fsck(git, project)


def commits_between_read_and_move(monkeypatch: pytest.MonkeyPatch, git: Runner, repo: Path, times: int) -> list[str]:
    """Land a commit on ``repo``'s branch in each of okfgit's next ``times`` commits after it
    read HEAD and before it moves the ref (its ``before-ref`` step, git's index.lock held by
    okfgit): made as a writer that does not use the index makes one, with `git commit-tree`
    and a compare-and-swap `git update-ref`; returns the commits made."""
    from okfgit.local import journal

    real = journal.crash_point
    made: list[str] = []

    def racing(environ, step):  # noqa: ANN001, ANN202
        if step == "before-ref" and len(made) < times:
            old, ref = head(git, repo), git("symbolic-ref", "HEAD", cwd=repo).out.strip()
            new = git("commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", f"theirs {len(made)}", cwd=repo).out.strip()
            git("update-ref", ref, new, old, cwd=repo)
            made.append(new)
        real(environ, step)

    monkeypatch.setattr(journal, "crash_point", racing)
    return made


@pytest.mark.parametrize("verb", [
    ("new", "cache", "--description", "Cached a day.", "--no-edit"),
    ("sync",),
    ("state", "--where", "Measured."),
])
def test_a_commit_between_reading_the_ref_and_moving_it_is_built_on(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str], home: Path,
        monkeypatch: pytest.MonkeyPatch, verb: tuple[str, ...]) -> None:
    """The compare-and-swap of the ref: it loses, nothing of that try lands, and the next plan
    builds on the commit that landed (a forced move of the ref would drop it)."""
    from tests.test_capture import memory, write_memory

    repo = project
    if verb[0] == "sync":
        write_memory(memory(project, env, home), "freeze.md",
                     b"---\nname: freeze\ndescription: Freeze on Thursday.\ntype: project\n---\nx\n")
    elif verb[0] == "state":
        okfgit("run", "start", "r1", "--task", "Try things.", cwd=project)
        repo = project / "runstate" / "r1" / "okf"
    before = head(git, repo)
    theirs = commits_between_read_and_move(monkeypatch, git, repo, times=1)
    result = okfgit(*verb, cwd=project)
    assert "failed" not in result.out + result.err and "deferred" not in result.out, result
    assert len(theirs) == 1 and git("rev-list", "--reverse", f"{before}..HEAD", cwd=repo).out.split()[0] == theirs[0]
    assert git("rev-parse", "HEAD^", cwd=repo).out.strip() == theirs[0]  # the retry landed on top of theirs
    assert "Okf-Operation: " + {"new": "new", "sync": "capture", "state": "state"}[verb[0]] in git(
        "log", "-1", "--format=%B", cwd=repo).out
    kb = ".okf" if repo == project else "."  # sync also writes AGENTS.md, untracked
    assert porcelain(git, repo, kb) == "" and index_matches_head(git, repo, kb)
    assert not journal_files(repo)
    fsck(git, repo)


def test_sync_defers_a_capture_whose_ref_moves_under_every_try(project: Path, okfgit: Runner, git: Runner,
                                                               env: dict[str, str], home: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_capture import memory, write_memory

    fact = write_memory(memory(project, env, home), "freeze.md",
                        b"---\nname: freeze\ndescription: Freeze on Thursday.\ntype: project\n---\nx\n")
    theirs = commits_between_read_and_move(monkeypatch, git, project, times=99)
    deferred = okfgit("sync", cwd=project)
    assert deferred.out.startswith("okfgit sync: capture deferred (repository busy)"), deferred
    assert "capture failed" not in deferred.out and len(theirs) == 5
    assert head(git, project) == theirs[-1] and fact.read_bytes().startswith(b"---\nname: freeze\n")
    assert porcelain(git, project, ".okf") == "" and not journal_files(project)


def test_new_gives_up_when_the_branch_never_stops_moving(project: Path, okfgit: Runner, git: Runner,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    commits_while_okfgit_plans(monkeypatch, git, project, times=99)
    result = okfgit("new", "cache", "--description", "Cached a day.", "--no-edit", cwd=project, expect=3)
    assert "moved while okfgit was preparing this change" in result.err
    assert "planned again 4 times and the branch moved every time" in result.err
    assert not (project / ".okf" / "cache.md").exists()
