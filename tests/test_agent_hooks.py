"""okfgit's Claude Code hooks in <claude home>/settings.json, through the real CLI."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from okfgit import agent_hooks
from okfgit.context import Context

OURS = {
    "SessionStart": {"matcher": "*", "hooks": [{"type": "command", "command": "okfgit project || exit 1"}]},
    "SessionEnd": {"matcher": "*", "hooks": [{"type": "command", "command": "okfgit sync || exit 1"}]},
    "PreCompact": {"matcher": "*", "hooks": [{"type": "command", "command": "okfgit sync || exit 1"}]},
}

# A person's settings in Claude Code's own layout, with a hook of their own on one of our events.
THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": []},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo welcome"}]}],
    },
    "env": {"FOO": "bär"},
}


def dump(data: object) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


@pytest.fixture
def settings(home: Path) -> Path:
    # conftest points CLAUDE_CONFIG_DIR at <home>/.claude
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_install_into_a_missing_settings_file(settings: Path, okfgit, tmp_path: Path) -> None:
    r = okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    assert r.out == f"{settings}: added SessionStart, SessionEnd, PreCompact hooks\n"
    assert settings.read_bytes() == dump({"hooks": {event: [group] for event, group in OURS.items()}})


def test_install_merges_keeps_order_and_is_idempotent(settings: Path, okfgit, tmp_path: Path) -> None:
    settings.write_bytes(dump(THEIRS))
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    expected = json.loads(json.dumps(THEIRS))
    expected["hooks"]["SessionStart"].append(OURS["SessionStart"])
    expected["hooks"]["SessionEnd"] = [OURS["SessionEnd"]]
    expected["hooks"]["PreCompact"] = [OURS["PreCompact"]]
    first = settings.read_bytes()
    assert first == dump(expected)
    assert list(json.loads(first)) == ["model", "permissions", "hooks", "env"]

    mtime = settings.stat().st_mtime_ns
    r = okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    assert r.out == f"{settings}: nothing to change\n"
    assert settings.read_bytes() == first
    assert settings.stat().st_mtime_ns == mtime


def test_uninstall_restores_the_file_byte_for_byte(settings: Path, okfgit, tmp_path: Path) -> None:
    original = dump(THEIRS)
    settings.write_bytes(original)
    settings.chmod(0o600)
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    r = okfgit("hooks", "uninstall", "--agent", "claude", cwd=tmp_path)
    assert r.out == f"{settings}: removed SessionStart, SessionEnd, PreCompact hooks\n"
    assert settings.read_bytes() == original
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    r = okfgit("hooks", "uninstall", "--agent", "claude", cwd=tmp_path)
    assert r.out == f"{settings}: nothing to change\n"


def test_uninstall_removes_only_our_entries(settings: Path, okfgit, tmp_path: Path) -> None:
    # a person moved our command into their own group and added one of theirs beside it
    mixed = {"hooks": {"SessionEnd": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "okfgit sync || exit 1"},
        {"type": "command", "command": "okfgit sync"},  # not our exact string: theirs
        {"type": "command", "command": "notify-send bye"},
    ]}]}}
    settings.write_bytes(dump(mixed))
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    assert len(json.loads(settings.read_bytes())["hooks"]["SessionEnd"]) == 1  # already there: not added twice
    okfgit("hooks", "uninstall", "--agent", "claude", cwd=tmp_path)
    assert json.loads(settings.read_bytes()) == {"hooks": {"SessionEnd": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "okfgit sync"},
        {"type": "command", "command": "notify-send bye"},
    ]}]}}


def test_fresh_install_then_uninstall_leaves_an_empty_object(settings: Path, okfgit, tmp_path: Path) -> None:
    settings.write_bytes(b'{\n  "model": "opus"\n}\n')
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    okfgit("hooks", "uninstall", "--agent", "claude", cwd=tmp_path)
    assert settings.read_bytes() == b'{\n  "model": "opus"\n}\n'


@pytest.mark.parametrize("content,problem", [
    (b'{"model": "opus",}\n', "not valid JSON (Expecting property name enclosed in double quotes at line 1 column 18)"),
    (b"", "not valid JSON (Expecting value at line 1 column 1)"),
    (b'{"model": "\xff"}', "not UTF-8"),
    (b'["a"]\n', "not a JSON object"),
    (b'{"a": 1, "a": 2}\n', "key 'a' appears twice"),
    (b'{"a": NaN}\n', "NaN is not JSON"),
    (b'{"hooks": []}\n', '"hooks" is not an object'),
    (b'{"hooks": {"SessionEnd": {}}}\n', "hooks.SessionEnd is not a list of objects"),
    (b'{"hooks": {"SessionEnd": [{"hooks": "x"}]}}\n', 'a hooks.SessionEnd entry\'s "hooks" is not a list'),
])
@pytest.mark.parametrize("verb", ["install", "uninstall"])
def test_unreadable_settings_are_never_rewritten(settings: Path, okfgit, tmp_path: Path, content: bytes,
                                                 problem: str, verb: str) -> None:
    settings.write_bytes(content)
    r = okfgit("hooks", verb, "--agent", "claude", cwd=tmp_path, expect=3)
    assert r.err == f"okfgit: error: {settings}: {problem}; not rewriting it (nothing was changed)\n"
    assert settings.read_bytes() == content
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]


def test_dry_run_shows_the_diff_and_writes_nothing(settings: Path, okfgit, tmp_path: Path) -> None:
    settings.write_bytes(b'{\n  "model": "opus"\n}\n')
    r = okfgit("hooks", "install", "--agent", "claude", "--dry-run", cwd=tmp_path)
    assert '+  "hooks": {' in r.out and '+            "command": "okfgit project || exit 1"' in r.out
    assert settings.read_bytes() == b'{\n  "model": "opus"\n}\n'


def test_a_compact_file_is_reformatted_with_a_warning(settings: Path, okfgit, tmp_path: Path) -> None:
    settings.write_bytes(b'{"model":"opus"}')
    r = okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    assert r.err == (f"okfgit: warning: {settings} was rewritten in Claude Code's own layout (2-space JSON); "
                     "every setting keeps its value and place\n")
    assert json.loads(settings.read_bytes())["model"] == "opus"


def test_a_symlinked_settings_file_stays_a_symlink(settings: Path, okfgit, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    real.write_bytes(dump({"model": "opus"}))
    settings.symlink_to(real)
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    assert settings.is_symlink() and os.readlink(settings) == str(real)
    assert "SessionEnd" in json.loads(real.read_bytes())["hooks"]


def test_status_reports_each_event(settings: Path, okfgit, tmp_path: Path) -> None:
    settings.write_bytes(dump({"hooks": {"SessionEnd": [OURS["SessionEnd"]]}}))
    out = okfgit("hooks", "status", cwd=tmp_path).out
    assert out.endswith(f"claude hooks in {settings}: partial\n  SessionStart   absent\n"
                        "  SessionEnd     installed\n  PreCompact     absent\n")
    settings.write_bytes(b"{oops")
    r = okfgit("hooks", "status", "--json", cwd=tmp_path)
    agent = json.loads(r.out)["agents"][0]
    assert agent["state"] == "unreadable" and "not valid JSON" in agent["problem"]


def test_claude_config_dir_is_honoured(tmp_path: Path, okfgit, home: Path) -> None:
    other = tmp_path / "elsewhere"
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path, extra_env={"CLAUDE_CONFIG_DIR": str(other)})
    assert (other / "settings.json").exists()
    assert not (home / ".claude" / "settings.json").exists()


def test_library_status_never_raises(home: Path, tmp_path: Path) -> None:
    ctx = Context(environ={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "c")}, cwd=tmp_path)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "settings.json").write_bytes(b"\xff")
    assert agent_hooks.status(ctx).state == "unreadable"
