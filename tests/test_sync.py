"""okfgit sync: capture then project under the lock; the no-op path; concurrency; busy repos."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from okfgit.local import lock, paths, state
from tests.conftest import Runner, fsck, trailers_by_git
from tests.test_capture import CURRENT, OLDER, blob, captured_once, head, memory, mtimes, split, write_memory


@pytest.fixture
def mem(project: Path, env: dict[str, str], home: Path) -> Path:
    folder = memory(project, env, home)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def watched(project: Path, mem: Path, home: Path) -> dict[str, int]:
    """mtime_ns of every file sync may write: the memory folder, AGENTS.md, CLAUDE.md, ~/.codex/AGENTS.md."""
    return mtimes(mem, project / "AGENTS.md", home / ".claude" / "CLAUDE.md", home / ".codex" / "AGENTS.md")


def native(n: int) -> bytes:
    return (f"---\nname: fact-{n}\ndescription: Fact number {n} that an agent learned\nmetadata:\n"
            f"  type: project\n  node_type: memory\n---\nFact {n}: the body.\n").encode()


# -- no-ops ----------------------------------------------------------------------------------


def test_sync_twice_the_second_makes_no_commit_and_writes_no_file(project: Path, mem: Path, home: Path,
                                                                  okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "global", cwd=project)  # so CLAUDE.md and ~/.codex/AGENTS.md are written too
    write_memory(mem, "feedback_testing.md", CURRENT)
    write_memory(mem, "project_freeze.md", OLDER)
    okfgit("sync", cwd=project)
    top, files = head(git, project), watched(project, mem, home)
    assert (home / ".claude" / "CLAUDE.md").exists() and (home / ".codex" / "AGENTS.md").exists()
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    assert head(git, project) == top and watched(project, mem, home) == files
    # the full path (no stamps) must agree: nothing to capture, nothing to write
    (project / ".git" / "okf" / "fastpath.json").unlink()
    (project / ".git" / "okf" / "sync.json").unlink()
    full = okfgit("sync", cwd=project)
    assert full.out == "okfgit sync: up to date\n" and full.err == ""
    assert head(git, project) == top and watched(project, mem, home) == files
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    assert head(git, project) == top and watched(project, mem, home) == files


def test_the_no_op_path_sees_new_and_edited_memory_files(project: Path, mem: Path, okfgit: Runner,
                                                         git: Runner) -> None:
    okfgit("sync", cwd=project)
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    write_memory(mem, "feedback_testing.md", CURRENT)
    assert "captured 1" in okfgit("sync", cwd=project).out
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    # an in-place edit keeping the size (the folder's mtime does not move)
    file = mem / "feedback_testing.md"
    data = file.read_bytes()
    file.write_bytes(data.replace(b"must hit", b"MUST hit"))
    assert "captured 1" in okfgit("sync", cwd=project).out
    assert b"MUST hit" in blob(git, project, "HEAD:.okf/memory/feedback-testing.md")


@pytest.mark.parametrize("args", [(), ("--hook", "post-merge", "--", "0"),
                                  ("--hook", "post-checkout", "--", "a" * 40, "b" * 40, "1")])
def test_the_no_op_path_imports_neither_pygit2_nor_yaml(project: Path, mem: Path, okfgit: Runner,
                                                        env: dict[str, str], args: tuple[str, ...]) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    okfgit("sync", cwd=project)  # captures and projects: the very next sync is already a no-op
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "okfgit", "sync", *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == ("" if args else "okfgit sync: up to date\n"), proc
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "okfgit.local.noop" in imported and "okfgit.local.stamps" in imported
    heavy = sorted(m for m in imported if m.split(".")[0] in ("pygit2", "yaml", "okfgit") and m not in (
        "okfgit", "okfgit.cli", "okfgit.errors", "okfgit.commands", "okfgit.local", "okfgit.commands.sync", "okfgit.local.fastpath",
        "okfgit.local.stamps", "okfgit.local.paths", "okfgit.local.noop", "okfgit.commands._common", "okfgit.context",
        "okfgit.progress", "okfgit.__main__")
        and (args or m not in ("okfgit.local.exchange", "okfgit.local.store")))  # sync (not a hook) asks the
    assert heavy == []  # global tier's store if a fetch is due
    assert not args or "dataclasses" not in imported  # a git hook's no-op makes no record class
    assert not args or "sqlite3" not in imported  # ... and reads its two stamp files, no database


def test_one_sync_loads_the_state_once_and_saves_it_once(project: Path, mem: Path, okfgit: Runner, git: Runner,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    file, kb_path = captured_once(project, mem, okfgit, git)
    before = head(git, project)
    file.write_bytes(CURRENT)  # the agent writes the captured fact again, natively: a copy of the KB's
    loads: list[object] = []
    saves: list[object] = []
    real_load, real_save = state.load, state.save
    monkeypatch.setattr(state, "load", lambda *a: loads.append(a) or real_load(*a))
    monkeypatch.setattr(state, "save", lambda st: saves.append(st) or real_save(st))
    assert okfgit("sync", cwd=project).out == "okfgit sync: projected 1 file\n"
    assert (len(loads), len(saves)) == (1, 1)
    # capture adopted the copy in the state it handed to projection, which put the concept back
    assert head(git, project) == before
    assert file.read_bytes() == blob(git, project, f"HEAD:{kb_path}")
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"


# -- the lock and concurrency ------------------------------------------------------------------


def test_a_held_lock_makes_sync_wait_then_skip(project: Path, mem: Path, okfgit: Runner, okfgit_proc: Runner,
                                               git: Runner) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    top = head(git, project)
    with lock.acquire(paths.lock(project / ".git"), 0) as held:
        assert held is not None
        # another process: this one's own lock is re-entrant for it
        result = okfgit_proc("sync", "--wait", "0.2", cwd=project)
        assert result.out.startswith(f"okfgit sync skipped: another okfgit sync is running (pid {os.getpid()} since ")
        status = okfgit("status", cwd=project).out
        assert f"sync running: pid {os.getpid()} since " in status
    assert head(git, project) == top
    assert "captured 1" in okfgit("sync", cwd=project).out


def test_a_sync_that_crashed_holding_the_lock_leaves_no_lock_behind(project: Path, mem: Path, okfgit: Runner,
                                                                    env: dict[str, str]) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    code = ("import sys, time; from pathlib import Path; from okfgit.local import lock; "
            "held = lock.acquire(Path(sys.argv[1]), 0); print('held', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(paths.lock(project / ".git"))], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert f"sync running: pid {holder.pid} since " in okfgit("status", cwd=project).out
        assert okfgit("sync", "--wait", "0.1", cwd=project).out.startswith(
            f"okfgit sync skipped: another okfgit sync is running (pid {holder.pid} since ")
    finally:
        holder.kill()  # SIGKILL: no chance to release anything
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
    assert "sync running" not in okfgit("status", cwd=project).out
    assert "captured 1" in okfgit("sync", "--wait", "5", cwd=project).out


# Three at once already race for the lock in the default run; the eight-way race runs with -m slow.
@pytest.mark.parametrize("syncs", [3, pytest.param(8, marks=pytest.mark.slow)])
def test_syncs_at_once_leave_one_consistent_kb(project: Path, mem: Path, env: dict[str, str], okfgit: Runner,
                                               git: Runner, syncs: int) -> None:
    for n in range(12):
        write_memory(mem, f"fact_{n}.md", native(n))
    procs = [subprocess.Popen([sys.executable, "-m", "okfgit", "sync", "--wait", "120"], cwd=project, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(syncs)]
    results = [(p.wait(timeout=180), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    for p in procs:
        p.stdout.close()  # type: ignore[union-attr]
        p.stderr.close()  # type: ignore[union-attr]
    assert [code for code, _, _ in results] == [0] * syncs, results
    assert sum("captured 12" in out for _, out, _ in results) == 1, results
    assert all(err == "" for _, _, err in results), results
    log = git("log", "--format=%H", "--grep=Okf-Operation: capture", cwd=project).out.split()
    assert len(log) == 1
    tree = git("ls-tree", "-r", "--name-only", "HEAD", ".okf/memory", cwd=project).out.split()
    assert len(tree) == 13  # 12 facts + index.md
    origins, ids = [], []
    for path in tree:
        if path.endswith("/index.md"):
            continue
        meta, _ = split(blob(git, project, f"HEAD:{path}"))
        origins.append(meta["okf_origin"])
        ids.append(meta["okf_id"])
    assert sorted(origins) == sorted(f"fact_{n}.md" for n in range(12))
    assert len(set(ids)) == 12
    for n in range(12):
        path = f".okf/memory/fact-{n}.md"
        assert (mem / f"fact_{n}.md").read_bytes() == blob(git, project, f"HEAD:{path}")
    fsck(git, project)
    assert git("status", "--porcelain", "--", ".okf", cwd=project).out == ""
    top = head(git, project)
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    (project / ".git" / "okf" / "fastpath.json").unlink()
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    assert head(git, project) == top
    assert okfgit("doctor", "--scope", "project", cwd=project).code == 0


# -- busy repositories: capture waits, projection runs -----------------------------------------


def test_mid_rebase_capture_is_deferred_and_projection_still_runs(project: Path, mem: Path, okfgit: Runner,
                                                                  git: Runner) -> None:
    (project / "f.txt").write_text("base\n")
    git("add", "f.txt", cwd=project)
    git("commit", "-q", "-m", "base", cwd=project)
    git("checkout", "-q", "-b", "other", cwd=project)
    (project / "f.txt").write_text("other\n")
    git("commit", "-q", "-am", "other", cwd=project)
    git("checkout", "-q", "main", cwd=project)
    (project / "f.txt").write_text("main\n")
    git("commit", "-q", "-am", "main", cwd=project)
    git("rebase", "other", cwd=project, expect=1)  # stops on the conflict
    write_memory(mem, "feedback_testing.md", CURRENT)
    result = okfgit("sync", cwd=project)
    assert result.out == ("okfgit sync: rebase in progress: finish it, then okfgit sync, projected 2 files\n")
    assert "okfgit: warning: capture deferred: " in result.err and "in the middle of a rebase" in result.err
    assert (mem / "feedback_testing.md").read_bytes() == CURRENT  # waits for the next sync, untouched
    assert (project / "AGENTS.md").exists()
    status = okfgit("status", cwd=project, expect=2).out  # a rebase to finish needs the person
    assert "captures pending: 1\n" in status and "rebase in progress: finish it, then okfgit sync\n" in status
    git("rebase", "--abort", cwd=project)
    assert "captured 1" in okfgit("sync", cwd=project).out


def test_detached_head_defers_capture(project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    git("checkout", "-q", "--detach", cwd=project)
    write_memory(mem, "feedback_testing.md", CURRENT)
    top = head(git, project)
    result = okfgit("sync", cwd=project)
    assert result.out.startswith("okfgit sync: capture deferred (repository busy)")
    assert "HEAD is detached" in result.err
    assert head(git, project) == top
    git("checkout", "-q", "main", cwd=project)
    assert "captured 1" in okfgit("sync", cwd=project).out


def test_uncommitted_edits_in_the_way_defer_capture_and_are_kept(project: Path, mem: Path, okfgit: Runner,
                                                                  git: Runner) -> None:
    index = project / ".okf" / "index.md"
    index.write_text(index.read_text() + "\nA person's unsaved words.\n")
    write_memory(mem, "feedback_testing.md", CURRENT)
    result = okfgit("sync", cwd=project)
    assert "capture deferred" in result.out and "uncommitted edits in .okf/index.md" in result.err
    assert index.read_text().endswith("A person's unsaved words.\n")
    assert (mem / "feedback_testing.md").read_bytes() == CURRENT


# -- hooks' side of sync --------------------------------------------------------------------------


def test_hook_mode_obeys_should_run_and_prints_at_most_one_line(project: Path, mem: Path, okfgit: Runner,
                                                               git: Runner) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    top = head(git, project)
    # a file checkout (flag 0) moves nothing: no work at all
    skip = okfgit("sync", "--hook", "post-checkout", "--", top, top, "0", cwd=project)
    assert (skip.out, skip.err) == ("", "")
    assert head(git, project) == top
    amend = okfgit("sync", "--hook", "post-rewrite", "--", "amend", cwd=project)
    assert (amend.out, amend.err) == ("", "") and head(git, project) == top
    done = okfgit("sync", "--hook", "post-commit", cwd=project)
    assert done.out == "" and done.err.count("\n") == 1 and "captured 1" in done.err
    quiet = okfgit("sync", "--hook", "post-merge", "--", "0", cwd=project)
    assert (quiet.out, quiet.err) == ("", "")
    bad = okfgit("sync", "--hook", "pre-push", cwd=project, expect=2)
    assert "Invalid value for '--hook': 'pre-push' is not one of 'post-checkout', 'post-merge', 'post-commit', " \
           "'post-rewrite'." in bad.err


def test_sync_outside_a_repository_is_a_usage_error(tmp_path: Path, okfgit: Runner) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    result = okfgit("sync", cwd=folder, expect=2)
    assert result.err.startswith("okfgit: error: ")


def test_a_failed_target_makes_sync_exit_3_after_capturing(project: Path, mem: Path, okfgit: Runner,
                                                          git: Runner) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    agents = project / "AGENTS.md"
    agents.write_bytes(b"\xff\xfe not utf-8\n")  # a block file okfgit refuses to rewrite
    result = okfgit("sync", cwd=project, expect=3)
    assert "captured 1" in result.out and "1 target failed" in result.out
    assert agents.read_bytes() == b"\xff\xfe not utf-8\n"
    assert ("Okf-Source", "claude-memory") in trailers_by_git(git, project)
    assert (mem / "feedback_testing.md").read_bytes() == blob(git, project, "HEAD:.okf/memory/feedback-testing.md")
    # not a no-op until the target is fixed
    assert okfgit("sync", cwd=project, expect=3).code == 3
    agents.unlink()
    assert "projected 1 file" in okfgit("sync", cwd=project).out
    assert json.loads(okfgit("status", "--json", cwd=project).out)["in_sync"] is True
    assert yaml is not None


def test_the_sync_stamp_does_not_vouch_for_files_written_during_that_sync(tmp_path: Path) -> None:
    from okfgit.local import stamps as syncstamp

    common, folder = tmp_path / "git", tmp_path / "memory"
    (common / "okf").mkdir(parents=True)
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("a")
    since = (folder / "a.md").stat().st_mtime_ns + 1_000_000_000
    old = since - 10

    def stamp() -> None:
        for path in (folder / "sub", folder):
            os.utime(path, ns=(old, old))
        Path(syncstamp.path(str(common))).write_bytes(syncstamp.record(str(folder), since))

    def both() -> tuple[bool, bool]:
        return syncstamp.matches(str(common), deep=False), syncstamp.matches(str(common))

    os.utime(folder / "a.md", ns=(old, old))
    stamp()
    assert both() == (True, True)
    (folder / "a.md").write_text("b")  # same size, edited in place, mtime set back
    os.utime(folder / "a.md", ns=(old - 5, old - 5))
    assert both() == (True, False)  # only the deep check sees in-place edits
    stamp()
    (folder / "sub" / "b.md").write_text("b")  # a file added in a subfolder
    os.utime(folder / "sub" / "b.md", ns=(old, old))
    assert both() == (False, False)
    stamp()
    assert both() == (True, True)
    os.utime(folder / "sub" / "b.md", ns=(since, since))  # written while that sync ran
    stamp()
    assert both() == (True, False)
    os.utime(folder, ns=(since, since))  # a folder changed while that sync ran
    Path(syncstamp.path(str(common))).write_bytes(syncstamp.record(str(folder), since))
    assert both() == (False, False)
    (folder / "sub" / "b.md").unlink()
    stamp()
    assert both() == (True, True)
    Path(syncstamp.path(str(common))).write_text("{not json")
    assert both() == (False, False)
    absent = tmp_path / "none"
    Path(syncstamp.path(str(common))).write_bytes(syncstamp.record(str(absent), since))
    assert both() == (True, True)
    absent.mkdir()
    assert both() == (False, False)


def test_a_git_hook_no_op_does_not_look_at_every_memory_file(project: Path, mem: Path, okfgit: Runner,
                                                              git: Runner) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    okfgit("sync", cwd=project)
    okfgit("sync", cwd=project)
    file = mem / "feedback_testing.md"
    file.write_bytes(file.read_bytes().replace(b"must hit", b"MUST hit"))  # in place: the folder is unchanged
    top = head(git, project)
    hook = okfgit("sync", "--hook", "post-merge", "--", "0", cwd=project)
    assert (hook.out, hook.err, head(git, project)) == ("", "", top)
    assert "captured 1" in okfgit("sync", cwd=project).out  # sync itself (and SessionEnd) sees it


def test_a_damaged_git_file_is_a_clear_error(tmp_path: Path, okfgit: Runner) -> None:
    bad = tmp_path / "damaged"
    bad.mkdir()
    (bad / ".git").write_text("junk\n")
    result = okfgit("sync", cwd=bad, expect=2)
    assert result.err.startswith("okfgit: error: ") and "cannot be opened" in result.err


def test_dry_run_shows_capture_and_projection_and_writes_nothing(project: Path, mem: Path, okfgit: Runner,
                                                                 git: Runner) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    top = head(git, project)
    before = sorted(p.name for p in mem.iterdir())
    result = okfgit("sync", "--dry-run", cwd=project)
    assert "+++ b/project:memory/feedback-testing.md" in result.out  # the capture commit, as a diff
    assert f"+++ b/{project / 'AGENTS.md'}" in result.out  # the projection, as a diff
    assert result.out.rstrip().endswith("okfgit sync (dry run): would capture 1, would project 2 files")
    assert head(git, project) == top
    assert sorted(p.name for p in mem.iterdir()) == before and not (project / "AGENTS.md").exists()
    assert not (project / ".git" / "okf" / "sync.json").exists()

    data = json.loads(okfgit("sync", "--dry-run", "--json", cwd=project).out)
    assert data["dry_run"] is True and data["capture"]["captured"][0]["origin"] == "feedback_testing.md"
    assert head(git, project) == top

    done = json.loads(okfgit("sync", "--json", cwd=project).out)
    assert done["dry_run"] is False and done["summary"].startswith("okfgit sync: captured 1")
    assert done["capture"]["commits"][0]["tier"] == "project" and done["failed"] is False
    assert str(project / "AGENTS.md") in [r["path"] for r in done["projection"]["written"]]
    assert okfgit("sync", "--dry-run", "--hook", "post-commit", cwd=project, expect=2).code == 2


def test_the_sync_stamp_vouches_only_when_okfgit_wrote_every_newer_file(tmp_path: Path) -> None:
    from okfgit.local import stamps as syncstamp

    common, folder = tmp_path / "git", tmp_path / "memory"
    (common / "okf").mkdir(parents=True)
    folder.mkdir()
    (folder / "ours.md").write_text("a")
    (folder / "agent.md").write_text("b")
    since = (folder / "ours.md").stat().st_mtime_ns + 1_000_000_000
    for name, ns in (("ours.md", since + 5), ("agent.md", since - 5)):
        os.utime(folder / name, ns=(ns, ns))
    os.utime(folder, ns=(since - 10, since - 10))
    ours = {str(folder / "ours.md")}

    def stamp_since(wrote: set[str]) -> int:
        data = syncstamp.record(str(folder), since, lambda path, size, mtime: path in wrote)
        return int(json.loads(data)["since"])

    assert stamp_since(ours) == since + 6  # okfgit's own write during the sync is vouched for
    assert stamp_since(set()) == since  # a file nobody vouches for: the next sync looks again
    os.utime(folder / "agent.md", ns=(since + 1, since + 1))
    assert stamp_since(ours) == since


def test_a_sync_that_read_no_memory_file_leaves_the_stamp_a_full_scan_would(project: Path, mem: Path,
                                                                             okfgit: Runner, git: Runner) -> None:
    """After a clean sync, a sync for a changed concept reads no memory file and writes its
    stamp from the first scan and the files projection wrote: the same digest and folders a
    full scan of the folder gives, so the next git hook's sync is a no-op."""
    from okfgit.local import stamps

    write_memory(mem, "feedback_testing.md", CURRENT)
    okfgit("sync", cwd=project)
    okfgit("sync", cwd=project)
    concept = next(p for p in (project / ".okf" / "memory").glob("*.md") if p.name != "index.md")
    concept.write_text(concept.read_text() + "Edited by a person.\n")
    git("commit", "-q", "-am", "edit", cwd=project)
    okfgit("sync", cwd=project)
    data = json.loads(Path(stamps.path(str(project / ".git"))).read_text())
    full = stamps.scan(str(mem))
    assert (data["digest"], data["dirs"], data["clean"]) == (full.digest, full.dirs, True)
    assert "Edited by a person." in (mem / "feedback_testing.md").read_text()
    assert okfgit("sync", "--hook", "post-merge", "--", "0", cwd=project).out == ""
    assert stamps.matches(str(project / ".git"), deep=True)


def test_a_scan_from_the_first_and_the_writes_notices_a_file_someone_else_added(tmp_path: Path) -> None:
    from okfgit.local import stamps

    folder = tmp_path / "memory"
    (folder / "sub").mkdir(parents=True)
    for name in ("a.md", "b.md", "sub/c.md"):
        (folder / name).write_text(name)
    first = stamps.scan(str(folder), keep=True)
    (folder / "a.md").write_text("written by okfgit")
    (folder / "b.md").unlink()
    after = stamps.after_writes(str(folder), first, ["a.md", "b.md"], 0, lambda *_: True)
    full = stamps.scan(str(folder))
    assert after is not None and (after.digest, after.dirs, after.newest) == (full.digest, full.dirs, full.newest)
    (folder / "sub" / "new.md").write_text("an agent's, meanwhile")
    assert stamps.after_writes(str(folder), first, ["a.md", "b.md"], 0, lambda *_: True) is None


def test_sync_json_lists_the_files_capture_left_as_they_were_when_it_looked(project: Path, mem: Path,
                                                                          okfgit: Runner) -> None:
    """With the folder as the last sync left it, capture reads no file; its list of unchanged
    files is still the record's as capture saw it, not as projection then changed it."""
    okfgit("new", "cache-policy", "--description", "We cache for a day.", "--no-edit", cwd=project)
    okfgit("sync", cwd=project)
    before = sorted(p.name for p in mem.iterdir() if p.name != "MEMORY.md")
    assert before
    okfgit("new", "retry-policy", "--description", "We retry twice.", "--no-edit", cwd=project)
    done = json.loads(okfgit("sync", "--json", cwd=project).out)
    assert done["capture"]["unchanged"] == before and done["capture"]["captured"] == []
    assert sorted(p.name for p in mem.iterdir() if p.name != "MEMORY.md") != before  # projection added one
    again = json.loads(okfgit("sync", "--json", cwd=project).out)
    assert again["capture"]["unchanged"] == sorted(p.name for p in mem.iterdir() if p.name != "MEMORY.md")


def test_a_scan_sees_every_entry_below_the_folder_and_enters_no_link(tmp_path: Path) -> None:
    """``stamps.scan`` lists each folder through a descriptor: every entry at every depth, with
    its own (not its target's) inode, size and time; a link to a folder is listed, not entered."""
    from okfgit.local import stamps

    top = tmp_path / "memory"
    (top / "a" / "b").mkdir(parents=True)
    (top / "one.md").write_text("1\n")
    (top / "a" / "two.md").write_text("22\n")
    (top / "a" / "b" / "three.md").write_text("333\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "not-mine.md").write_text("x\n")
    os.symlink(elsewhere, top / "a" / "link-to-folder")
    os.symlink("one.md", top / "link.md")
    want: dict[str, tuple[int, int, int, bool, bool]] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            want[path.relative_to(top).as_posix()] = (st.st_ino, st.st_size, st.st_mtime_ns, path.is_dir()
                                                      and not path.is_symlink(), path.is_symlink())
    seen = stamps.scan(str(top), keep=True)
    assert seen.entries == want and "a/link-to-folder/not-mine.md" not in want
    assert seen.names == {"": {"one.md", "a", "link.md"}, "a": {"two.md", "b", "link-to-folder"}, "a/b": {"three.md"}}
    assert set(seen.dirs) == {".", "a", "a/b"} and seen.digest == stamps.scan(str(top)).digest
    wrote: list[str] = []
    stamps.scan(str(top), 0, lambda path, size, mtime: wrote.append(path) is None)
    assert sorted(wrote) == sorted(str(top / p) for p, e in want.items() if not e[3])  # full paths, as recorded
