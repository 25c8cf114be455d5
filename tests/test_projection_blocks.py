"""Managed blocks through ``okfgit project``: every broken-sentinel case, end to end.

Each case starts from the golden fixture, damages <repo>/AGENTS.md, projects, and checks
that the file ends with exactly one block, every hand-written line is still there, a
warning names the file, and a second run changes nothing.
"""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("which", ["claude_md", "agents_md", "codex_md"])
def test_a_deleted_end_marker_leaves_exactly_one_copy_of_the_protocol(which: str, kit: Kit, okfgit: Runner) -> None:
    path = getattr(kit, which)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Mine\n\nHand line.\n")
    project(okfgit, kit)
    first = path.read_text()
    path.write_text(first.replace(END + "\n", "") + "Hand line after.\n")
    kit.stamp.unlink()
    result = project(okfgit, kit)
    text = path.read_text()
    assert text == first + "Hand line after.\n"
    assert text.count("## Knowledge base (OKF)") == 1 and text.count(END) == 1
    assert f"okfgit: warning: {path}: line" in result.err and "recognised and replaced" in result.err


@pytest.mark.parametrize("which, damage", [
    (which, damage) for which in ("claude_md", "agents_md", "codex_md")
    for damage in ("lost-begin", "mangled-id", "pasted-twice")
] + [("agents_md", "both-lost"), ("claude_md", "both-lost"), ("codex_md", "copy-without-markers")])
def test_a_damaged_block_is_never_doubled(which: str, damage: str, kit: Kit, okfgit: Runner) -> None:
    path = getattr(kit, which)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Mine\n\nHand line.\n")
    project(okfgit, kit)
    first = path.read_text()
    begin = next(line for line in first.splitlines() if line.startswith("<!-- okf:begin id="))
    block = first[first.index(begin):]
    damaged = {"lost-begin": first.replace(begin + "\n", ""),
               "mangled-id": first.replace(begin, begin.replace("id=", "id=x")),
               "pasted-twice": first + "Hand line after.\n\n" + block,
               "both-lost": first.replace(begin + "\n", "").replace(END + "\n", ""),
               "copy-without-markers": first + "Hand line after.\n\n" + block.replace(begin + "\n", "").replace(
                   END + "\n", "")}[damage]
    path.write_text(damaged)
    kit.stamp.unlink()
    result = project(okfgit, kit)
    text = path.read_text()
    assert text.count("## Knowledge base (OKF)") == 1 and text.count(begin) == 1 and text.count(END) == 1
    assert text.startswith(first) and "<!-- okf:begin id=x" not in text
    assert f"okfgit: warning: {path}: line" in result.err
    if damage in ("pasted-twice", "copy-without-markers"):
        assert text == first + "Hand line after.\n\n"  # the copy goes, the person's line stays


def test_a_lost_end_marker_after_an_older_protocol_is_found_by_the_blob_okfgit_wrote(
        kit: Kit, okfgit: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older okfgit wrote another protocol text: the ownership record's blob OID of the file
    says where that text ended, so it is replaced rather than kept as hand text."""
    from okfgit.flows import projection

    kit.agents_md.write_text("# Mine\n\nHand line.\n")
    current = projection.nav_protocol()
    monkeypatch.setattr(projection, "nav_protocol", lambda: "## An older protocol\n\nRead the index.\n")
    project(okfgit, kit)
    assert "An older protocol" in kit.agents_md.read_text()
    monkeypatch.setattr(projection, "nav_protocol", lambda: current)
    kit.agents_md.write_text(kit.agents_md.read_text().replace(END + "\n", "") + "Hand line after.\n")
    kit.stamp.unlink()
    result = project(okfgit, kit)
    text = kit.agents_md.read_text()
    assert "An older protocol" not in text and text.count(END) == 1 and blocks_in(text) == 1
    assert text.startswith("# Mine\n\nHand line.\n\n" + BEGIN + "\n")
    assert text.endswith(END + "\nHand line after.\n")
    assert "recognised and replaced" in result.err


def test_a_missing_file_is_created_with_just_the_block(kit: Kit, okfgit: Runner) -> None:
    project(okfgit, kit)
    text = kit.codex_md.read_text()
    assert text.startswith("<!-- okf:begin id=global -->\n## Knowledge base (OKF)\n")
    assert text.endswith("<!-- okf:end -->\n") and f"`{kit.global_dir / 'index.md'}`\n" in text
    assert (KIT / "expected" / "codex-AGENTS.md").read_text().replace(
        "@GLOBAL_INDEX@", str(kit.global_dir / "index.md")).replace("@HOME@", str(kit.home)) == text


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


# -- home-level block files that are symlinks (dotfiles setups) --------------------------------


def link_to_dotfiles(link: Path, dotfiles: Path, text: str) -> Path:
    """Move ``link``'s role into a dotfiles folder: a real file there, a relative link here."""
    dotfiles.mkdir(parents=True, exist_ok=True)
    real = dotfiles / link.name
    real.write_text(text)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(Path("..") / dotfiles.relative_to(link.parent.parent) / link.name)
    return real


@pytest.mark.parametrize("which", ["claude_md", "codex_md"])
def test_a_symlinked_home_block_file_updates_the_link_target(which: str, kit: Kit, okfgit: Runner) -> None:
    link = getattr(kit, which)
    real = link_to_dotfiles(link, kit.home / "dotfiles" / which, "# Mine\n\n- Keep it short.\n")
    before = os.readlink(link)
    result = project(okfgit, kit)
    assert os.readlink(link) == before  # the link itself is kept
    text = real.read_text()
    assert text.startswith("# Mine\n\n- Keep it short.\n\n<!-- okf:begin id=global -->\n")
    assert text.endswith("<!-- okf:end -->\n")
    assert str(link) not in result.err and "symlink" not in result.err
    assert kit.stamp.exists()
    assert sorted(p.name for p in real.parent.iterdir()) == [link.name]  # no temp file left behind
    mtime = real.stat().st_mtime_ns
    assert project(okfgit, kit).out.startswith("nothing to do")
    kit.stamp.unlink()
    assert project(okfgit, kit).out.startswith("nothing to do: every target is up to date")
    assert real.stat().st_mtime_ns == mtime and real.read_text() == text


def test_a_retargeted_home_link_is_noticed(kit: Kit, okfgit: Runner) -> None:
    first = link_to_dotfiles(kit.claude_md, kit.home / "dotfiles" / "a", "# A\n")
    project(okfgit, kit)
    second = link_to_dotfiles(kit.claude_md, kit.home / "dotfiles" / "b", "# B\n")
    project(okfgit, kit)
    assert "<!-- okf:begin id=global -->" in first.read_text()
    assert second.read_text().startswith("# B\n\n<!-- okf:begin id=global -->\n")


def test_a_dangling_home_link_is_refused(kit: Kit, okfgit: Runner) -> None:
    kit.claude_md.unlink()
    kit.claude_md.symlink_to(kit.home / "dotfiles" / "gone.md")
    result = project(okfgit, kit, expect=3)
    assert (f"okfgit: warning: {kit.claude_md}: is a symlink to {kit.home / 'dotfiles' / 'gone.md'}, which does "
            "not exist; nothing was changed") in result.err
    assert kit.claude_md.is_symlink() and not (kit.home / "dotfiles").exists()
    assert "<!-- okf:begin id=global -->" in kit.codex_md.read_text()
    assert not kit.stamp.exists()


def test_a_home_link_to_a_folder_is_refused(kit: Kit, okfgit: Runner) -> None:
    folder = kit.home / "dotfiles"
    folder.mkdir()
    kit.codex_md.parent.mkdir(parents=True, exist_ok=True)
    kit.codex_md.symlink_to(folder)
    result = project(okfgit, kit, expect=3)
    assert (f"okfgit: warning: {kit.codex_md}: is a symlink to {folder}, which is not a regular file; "
            "nothing was changed") in result.err
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_a_home_link_to_a_file_in_a_read_only_folder_is_refused(kit: Kit, okfgit: Runner) -> None:
    real = link_to_dotfiles(kit.claude_md, kit.home / "dotfiles" / "ro", "# Mine\n")
    real.parent.chmod(0o555)
    try:
        result = project(okfgit, kit, expect=3)
    finally:
        real.parent.chmod(0o755)
    assert f"{kit.claude_md}: is a symlink to {real}, whose folder you cannot write" in result.err
    assert real.read_text() == "# Mine\n"
