"""The home guard itself: it must be able to fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import home_fingerprint


def test_the_default_home_raises() -> None:
    with pytest.raises(RuntimeError, match="default home"):
        Path.home()


@pytest.mark.parametrize("leak", [".claude/CLAUDE.md", ".codex/AGENTS.md", ".local/share/okf/index.md",
                                  ".claude/projects/-tmp-pytest-of-x-proj/memory/a.md", ".gemini/GEMINI.md",
                                  ".gemini/settings.json", ".copilot/copilot-instructions.md",
                                  ".config/opencode/AGENTS.md", ".config/amp/AGENTS.md",
                                  ".gemini/tmp/proj/memory/MEMORY.md"])
def test_the_fingerprint_sees_a_leak(tmp_path: Path, leak: str) -> None:
    fake_home = tmp_path / "real"
    (fake_home / ".claude" / "projects" / "-home-me-work").mkdir(parents=True)
    (fake_home / ".claude" / "CLAUDE.md").write_text("mine\n")
    (fake_home / ".gemini" / "tmp" / "proj" / "chats").mkdir(parents=True)
    (fake_home / ".gemini" / "tmp" / "proj" / ".project_root").write_text("/tmp/pytest-of-x/proj")
    before = home_fingerprint(fake_home)
    (fake_home / ".gemini" / "tmp" / "proj" / "chats" / "session.json").write_text("{}\n")
    assert home_fingerprint(fake_home) == before  # a Gemini session's own files are not okfgit's
    (fake_home / ".claude" / "projects" / "-home-me-work" / "session.jsonl").write_text("{}\n")
    assert home_fingerprint(fake_home) == before  # another Claude session's files are not okfgit's
    target = fake_home / leak
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("leaked\n")
    assert home_fingerprint(fake_home) != before


def test_every_agent_home_is_the_temp_home(home: Path, env: dict[str, str]) -> None:
    """The variables that would move an agent's home are gone: each follows HOME or XDG_CONFIG_HOME."""
    import os

    from okfgit.targets import gemini_home, home_agents

    assert not [k for k in env if k.startswith(("GEMINI", "COPILOT", "OPENCODE", "AMP_", "SANDBOX"))]
    assert not [k for k in os.environ if k.startswith(("GEMINI", "COPILOT", "OPENCODE", "AMP_", "SANDBOX"))]
    assert gemini_home.gemini_dir(env, home) == home / ".gemini"
    assert home_agents.copilot_file(env, home) == home / ".copilot" / "copilot-instructions.md"
    assert home_agents.opencode_file(env, home) == home / ".config" / "opencode" / "AGENTS.md"
    assert home_agents.amp_file(env, home) == home / ".config" / "amp" / "AGENTS.md"


def test_the_fast_path_watches_every_variable_that_moves_a_home() -> None:
    from okfgit.local import fastpath
    from okfgit.targets import claude_home, gemini_home, home_agents

    moves = {gemini_home.HOME_VAR, gemini_home.SANDBOX_VAR, home_agents.COPILOT_HOME, home_agents.OPENCODE_CONFIG_DIR}
    assert set(claude_home.ENV_KEYS) | moves <= set(fastpath.ENV_KEYS)
    # and no target reads another: every environ.get(<a literal>) of targets/ is one of them
    import re
    from pathlib import Path

    read = {name for module in Path(home_agents.__file__).parent.glob("*.py")
            for name in re.findall(r'environ\.get\("([A-Z_]+)"', module.read_text())}
    assert read <= set(fastpath.ENV_KEYS) | {"PATH"}, read - set(fastpath.ENV_KEYS)
