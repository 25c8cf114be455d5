"""``okfgit mcp install|uninstall|status``: only okfgit's entry, and back byte for byte."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.conftest import Runner

CLAUDE = {"type": "stdio", "command": "okfgit", "args": ["mcp"]}
CURSOR = {"command": "okfgit", "args": ["mcp", "--repo", "${workspaceFolder}"]}
CODEX = {"command": "okfgit", "args": ["mcp"]}

JSON_FILES = {
    "absent": None,
    "other servers, 2 spaces": '{\n  "mcpServers": {\n    "fs": {\n      "command": "npx",\n      "args": ["-y", "fs"]\n'
                               '    }\n  },\n  "theme": "dark"\n}\n',
    "tabs, CRLF, BOM, no final newline": '\ufeff{\r\n\t"numStartups": 3,\r\n\t"projects": {"/x": {"mcpServers": {}}}\r\n}',
    "one line": '{"mcpServers": {"a": {"command": "a"}}, "z": [1, 2]}\n',
    "empty servers, 4 spaces": '{\n    "mcpServers": {},\n    "é": "ü"\n}\n',
    "an older okfgit entry": '{\n  "mcpServers": {\n    "okfgit": {"command": "/old/okfgit", "args": ["mcp"]}\n  }\n}\n',
}
TOML_FILES = {
    "absent": None,
    "tables and comments": '# my codex\nmodel = "o3"\n\n[mcp_servers.fs]\ncommand = "npx"\nargs = ["-y", "fs"]\n\n'
                           '[profiles.fast]\nmodel = "mini"  # quick\n',
    "no final newline": 'model = "o3"',
    "an older okfgit table": '[mcp_servers.okfgit]\ncommand = "/old/okfgit"\n\n[mcp_servers.okfgit.env]\nA = "1"\n\n'
                             '[tui]\nx = 1\n',
}


def _write(path: Path, text: str | None) -> None:
    if text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def _round_trip(okfgit: Runner, repo: Path, agent: str, path: Path, before: str | None, *extra: str) -> bytes:
    _write(path, before)
    first = okfgit("mcp", "install", "--agent", agent, *extra, cwd=repo)
    assert ("updated" if before and "okfgit" in before else "added") in first.out or "okfgit's MCP server" in first.out
    installed = path.read_bytes()
    again = okfgit("mcp", "install", "--agent", agent, *extra, cwd=repo)
    assert "already in" in again.out and path.read_bytes() == installed
    okfgit("mcp", "uninstall", "--agent", agent, *extra, cwd=repo)
    if before is None:
        assert not path.exists()
    else:
        assert path.read_bytes() == before.encode("utf-8")
    return installed


@pytest.mark.parametrize("name", sorted(JSON_FILES))
def test_claude_project_json_round_trip(name: str, repo: Path, okfgit: Runner) -> None:
    before = JSON_FILES[name]
    installed = _round_trip(okfgit, repo, "claude", repo / ".mcp.json", before)
    data = json.loads(installed.decode("utf-8").lstrip("\ufeff"))
    assert data["mcpServers"]["okfgit"] == CLAUDE
    if before is not None:  # every other key and value kept
        old = json.loads(before.lstrip("\ufeff"))
        assert {k: v for k, v in data.items() if k != "mcpServers"} == {k: v for k, v in old.items() if k != "mcpServers"}
        assert {k: v for k, v in data["mcpServers"].items() if k != "okfgit"} == {
            k: v for k, v in old.get("mcpServers", {}).items() if k != "okfgit"}
        assert ("\r\n" in installed.decode()) == ("\r\n" in before)


@pytest.mark.parametrize("name", sorted(JSON_FILES))
def test_cursor_project_json_round_trip_removes_the_folder_it_made(name: str, repo: Path, okfgit: Runner) -> None:
    installed = _round_trip(okfgit, repo, "cursor", repo / ".cursor" / "mcp.json", JSON_FILES[name])
    assert json.loads(installed.decode().lstrip("\ufeff"))["mcpServers"]["okfgit"] == CURSOR
    assert (repo / ".cursor").exists() == (JSON_FILES[name] is not None)


@pytest.mark.parametrize("name", sorted(TOML_FILES))
def test_codex_config_toml_round_trip(name: str, repo: Path, okfgit: Runner, home: Path) -> None:
    before = TOML_FILES[name]
    installed = _round_trip(okfgit, repo, "codex", home / ".codex" / "config.toml", before)
    data = tomllib.loads(installed.decode())
    assert data["mcp_servers"]["okfgit"] == CODEX
    if before is not None:
        assert installed.decode().startswith(before.split("[mcp_servers.okfgit]")[0].rstrip("\n"))


def test_claude_user_scope_follows_claude_config_dir(repo: Path, okfgit: Runner, home: Path) -> None:
    okfgit("mcp", "install", "--agent", "claude", "--scope", "user", cwd=repo)
    assert json.loads((home / ".claude" / ".claude.json").read_text())["mcpServers"]["okfgit"] == CLAUDE
    unset = {"CLAUDE_CONFIG_DIR": ""}
    _write(home / ".claude.json", '{\n  "numStartups": 41,\n  "oauthAccount": {"x": 1}\n}\n')
    okfgit("mcp", "install", "--agent", "claude", "--scope", "user", cwd=repo, extra_env=unset)
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["okfgit"] == CLAUDE
    okfgit("mcp", "uninstall", "--agent", "claude", "--scope", "user", cwd=repo, extra_env=unset)
    assert (home / ".claude.json").read_text() == '{\n  "numStartups": 41,\n  "oauthAccount": {"x": 1}\n}\n'


def test_a_file_changed_since_install_loses_only_okfgits_entry(repo: Path, okfgit: Runner) -> None:
    path = repo / ".mcp.json"
    _write(path, '{\n  "mcpServers": {\n    "fs": {"command": "npx"}\n  }\n}\n')
    okfgit("mcp", "install", "--agent", "claude", cwd=repo)
    path.write_text(path.read_text().replace('"npx"', '"npx2"'))  # the person edits their own entry
    okfgit("mcp", "uninstall", "--agent", "claude", cwd=repo)
    assert path.read_text() == '{\n  "mcpServers": {\n    "fs": {"command": "npx2"}\n  }\n}\n'


def test_status_and_refusals(repo: Path, okfgit: Runner, home: Path) -> None:
    okfgit("mcp", "install", "--agent", "cursor", cwd=repo)
    _write(repo / ".mcp.json", '{"mcpServers": {"okfgit": {"command": "elsewhere"}}}')
    _write(home / ".codex" / "config.toml", "model = \n")
    status = {(s["agent"], s["scope"]): s for s in json.loads(okfgit("mcp", "status", "--json", cwd=repo).out)["servers"]}
    assert status[("cursor", "project")]["state"] == "installed"
    assert status[("claude", "project")]["state"] == "outdated"
    assert status[("claude", "user")]["state"] == "absent"
    assert status[("codex", "user")]["state"] == "unreadable"
    text = okfgit("mcp", "status", cwd=repo).out
    assert "cursor project installed" in " ".join(text.split())

    broken = home / ".codex" / "config.toml"
    result = okfgit("mcp", "install", "--agent", "codex", cwd=repo, expect=3)
    assert "not valid TOML" in result.err and broken.read_text() == "model = \n"
    assert "use --scope user" in okfgit("mcp", "install", "--agent", "codex", "--scope", "project", cwd=repo,
                                        expect=2).err
    dry = okfgit("mcp", "install", "--agent", "claude", "--scope", "user", "--dry-run", cwd=repo)
    assert '+    "okfgit": {' in dry.out and not (home / ".claude" / ".claude.json").exists()
