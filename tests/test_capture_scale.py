"""Capture of many memory files at once: one commit whose trailers are the record."""

from __future__ import annotations

import os
from pathlib import Path

from okfgit.targets.claude_home import memory_dir
from tests.conftest import Runner, fsck, trailers_by_git


def test_many_files_one_commit_bounded_body_every_file_a_trailer(project: Path, okfgit: Runner, git: Runner,
                                                                  home: Path) -> None:
    folder = Path(memory_dir(project.resolve(), os.environ, home).path)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(25):
        (folder / f"fact_{i:02}.md").write_text(
            f"---\nname: fact-{i:02}\ndescription: Fact {i} about the build\nmetadata:\n  type: project\n---\n"
            f"Step {i} comes before packaging.\n")
    okfgit("sync", cwd=project)
    message = git("log", "-1", "--format=%B", cwd=project).out
    body = [line for line in message.splitlines() if line.startswith("- ")]
    assert len(body) == 21 and body[-1] == "- ... and 5 more (one Okf-Captured trailer each)"
    captured = [value for key, value in trailers_by_git(git, project) if key == "Okf-Captured"]
    assert sorted(value.split()[1] for value in captured) == [f"fact_{i:02}.md" for i in range(25)]
    fsck(git, project)


def test_a_capture_beyond_the_per_file_fsync_bound_commits_every_file_exactly(project: Path, okfgit: Runner,
                                                                                git: Runner, home: Path) -> None:
    """More files than FSYNC_EACH_UP_TO: the working tree is written without a per-file fsync,
    and still every file has its trailer, its exact bytes (the agent's keys unfolded, the
    profile keys added, its body) in the commit, the working tree and the index."""
    from okfgit.git.commit import FSYNC_EACH_UP_TO

    count = FSYNC_EACH_UP_TO + 8
    folder = Path(memory_dir(project.resolve(), os.environ, home).path)
    folder.mkdir(parents=True, exist_ok=True)
    native = {f"fact_{i:02}.md": (f"---\nname: fact-{i:02}\ndescription: Fact {i} about the build\nmetadata:\n"
                                  f"  type: project\n  node_type: memory\n---\nStep {i} comes before packaging.\n"
                                  ).encode() for i in range(count)}
    for name, data in native.items():
        (folder / name).write_bytes(data)
    okfgit("sync", cwd=project)
    captured = {}
    for key, value in trailers_by_git(git, project):
        if key == "Okf-Captured":
            okf_id, origin, oid = value.split()
            captured[origin] = (okf_id, oid)
    assert sorted(captured) == sorted(native)
    for name, data in native.items():
        okf_id, oid = captured[name]
        assert oid == git("hash-object", "--stdin", cwd=project, input=data.decode()).out.strip()
        body = data.split(b"---\n")[2]
        # Claude's shape unfolded once (its keys at the top, node_type out), okfgit's keys added
        want = (f"---\ntype: project\ntitle: Fact {name[5:7]}\ndescription: Fact {int(name[5:7])} about the build\n"
                f"scope: project\nokf_id: {okf_id}\nokf_source: claude-memory\nname: {name[:-3].replace('_', '-')}\n"
                f"okf_origin: {name}\ngenerated:\n  by: agent:claude-code\n  at: '2025-11-30T00:00:00Z'\n---\n"
                ).encode() + body
        path = f".okf/memory/fact-{name[5:7]}.md"
        assert git("cat-file", "blob", f"HEAD:{path}", cwd=project).out.encode() == want
        assert (project / path).read_bytes() == want
    # the index holds each written file's stat data (diff-files trusts it, refreshing nothing)
    assert git("diff-files", "--name-only", cwd=project).out == ""
    assert git("status", "--porcelain", "--", ".okf", cwd=project).out == ""
    fsck(git, project)


def test_a_big_capture_killed_while_writing_the_working_tree_is_finished_by_the_next_command(
        project: Path, okfgit_proc: Runner, okfgit: Runner, git: Runner, home: Path) -> None:
    """Beyond FSYNC_EACH_UP_TO the files are written without a per-file fsync: a kill -9 after
    the ref moved still leaves a journal that the next command finishes, every file exact."""
    from okfgit.git.commit import FSYNC_EACH_UP_TO

    folder = Path(memory_dir(project.resolve(), os.environ, home).path)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(FSYNC_EACH_UP_TO + 8):
        (folder / f"fact_{i:02}.md").write_text(
            f"---\nname: fact-{i:02}\ndescription: Fact {i} about the build\nmetadata:\n  type: project\n---\n"
            f"Step {i} comes before packaging.\n")
    top = git("rev-parse", "HEAD", cwd=project).out.strip()
    killed = okfgit_proc("sync", cwd=project, extra_env={"OKFGIT_TEST_CRASH_AT": "mid-worktree"}, expect=None)
    assert killed.code == -9
    assert git("rev-parse", "HEAD", cwd=project).out.strip() != top  # the ref moved, the files did not all land
    assert git("diff-index", "--cached", "--name-only", "HEAD", "--", ".okf", cwd=project).out != ""
    finished = okfgit("status", cwd=project, expect=None)
    assert "finished okfgit's interrupted commit" in finished.err
    assert git("diff-index", "--cached", "--name-only", "HEAD", "--", ".okf", cwd=project).out == ""
    assert git("diff-files", "--name-only", "--", ".okf", cwd=project).out == ""
    listed = git("ls-tree", "-r", "HEAD", "--", ".okf/memory", cwd=project).out.splitlines()
    assert len(listed) == FSYNC_EACH_UP_TO + 8 + 1  # and index.md
    for line in listed:
        meta, path = line.split("\t")
        assert git("hash-object", path, cwd=project).out.strip() == meta.split()[2]
    fsck(git, project)


def test_a_capture_into_a_folder_of_earlier_captures_writes_the_index_a_full_regeneration_writes(
        project: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    """The concepts already in memory/ give their index entries from their cards (not read
    again): the index is still exactly what `okfgit index` makes from the whole tree."""
    folder = Path(memory_dir(project.resolve(), os.environ, home).path)
    folder.mkdir(parents=True, exist_ok=True)

    def fact(i: int) -> str:
        return (f"---\nname: fact-{i:02}\ntitle: Fact [{i}] of the build\ndescription: Fact {i} about the build\n"
                f"metadata:\n  type: project\n---\nStep {i} comes before packaging.\n")
    for i in range(3):
        (folder / f"fact_{i:02}.md").write_text(fact(i))
    okfgit("sync", cwd=project)
    # a person edits an earlier capture's description in the KB: its card follows the new blob
    edited = project / ".okf" / "memory" / "fact-01.md"
    edited.write_text(edited.read_text().replace("Fact 1 about the build", "Fact one, reworded"))
    git("commit", "-q", "-am", "reword", cwd=project)
    for i in range(3, 5):
        (folder / f"fact_{i:02}.md").write_text(fact(i))
    okfgit("sync", cwd=project)
    okfgit("index", "--check", cwd=project)  # exit 0: nothing to regenerate
    page = (project / ".okf" / "memory" / "index.md").read_text()
    for i in range(5):
        assert f"[Fact ({i}) of the build](fact-{i:02}.md)" in page
    assert "Fact one, reworded" in page and "Fact 1 about the build" not in page


def test_a_capture_tells_its_progress_file_by_file(project: Path, home: Path, env: dict[str, str]) -> None:
    """The counts go to the context's progress (shown on a terminal only: tests/test_progress.py)."""
    from okfgit.context import Context
    from okfgit.knowledge.tiers import open_workspace
    from okfgit.flows import capture

    folder = Path(memory_dir(project.resolve(), os.environ, home).path)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(250):
        (folder / f"fact_{i:03}.md").write_text(
            f"---\nname: fact-{i:03}\ndescription: Fact {i} about the build\nmetadata:\n  type: project\n---\nStep {i}.\n")
    told: list[tuple[str, int, int]] = []
    ctx = Context(env, project)._replace(progress=lambda what, done, total: told.append((what, done, total)))
    report = capture.standalone(ctx, open_workspace(ctx, project), dry_run=True)
    assert len(report.captured) == 250
    assert [t for t in told if t[0] == capture.CAPTURING] == [
        (capture.CAPTURING, 100, 250), (capture.CAPTURING, 200, 250), (capture.CAPTURING, 250, 250)]
