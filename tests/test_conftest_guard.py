"""The home guard itself: it must be able to fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import home_fingerprint


def test_the_default_home_raises() -> None:
    with pytest.raises(RuntimeError, match="default home"):
        Path.home()


@pytest.mark.parametrize("leak", [".claude/CLAUDE.md", ".codex/AGENTS.md", ".local/share/okf/index.md",
                                  ".claude/projects/-tmp-pytest-of-x-proj/memory/a.md"])
def test_the_fingerprint_sees_a_leak(tmp_path: Path, leak: str) -> None:
    fake_home = tmp_path / "real"
    (fake_home / ".claude" / "projects" / "-home-me-work").mkdir(parents=True)
    (fake_home / ".claude" / "CLAUDE.md").write_text("mine\n")
    before = home_fingerprint(fake_home)
    (fake_home / ".claude" / "projects" / "-home-me-work" / "session.jsonl").write_text("{}\n")
    assert home_fingerprint(fake_home) == before  # another Claude session's files are not okfgit's
    target = fake_home / leak
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("leaked\n")
    assert home_fingerprint(fake_home) != before
