"""Managed blocks through ``okfgit project``: every broken-sentinel case, end to end.

Each case starts from the golden fixture, damages <repo>/AGENTS.md, projects, and checks
that the file ends with exactly one block, every hand-written line is still there, a
warning names the file, and a second run changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.test_projection import KIT, Kit, build_kit, project

BEGIN = "<!-- okf:begin id=project -->"
END = "<!-- okf:end -->"
HAND = ["# Agents guide", "", "Hand line one.", "", "Hand line two.", "", "Hand line three."]

CASES = {
    "missing end": ["# Agents guide", "", BEGIN, "Hand line one.", "", "Hand line two.", "", "Hand line three."],
    "orphan end": ["# Agents guide", "", "Hand line one.", END, "", "Hand line two.", "", "Hand line three."],
    "duplicated": ["# Agents guide", "", BEGIN, "old", END, "Hand line one.", "", BEGIN, "Hand line two.", END, "",
                   "Hand line three."],
    "nested": ["# Agents guide", "", BEGIN, "Hand line one.", "", BEGIN, "old", END, "Hand line two.", "",
               "Hand line three."],
}


@pytest.fixture
def kit(home: Path, repo: Path, git: Runner) -> Kit:
    return build_kit(home, repo, git, job=False)


def blocks_in(text: str) -> int:
    return text.count(BEGIN)


@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_sentinels_are_repaired_to_one_block(case: str, kit: Kit, okfgit: Runner) -> None:
    kit.agents_md.write_text("\n".join(CASES[case]) + "\n")
    result = project(okfgit, kit)
    text = kit.agents_md.read_text()
    assert blocks_in(text) == 1 and text.count(END) == 1
    lines = text.split("\n")
    for hand in ("# Agents guide", "Hand line one.", "Hand line two.", "Hand line three."):
        assert hand in lines, f"{hand!r} lost in case {case}"
    assert f"okfgit: warning: {kit.agents_md}: line" in result.err
    begin, end = lines.index(BEGIN), lines.index(END)
    assert "This project's knowledge base starts at [.okf/index.md](.okf/index.md)." in lines[begin:end]
    kit.stamp.unlink()
    again = project(okfgit, kit)
    assert kit.agents_md.read_text() == text
    assert str(kit.agents_md) not in again.err


def test_a_missing_file_is_created_with_just_the_block(kit: Kit, okfgit: Runner) -> None:
    project(okfgit, kit)
    text = kit.codex_md.read_text()
    assert text.startswith("<!-- okf:begin id=global -->\n## Knowledge base (OKF)\n")
    assert text.endswith(f"`{kit.global_dir / 'index.md'}`\n<!-- okf:end -->\n")
    assert (KIT / "expected" / "codex-AGENTS.md").read_text().replace(
        "@GLOBAL_INDEX@", str(kit.global_dir / "index.md")) == text


def test_other_scopes_blocks_are_left_alone(kit: Kit, okfgit: Runner) -> None:
    other = "<!-- okf:begin id=team -->\nA team's own block.\n<!-- okf:end -->\n"
    kit.agents_md.write_text("# Guide\n\n" + other)
    project(okfgit, kit)
    text = kit.agents_md.read_text()
    assert text.startswith("# Guide\n\n" + other + "\n" + BEGIN + "\n")


def test_crlf_file_keeps_its_line_endings(kit: Kit, okfgit: Runner) -> None:
    kit.claude_md.write_bytes(b"# Mine\r\n\r\nKeep CRLF.\r\n")
    project(okfgit, kit)
    data = kit.claude_md.read_bytes()
    assert data.startswith(b"# Mine\r\n\r\nKeep CRLF.\r\n\r\n<!-- okf:begin id=global -->\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_project_block_is_identical_in_every_clone(kit: Kit, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    project(okfgit, kit)
    git("add", "AGENTS.md", cwd=kit.repo)
    git("commit", "-q", "-m", "agents block", cwd=kit.repo)
    clone = tmp_path / "elsewhere" / "clone"
    git("clone", "-q", str(kit.repo), str(clone), cwd=tmp_path)
    okfgit("project", "--target", "agents", cwd=clone)
    assert (clone / "AGENTS.md").read_bytes() == kit.agents_md.read_bytes()
    assert git("status", "--porcelain", cwd=clone).out == ""
    assert str(tmp_path) not in kit.agents_md.read_text()
