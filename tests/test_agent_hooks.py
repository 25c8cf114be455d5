"""okfgit's Claude Code hooks in <claude home>/settings.json, through the real CLI."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from okfgit.flows import agent_hooks
from okfgit.context import Context
from tests.conftest import Result, Runner

OURS = {
    "SessionStart": {"matcher": "*", "hooks": [{"type": "command", "command": "okfgit project --quiet || exit 1"}]},
    "SessionEnd": {"matcher": "*", "hooks": [{"type": "command", "command": "okfgit sync --quiet || exit 1"}]},
    "PreCompact": {"matcher": "*", "hooks": [{"type": "command", "command": "okfgit sync --quiet || exit 1"}]},
}
# What okfgit 0.1's `hooks install --agent claude` wrote, exactly.
OLD = {
    "SessionStart": "okfgit project || exit 1",
    "SessionEnd": "okfgit sync || exit 1",
    "PreCompact": "okfgit sync || exit 1",
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
        {"type": "command", "command": "okfgit sync --quiet || exit 1"},
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


def test_install_into_no_file_then_uninstall_leaves_no_file(settings: Path, okfgit, tmp_path: Path) -> None:
    settings.unlink(missing_ok=True)
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    assert settings.is_file()
    dry = okfgit("hooks", "uninstall", "--agent", "claude", "--dry-run", cwd=tmp_path)
    assert "+++ /dev/null" in dry.out and settings.is_file()
    okfgit("hooks", "uninstall", "--agent", "claude", cwd=tmp_path)
    assert not settings.exists()  # no `{}` left where there was no file
    assert okfgit("hooks", "uninstall", "--agent", "claude", cwd=tmp_path).out.endswith("nothing to change\n")


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
    assert '+  "hooks": {' in r.out and '+            "command": "okfgit project --quiet || exit 1"' in r.out
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


# -- entries an older okfgit installed ----------------------------------------------------------


def with_old_entries() -> dict:
    """A person's settings holding okfgit 0.1's entries: one beside the person's own hook in a
    group of theirs (with a timeout they added), the others in groups of their own."""
    data = json.loads(json.dumps(THEIRS))
    data["hooks"]["SessionStart"][0]["hooks"].append({"type": "command", "command": OLD["SessionStart"],
                                                      "timeout": 30})
    data["hooks"]["SessionEnd"] = [{"matcher": "*", "hooks": [{"type": "command", "command": OLD["SessionEnd"]}]}]
    data["hooks"]["PreCompact"] = [{"matcher": "*", "hooks": [{"type": "command", "command": OLD["PreCompact"]}]}]
    return data


def test_install_replaces_an_older_okfgits_entries_in_place(settings: Path, okfgit, tmp_path: Path) -> None:
    settings.write_bytes(dump(with_old_entries()))
    before = okfgit("hooks", "status", "--json", cwd=tmp_path).out
    agent = json.loads(before)["agents"][0]
    assert agent["state"] == "outdated" and agent["outdated"] == ["SessionStart", "SessionEnd", "PreCompact"]
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    expected = with_old_entries()
    expected["hooks"]["SessionStart"][0]["hooks"][1]["command"] = "okfgit project --quiet || exit 1"
    expected["hooks"]["SessionEnd"] = [OURS["SessionEnd"]]
    expected["hooks"]["PreCompact"] = [OURS["PreCompact"]]
    first = settings.read_bytes()
    assert first == dump(expected)
    assert json.loads(okfgit("hooks", "status", "--json", cwd=tmp_path).out)["agents"][0]["state"] == "installed"
    r = okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    assert r.out == f"{settings}: nothing to change\n" and settings.read_bytes() == first


def test_install_drops_an_old_entry_beside_a_current_one(settings: Path, okfgit, tmp_path: Path) -> None:
    both = {"hooks": {"SessionEnd": [
        {"matcher": "*", "hooks": [{"type": "command", "command": OLD["SessionEnd"]}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": OLD["SessionEnd"]},
                                   {"type": "command", "command": "notify-send bye"}]},
        OURS["SessionEnd"],
    ]}}
    settings.write_bytes(dump(both))
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    assert json.loads(settings.read_bytes())["hooks"]["SessionEnd"] == [
        {"matcher": "*", "hooks": [{"type": "command", "command": "notify-send bye"}]},
        OURS["SessionEnd"],
    ]


def test_uninstall_removes_an_older_okfgits_entries_too(settings: Path, okfgit, tmp_path: Path) -> None:
    settings.write_bytes(dump(with_old_entries()))
    r = okfgit("hooks", "uninstall", "--agent", "claude", cwd=tmp_path)
    assert r.out == f"{settings}: removed SessionStart, SessionEnd, PreCompact hooks\n"
    assert settings.read_bytes() == dump(THEIRS)


# -- the installed commands, run the way Claude Code runs them ---------------------------------

BIN = os.path.dirname(sys.executable)


@pytest.fixture
def run_hook(settings: Path, okfgit: Runner, env: dict[str, str], tmp_path: Path):  # noqa: ANN201
    """Install the hooks, then run an event's installed command with `sh -c` (okfgit on PATH)."""
    if not os.access(os.path.join(BIN, "okfgit"), os.X_OK):
        pytest.skip(f"no okfgit script next to {sys.executable}")
    okfgit("hooks", "install", "--agent", "claude", cwd=tmp_path)
    hooks = json.loads(settings.read_bytes())["hooks"]

    def run(event: str, cwd: Path, extra_env: dict[str, str] | None = None) -> Result:
        (command,) = [e["command"] for g in hooks[event] for e in g["hooks"]]
        full = {**env, "PATH": BIN + os.pathsep + env.get("PATH", os.defpath), **(extra_env or {})}
        proc = subprocess.run(["sh", "-c", command], cwd=cwd, env=full, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run


def test_session_start_puts_nothing_into_the_agents_context(run_hook, project: Path, okfgit: Runner) -> None:
    assert okfgit("project", cwd=project).out  # without --quiet there is a report
    (project / "AGENTS.md").unlink()
    r = run_hook("SessionStart", project)
    assert (r.code, r.out, r.err) == (0, "", "")
    assert "<!-- okf:begin id=project -->" in (project / "AGENTS.md").read_text()
    assert run_hook("SessionStart", project) == Result(0, "", "")  # the fast path is quiet too


def test_session_start_outside_a_git_repository_is_quiet(run_hook, tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    assert run_hook("SessionStart", folder) == Result(0, "", "")


def test_session_start_failure_is_exit_1_with_the_reason_on_stderr(run_hook, project: Path) -> None:
    r = run_hook("SessionStart", project, {"OKF_RUN": "no/such run"})
    assert r == Result(1, "", "okfgit: error: invalid run slug 'no/such run': letters, digits, '.', '_' and '-' "
                              "only\n")


def test_session_start_unwritable_target_is_exit_1(run_hook, project: Path, home: Path, okfgit: Runner) -> None:
    okfgit("init", "--scope", "global", cwd=project)
    (home / ".codex" / "AGENTS.md").mkdir()  # a folder where the file should be
    r = run_hook("SessionStart", project)
    assert (r.code, r.out) == (1, "")
    assert f"okfgit: warning: {home / '.codex' / 'AGENTS.md'}: is not a regular file (nothing was changed)" in r.err


@pytest.mark.parametrize("event", ["SessionEnd", "PreCompact"])
def test_session_end_and_pre_compact_outside_a_git_repository_succeed_silently(run_hook, event: str,
                                                                                tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    assert run_hook(event, folder) == Result(0, "", "")


@pytest.mark.parametrize("event", ["SessionEnd", "PreCompact"])
def test_session_end_and_pre_compact_sync_quietly(run_hook, event: str, project: Path) -> None:
    (project / "AGENTS.md").unlink(missing_ok=True)
    assert run_hook(event, project) == Result(0, "", "")
    assert "<!-- okf:begin id=project -->" in (project / "AGENTS.md").read_text()
    assert run_hook(event, project) == Result(0, "", "")  # the no-op path is quiet too


def test_pre_compact_failure_is_never_exit_2(run_hook, project: Path) -> None:
    r = run_hook("PreCompact", project, {"OKF_RUN": "no/such run"})
    assert r == Result(1, "", "okfgit: error: invalid run slug 'no/such run': letters, digits, '.', '_' and '-' "
                              "only\n")
