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
