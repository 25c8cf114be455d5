from __future__ import annotations

import json
from pathlib import Path

import pytest

from okfgit.targets.claude_home import (
    claude_home,
    codex_home,
    empty_config_home,
    encode_project_dir,
    memory_dir,
)


# --- homes -------------------------------------------------------------------------------


def test_claude_home_defaults_to_dot_claude(tmp_path):
    assert claude_home({}, tmp_path) == tmp_path / ".claude"


def test_claude_home_set_but_empty_is_the_folder_claude_runs_in(tmp_path):
    # Claude Code 2.1.332: (process.env.CLAUDE_CONFIG_DIR ?? join(homedir(), ".claude")): "" is not nullish
    assert claude_home({"CLAUDE_CONFIG_DIR": ""}, tmp_path) == Path("")
    assert empty_config_home({"CLAUDE_CONFIG_DIR": ""}) is not None
    assert empty_config_home({}) is None and empty_config_home({"CLAUDE_CONFIG_DIR": "/x"}) is None


def test_claude_home_env(tmp_path):
    assert claude_home({"CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}, tmp_path) == tmp_path / "cc"


def test_codex_home(tmp_path):
    assert codex_home({}, tmp_path) == tmp_path / ".codex"
    assert codex_home({"CODEX_HOME": ""}, tmp_path) == tmp_path / ".codex"
    assert codex_home({"CODEX_HOME": str(tmp_path / "cx")}, tmp_path) == tmp_path / "cx"
    # one agent's variable never moves the other's home
    assert codex_home({"CLAUDE_CONFIG_DIR": "/x"}, tmp_path) == tmp_path / ".codex"
    assert claude_home({"CODEX_HOME": "/x"}, tmp_path) == tmp_path / ".claude"


# --- encode_project_dir: the names Claude Code's own function gives ------------------------

# Each path with the folder name Claude Code 2.1.332's J$ gives it, run offline
# (fixtures/agents/claude-code-2.1.332/README.md): non-ASCII as UTF-16 code units (an emoji is
# two), the cut at 200 with the base-36 Java hash, a negative hash, and |-2**31|.
PROJECT_DIRS = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "agents" / "claude-code-2.1.332"
                           / "project-dirs.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("path", "name"), PROJECT_DIRS, ids=range(len(PROJECT_DIRS)))
def test_the_project_folder_name_is_claude_codes(path: str, name: str) -> None:
    assert encode_project_dir(path) == name


# --- memory_dir -------------------------------------------------------------------------


REPO = Path("/work/my.repo")


def write_settings(home: Path, content: str | bytes) -> Path:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        settings.write_bytes(content)
    else:
        settings.write_text(content, encoding="utf-8")
    return settings


def default_dir(home: Path) -> Path:
    return home / ".claude" / "projects" / "-work-my-repo" / "memory"


def test_memory_dir_default(tmp_path):
    choice = memory_dir(REPO, {}, tmp_path)
    assert (choice.path, choice.warnings, choice.shared_by) == (default_dir(tmp_path), (), None)
    assert choice.source == "the default, ~/.claude"


def test_memory_dir_follows_claude_config_dir(tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    choice = memory_dir(REPO, env, tmp_path)
    assert choice.path == tmp_path / "cfg" / "projects" / "-work-my-repo" / "memory"
    assert choice.warnings == ()


def test_memory_dir_settings_in_claude_config_dir(tmp_path):
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "settings.json").write_text(json.dumps({"autoMemoryDirectory": str(tmp_path / "m")}))
    # a settings.json in ~/.claude is not the one Claude Code reads here
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/elsewhere"}))
    choice = memory_dir(REPO, {"CLAUDE_CONFIG_DIR": str(cfg)}, tmp_path)
    assert choice.path == tmp_path / "m"


def test_memory_dir_absolute_override(tmp_path):
    write_settings(tmp_path, json.dumps({"model": "x", "autoMemoryDirectory": "/data/mem/"}))
    settings = tmp_path / ".claude" / "settings.json"
    choice = memory_dir(REPO, {}, tmp_path)
    assert (choice.path, choice.warnings, choice.shared_by) == (Path("/data/mem"), (), settings)
    assert choice.source == f"autoMemoryDirectory in {settings} (user settings)"


def test_memory_dir_override_is_normalised(tmp_path):
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/data/x/../mem//"}))
    assert memory_dir(REPO, {}, tmp_path).path == Path("/data/mem")


def test_memory_dir_tilde_override(tmp_path):
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "~/notes/memory"}))
    settings = tmp_path / ".claude" / "settings.json"
    choice = memory_dir(REPO, {}, tmp_path)
    assert (choice.path, choice.warnings, choice.shared_by) == (tmp_path / "notes" / "memory", (), settings)


@pytest.mark.parametrize("value", ["~", "~/", "~/.", "~/..", "~/a/../.."])
def test_memory_dir_tilde_to_home_or_parent_is_ignored(tmp_path, value):
    settings = write_settings(tmp_path, json.dumps({"autoMemoryDirectory": value}))
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert len(choice.warnings) == 1 and str(settings) in choice.warnings[0]


@pytest.mark.parametrize("value", ["memory", "./mem", "../mem", "~user/mem"])
def test_memory_dir_relative_override_is_ignored_like_claude_code(tmp_path, value):
    # Claude Code's validateMemoryPath rejects a relative autoMemoryDirectory and keeps the
    # default folder; okfgit must follow, or it would project memory where Claude never reads.
    settings = write_settings(tmp_path, json.dumps({"autoMemoryDirectory": value}))
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert len(choice.warnings) == 1
    assert str(settings) in choice.warnings[0] and repr(value) in choice.warnings[0]


@pytest.mark.parametrize("value", ["/", "/a", "//server/share"])
def test_memory_dir_root_like_override_is_ignored(tmp_path, value):
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": value}))
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert len(choice.warnings) == 1


def test_memory_dir_invalid_json_warns(tmp_path):
    settings = write_settings(tmp_path, '{"autoMemoryDirectory": "/x",')
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert len(choice.warnings) == 1
    assert str(settings) in choice.warnings[0] and "not valid JSON" in choice.warnings[0]


def test_memory_dir_json_not_an_object_warns(tmp_path):
    settings = write_settings(tmp_path, '["/x"]')
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert choice.warnings == (f"{settings}: not a JSON object, so Claude Code skips it; using {default_dir(tmp_path)}",)


def test_memory_dir_nan_warns_as_claude_codes_json_parse_refuses_it(tmp_path):
    settings = write_settings(tmp_path, '{"autoMemoryDirectory": "/x", "limit": NaN}')
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert choice.warnings == (f"{settings}: NaN is not JSON, so Claude Code skips it; using {default_dir(tmp_path)}",)


def test_memory_dir_not_utf8_warns(tmp_path):
    settings = write_settings(tmp_path, b'{"autoMemoryDirectory": "/caf\xe9"}')
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert len(choice.warnings) == 1
    assert str(settings) in choice.warnings[0] and "UTF-8" in choice.warnings[0]


def test_memory_dir_settings_is_a_folder_warns(tmp_path):
    (tmp_path / ".claude" / "settings.json").mkdir(parents=True)
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert len(choice.warnings) == 1 and "settings.json" in choice.warnings[0]


def test_memory_dir_non_string_setting_warns(tmp_path):
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": 42}))
    choice = memory_dir(REPO, {}, tmp_path)
    assert choice.path == default_dir(tmp_path)
    assert len(choice.warnings) == 1 and "not a string" in choice.warnings[0]


@pytest.mark.parametrize(
    "content", ["{}", '{"autoMemoryDirectory": null}', '{"autoMemoryDirectory": ""}']
)
def test_memory_dir_unset_setting_is_silent(tmp_path, content):
    write_settings(tmp_path, content)
    choice = memory_dir(REPO, {}, tmp_path)
    assert (choice.path, choice.warnings, choice.shared_by) == (default_dir(tmp_path), (), None)


def test_memory_dir_encodes_repo_root(tmp_path):
    choice = memory_dir(Path("/home/u/Mes Projets/café_kb"), {}, tmp_path)
    expected = tmp_path / ".claude" / "projects" / "-home-u-Mes-Projets-caf--kb" / "memory"
    assert choice.path == expected


# --- every source Claude Code 2.1.332 asks, in its order -----------------------------------
# (resolveEntry: the override; Wg(): policySettings, flagSettings, [localSettings,
# projectSettings when the folder is trusted], userSettings; then _Dt() ?? rt() with LO/J$)


def sources_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"OKF_CLAUDE_MANAGED_DIR": str(tmp_path / "etc-claude-code"), **extra}


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def trust(home: Path, folder: Path) -> None:
    write_json(home / ".claude.json", {"projects": {str(folder): {"hasTrustDialogAccepted": True}}})


def test_the_cowork_override_is_the_whole_path_and_wins(tmp_path):
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/data/mem"}))
    env = sources_env(tmp_path, CLAUDE_COWORK_MEMORY_PATH_OVERRIDE="/cowork/mem/")
    choice = memory_dir(REPO, env, tmp_path)
    assert (choice.path, choice.source, choice.shared_by) == (Path("/cowork/mem"), "$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
                                                              None)


@pytest.mark.parametrize("value", ["~/mem", "relative/mem", "/"])
def test_an_override_claude_code_rejects_falls_through_to_the_settings(tmp_path, value):
    # Bu(value, false): no "~" expansion for the variable, and a rejected value is ignored
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/data/mem"}))
    choice = memory_dir(REPO, sources_env(tmp_path, CLAUDE_COWORK_MEMORY_PATH_OVERRIDE=value), tmp_path)
    assert choice.path == Path("/data/mem") and "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE" in choice.warnings[0]


def test_managed_policy_beats_flag_project_and_user_settings(tmp_path):
    env = sources_env(tmp_path)
    managed = write_json(tmp_path / "etc-claude-code" / "managed-settings.json", {"autoMemoryDirectory": "/policy/mem"})
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/user/mem"}))
    choice = memory_dir(REPO, env, tmp_path)
    assert (choice.path, choice.shared_by) == (Path("/policy/mem"), managed)
    assert choice.source == f"autoMemoryDirectory in {managed} (managed policy)"
    # a drop-in overrides the base file (and drop-ins each other, by name)
    write_json(tmp_path / "etc-claude-code" / "managed-settings.d" / "10-mem.json", {"autoMemoryDirectory": "/a"})
    last = write_json(tmp_path / "etc-claude-code" / "managed-settings.d" / "20-mem.json", {"autoMemoryDirectory": "/b/m"})
    write_json(tmp_path / "etc-claude-code" / "managed-settings.d" / ".30-hidden.json", {"autoMemoryDirectory": "/h"})
    assert memory_dir(REPO, env, tmp_path).path == Path("/b/m")  # a hidden drop-in is not read (ule)
    assert memory_dir(REPO, env, tmp_path).shared_by == last


def test_the_settings_flag_comes_after_policy_and_before_the_user(tmp_path):
    flag = write_json(tmp_path / "session.json", {"autoMemoryDirectory": "/flag/mem"})
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/user/mem"}))
    choice = memory_dir(REPO, sources_env(tmp_path, OKF_CLAUDE_SETTINGS=str(flag)), tmp_path)
    assert (choice.path, choice.source) == (Path("/flag/mem"), f"autoMemoryDirectory in {flag} (--settings)")
    inline = memory_dir(REPO, sources_env(tmp_path, OKF_CLAUDE_SETTINGS='{"autoMemoryDirectory": "/inline/mem"}'),
                        tmp_path)
    assert inline.path == Path("/inline/mem")


def test_project_settings_count_only_in_a_trusted_folder(tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    write_json(project / ".claude" / "settings.json", {"autoMemoryDirectory": "/project/mem"})
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/user/mem"}))
    env = sources_env(tmp_path)
    assert memory_dir(project, env, tmp_path).path == Path("/user/mem")  # not trusted: Claude Code skips it
    trust(tmp_path, project)
    choice = memory_dir(project, env, tmp_path)
    assert (choice.path, choice.shared_by) == (Path("/project/mem"), None)  # one project's folder: capture stays on
    local = write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": "/local/mem"})
    assert memory_dir(project, env, tmp_path).source == f"autoMemoryDirectory in {local} (project local settings)"


def test_a_linked_worktree_is_trusted_by_its_main_root_or_a_sandbox(tmp_path):
    # sD(): $CLAUDE_CODE_SANDBOXED, or the trust recorded for the canonical git root (hSe)
    main, linked = tmp_path / "main", tmp_path / "wt"
    (main / ".git").mkdir(parents=True)
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {main}/.git/worktrees/wt\n")
    write_json(linked / ".claude" / "settings.json", {"autoMemoryDirectory": "/linked/mem"})
    env = sources_env(tmp_path)
    assert memory_dir(main, env, tmp_path, project_root=linked).path != Path("/linked/mem")
    assert memory_dir(main, {**env, "CLAUDE_CODE_SANDBOXED": "1"}, tmp_path, project_root=linked).path == \
        Path("/linked/mem")
    trust(tmp_path, main)
    assert memory_dir(main, env, tmp_path, project_root=linked).path == Path("/linked/mem")


def test_an_empty_value_stops_the_search_and_keeps_the_default(tmp_path):
    # Wg() returns the first value != null ("" included); Bu("") is undefined: the default folder
    write_json(tmp_path / "etc-claude-code" / "managed-settings.json", {"autoMemoryDirectory": ""})
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/user/mem"}))
    assert memory_dir(REPO, sources_env(tmp_path), tmp_path).path == default_dir(tmp_path)


def test_an_unreadable_source_is_skipped_for_the_next(tmp_path):
    bad = tmp_path / "etc-claude-code" / "managed-settings.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{nope")
    write_settings(tmp_path, json.dumps({"autoMemoryDirectory": "/user/mem"}))
    choice = memory_dir(REPO, sources_env(tmp_path), tmp_path)
    assert choice.path == Path("/user/mem") and str(bad) in choice.warnings[0]


def test_the_remote_root_replaces_the_config_home_and_ignores_the_dir_name(tmp_path):
    env = sources_env(tmp_path, CLAUDE_CODE_REMOTE_MEMORY_DIR="/remote", CLAUDE_CONFIG_DIR=str(tmp_path / "cfg"),
                      CLAUDE_CODE_PROJECT_DIR_NAME="named")
    choice = memory_dir(REPO, env, tmp_path)
    assert (choice.path, choice.source) == (Path("/remote/projects/-work-my-repo/memory"), "$CLAUDE_CODE_REMOTE_MEMORY_DIR")
    # a remote root that is the config home itself (`k===rt()`) keeps the name
    env["CLAUDE_CODE_REMOTE_MEMORY_DIR"] = env["CLAUDE_CONFIG_DIR"]
    assert memory_dir(REPO, env, tmp_path).path == tmp_path / "cfg" / "projects" / "named" / "memory"


@pytest.mark.parametrize(("name", "config", "expected"), [
    ("team-kb_1", "cfg", "team-kb_1"),  # valid, with a config home set: the name is used
    ("team-kb_1", None, "-work-my-repo"),  # dwt(): only when CLAUDE_CONFIG_DIR is set non-empty
    ("has space", "cfg", "-work-my-repo"),  # ^[A-Za-z0-9_-]{1,64}$
    ("x" * 65, "cfg", "-work-my-repo"),
    ("NUL", "cfg", "-work-my-repo"),  # a reserved Windows device name
])
def test_the_project_dir_name_and_its_validation(tmp_path, name, config, expected):
    env = sources_env(tmp_path, CLAUDE_CODE_PROJECT_DIR_NAME=name)
    root = tmp_path / ".claude"
    if config is not None:
        env["CLAUDE_CONFIG_DIR"] = str(tmp_path / config)
        root = tmp_path / config
    assert memory_dir(REPO, env, tmp_path).path == root / "projects" / expected / "memory"


def test_a_set_but_empty_config_dir_counts(tmp_path):
    choice = memory_dir(REPO, sources_env(tmp_path, CLAUDE_CONFIG_DIR=""), tmp_path)
    assert choice.path == REPO / "projects" / "-work-my-repo" / "memory"  # "": the folder Claude Code runs in
    assert choice.source == "$CLAUDE_CONFIG_DIR"
