"""Gemini CLI, opencode, Copilot CLI and Amp, through the real CLI: each agent's files get
okfgit's blocks only where that agent is used, a Gemini note is captured and projected back
to the same path, and a second sync is a no-op with every target."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import Runner, fsck, trailers_by_git

NOTE = b"# Deploy checklist\n\nRun the smoke tests before every deploy. Then tag the release.\n"


def gemini_project(home: Path, project: Path, short_id: str = "proj") -> Path:
    """What Gemini CLI 0.61.0 leaves after its first run in ``project``: the registry entry,
    the ownership marker and the project's private memory folder. Returns the folder."""
    gemini = home / ".gemini"
    (gemini / "tmp" / short_id / "memory").mkdir(parents=True)
    key = os.path.normpath(os.path.abspath(project))
    (gemini / "projects.json").write_text(json.dumps({"projects": {key: short_id}}, indent=2))
    (gemini / "tmp" / short_id / ".project_root").write_text(key)
    return gemini / "tmp" / short_id / "memory"


def test_home_blocks_go_only_where_the_agent_is_used(project: Path, okfgit: Runner, home: Path) -> None:
    (home / ".claude").rmdir()
    (home / ".codex").rmdir()
    okfgit("init", "--scope", "global", cwd=project)
    okfgit("sync", cwd=project)
    for absent in (".claude", ".codex", ".gemini", ".copilot", ".config/opencode", ".config/amp"):
        assert not (home / absent).exists(), absent  # never created in a home that does not use the agent
    assert not (project / "GEMINI.md").exists()
    for used in (".claude", ".codex", ".gemini", ".copilot", ".config/amp", ".config/opencode"):
        (home / used).mkdir(parents=True)
    out = okfgit("sync", cwd=project).out
    # the fast path saw the folders appear: Claude's memory folder (a pointer in MEMORY.md) and five blocks
    assert out.startswith("okfgit sync: projected 6 files")
    assert (home / ".claude" / "projects").is_dir()
    assert "okf:begin id=global" in (home / ".codex" / "AGENTS.md").read_text()
    for made in (".gemini/GEMINI.md", ".copilot/copilot-instructions.md", ".config/amp/AGENTS.md"):
        text = (home / made).read_text()
        assert text.startswith("<!-- okf:begin id=global -->\n") and text.endswith("<!-- okf:end -->\n"), made
        assert str(home / ".local" / "share" / "okf" / "index.md") in text
    # opencode reads ~/.claude/CLAUDE.md while its own file is missing, and that one carries the block
    assert "okf:begin id=global" in (home / ".claude" / "CLAUDE.md").read_text()
    assert not (home / ".config" / "opencode" / "AGENTS.md").exists()
    (home / ".config" / "opencode" / "AGENTS.md").write_text("# Mine\n")
    okfgit("sync", cwd=project)
    assert (home / ".config" / "opencode" / "AGENTS.md").read_text().startswith("# Mine\n\n<!-- okf:begin id=global")
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    # set but empty, opencode's own file is the project's AGENTS.md (its `??`): no global block there
    err = okfgit("sync", cwd=project, extra_env={"OPENCODE_CONFIG_DIR": ""}).err
    assert "AGENTS.md: the opencode home variable is set but empty" in err
    assert "id=global" not in (project / "AGENTS.md").read_text()


def test_opencodes_own_config_dir_comes_first(home: Path) -> None:
    # opencode 1.18.33's @opencode/Global: config is $OPENCODE_CONFIG_DIR ?? $XDG_CONFIG_HOME/opencode
    from okfgit.targets import home_agents

    env = {"XDG_CONFIG_HOME": str(home / "xdg"), "OPENCODE_CONFIG_DIR": str(home / "oc")}
    assert home_agents.opencode_file(env, home) == home / "oc" / "AGENTS.md"
    assert home_agents.opencode_file({"XDG_CONFIG_HOME": str(home / "xdg")}, home) == home / "xdg" / "opencode" / "AGENTS.md"


def test_the_global_block_carries_the_facts_that_matter_most(project: Path, okfgit: Runner, home: Path) -> None:
    okfgit("init", "--scope", "global", cwd=project)
    okfgit("new", "tabs", "--scope", "global", "--type", "Note", "--description", "Indent with tabs.", "--no-edit",
           cwd=project)
    okfgit("new", "rebase-policy", "--scope", "global", "--type", "Decision", "--description",
           "Rebase, never merge, on feature branches.", "--no-edit", cwd=project)
    okfgit("sync", cwd=project)
    text = (home / ".claude" / "CLAUDE.md").read_text()
    root = home / ".local" / "share" / "okf"
    decision = text.index(f"({root / 'rebase-policy.md'}) — Rebase, never merge, on feature branches.")
    note = text.index(f"({root / 'tabs.md'}) — Indent with tabs.")
    assert decision < note  # a Decision before a Note


def test_the_repository_gemini_md_when_the_project_uses_gemini(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("sync", cwd=project)
    assert not (project / "GEMINI.md").exists()
    (project / ".gemini").mkdir()
    (project / ".gemini" / "settings.json").write_text(json.dumps({"context": {"fileName": ["CONTEXT.md", "GEMINI.md"]}}))
    okfgit("sync", cwd=project)
    block = (project / "CONTEXT.md").read_text()  # context.fileName's first name
    assert block == (project / "AGENTS.md").read_text()  # the same bytes as AGENTS.md: identical in every clone
    assert str(project) not in block


def test_a_gemini_note_is_captured_and_projected_back(project: Path, okfgit: Runner, git: Runner,
                                                      home: Path) -> None:
    okfgit("init", "--scope", "global", cwd=project)
    memory = gemini_project(home, project)
    (memory / "MEMORY.md").write_text("# Project Memory\n- The staging host is stage-3.\n")
    (memory / "deploy.md").write_bytes(NOTE)
    out = okfgit("sync", cwd=project).out
    assert out.startswith("okfgit sync: captured 1")
    global_repo = home / ".local" / "share" / "okf"
    # Gemini CLI calls these notes private ("must NOT be committed to the repo"): the global tier
    kb_path = "memory/deploy.md"
    committed = git("show", f"HEAD:{kb_path}", cwd=global_repo).out.encode()
    assert committed.endswith(NOTE)  # every byte of the note, under okfgit's frontmatter
    assert b"okf_source: gemini-cli\n" in committed and b"okf_origin: proj/deploy.md\n" in committed
    assert b"title: Deploy checklist\n" in committed
    trailers = trailers_by_git(git, global_repo)
    assert ("Okf-Source", "gemini-cli") in trailers
    assert any(k == "Okf-Captured" and " gemini-cli:deploy.md " in f" {v} " for k, v in trailers)
    assert (memory / "deploy.md").read_bytes() == committed  # projected back to the same path
    index = (memory / "MEMORY.md").read_text()
    assert index.startswith("# Project Memory\n- The staging host is stage-3.\n\n<!-- okf:begin id=knowledge -->\n")
    assert "- [Deploy checklist](deploy.md) — Run the smoke tests before every deploy." in index
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    hook = okfgit("sync", "--repo", str(project), "--hook", "post-commit", cwd=project)
    assert (hook.out, hook.err) == ("", "")  # a git hook's no-op, Gemini's files in its stamp
    (memory / "release.md").write_bytes(b"# Release\n\nTag from main only.\n")
    okfgit("sync", "--repo", str(project), "--hook", "post-commit", cwd=project)  # a new note: not a no-op
    assert git("show", "HEAD:memory/release.md", cwd=global_repo).out.endswith("Tag from main only.\n")
    # the agent edits its note in place: captured as an update of the same concept
    (memory / "deploy.md").write_bytes(committed.replace(b"Then tag the release.", b"Then tag and sign the release."))
    okfgit("sync", cwd=project)
    assert b"Then tag and sign the release." in git("show", f"HEAD:{kb_path}", cwd=global_repo).out.encode()
    assert git("ls-tree", "-r", "--name-only", "HEAD", "memory", cwd=global_repo).out.split() == [
        "memory/deploy.md", "memory/index.md", "memory/release.md"]
    fsck(git, global_repo)


def test_mcp_and_session_hooks_for_gemini(project: Path, okfgit: Runner, home: Path) -> None:
    okfgit("mcp", "install", "--agent", "gemini", cwd=project)
    settings = json.loads((project / ".gemini" / "settings.json").read_text())
    assert settings == {"mcpServers": {"okfgit": {"command": "okfgit", "args": ["mcp"]}}}
    okfgit("mcp", "install", "--agent", "gemini", "--scope", "user", cwd=project)
    assert json.loads((home / ".gemini" / "settings.json").read_text())["mcpServers"]["okfgit"]["args"] == ["mcp"]
    okfgit("hooks", "install", "--agent", "gemini", cwd=project)
    hooks = json.loads((home / ".gemini" / "settings.json").read_text())["hooks"]
    assert sorted(hooks) == ["PreCompress", "SessionEnd", "SessionStart"]
    assert hooks["SessionStart"] == [{"matcher": "*", "hooks": [{"type": "command",
                                                                 "command": "okfgit project --quiet || exit 1"}]}]
    again = okfgit("hooks", "install", "--agent", "gemini", cwd=project).out
    assert "nothing to change" in again
    assert "gemini hooks in" in okfgit("hooks", "status", cwd=project).out


def test_geminis_index_kept_unread_is_what_reading_every_concept_gives(project: Path, okfgit: Runner, git: Runner,
                                                                        home: Path) -> None:
    """Gemini's MEMORY.md block lists every concept; a run where only bodies changed keeps it
    without reading every concept (``gemini_memory._as_left``). Held to the full plan: made to
    read every concept right after, the full plan finds the same bytes; and a change an index
    line shows (a description) is never kept."""
    memory = gemini_project(home, project)
    okfgit("new", "alpha", "--description", "Alpha comes first.", "--no-edit", cwd=project)
    okfgit("new", "beta", "--description", "Beta comes second.", "--no-edit", cwd=project)
    okfgit("sync", cwd=project)
    index = memory / "MEMORY.md"
    before = index.read_bytes()
    assert b"- [Alpha](" in before and b"Beta comes second." in before

    def project_json() -> dict[str, list[str]]:
        out = json.loads(okfgit("project", "--json", cwd=project).out)
        return {kind: [Path(i["path"]).name for i in out[kind] if i["target"] == "gemini-memory"]
                for kind in ("written", "unchanged")}

    def commit_edit(old: str, new: str) -> None:
        path = project / ".okf" / "alpha.md"
        path.write_text(path.read_text().replace(old, new))
        git("commit", "-q", "-am", f"alpha: {new}", cwd=project)

    commit_edit("\n# Alpha\n", "\n# Alpha\n\nA body line no index shows.\n")
    assert project_json() == {"written": [], "unchanged": ["MEMORY.md"]}
    assert index.read_bytes() == before
    stat = index.stat()
    os.utime(index, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # no longer as okfgit left it
    assert project_json() == {"written": [], "unchanged": ["MEMORY.md"]}  # the full plan: the same bytes
    commit_edit("Alpha comes first.", "Alpha comes first, always.")
    assert project_json()["written"] == ["MEMORY.md"]
    assert b"Alpha comes first, always." in index.read_bytes()


def test_gemini_notes_sit_in_the_folder_itself(project: Path, okfgit: Runner, git: Runner, home: Path,
                                               tmp_path: Path) -> None:
    """Gemini CLI keeps its notes "in that same folder only": a subfolder holds none. A note in
    one is not captured, and a concept whose origin names one (from another machine, where
    the folder was real) is not written there: through a link it would land anywhere."""
    okfgit("init", "--scope", "global", cwd=project)
    memory = gemini_project(home, project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (memory / "sub").symlink_to(elsewhere)
    (memory / "skills").mkdir()
    (memory / "skills" / "deploy.md").write_bytes(NOTE)  # Gemini CLI's extracted skills
    global_repo = home / ".local" / "share" / "okf"
    (global_repo / "memory").mkdir()
    (global_repo / "memory" / "far.md").write_text(
        "---\ntype: Note\ntitle: Far\ndescription: A note from another machine.\nscope: global\n"
        "okf_id: 0f3c6a2e-1b2d-4c5e-8f90-a1b2c3d4e5f6\nokf_source: gemini-cli\nokf_origin: proj/sub/far.md\n---\n\n"
        "A note from another machine.\n")
    git("add", "-A", cwd=global_repo)
    git("commit", "-q", "-m", "a note from another machine", cwd=global_repo)
    okfgit("index", "--scope", "global", cwd=project)
    okfgit("sync", cwd=project)
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    assert git("ls-tree", "-r", "--name-only", "HEAD", "memory", cwd=global_repo).out.split() == [
        "memory/far.md", "memory/index.md"]  # the skill was not captured
    assert "(sub/far.md)" not in (memory / "MEMORY.md").read_text()  # the index links the tier's file instead
    assert okfgit("status", cwd=project).code == 0  # neither folder is a memory it cannot take


def test_a_legacy_gemini_memory_file_is_not_hidden(project: Path, okfgit: Runner, home: Path) -> None:
    """While the memory folder has no MEMORY.md, Gemini CLI 0.61.0 reads a GEMINI.md there as the
    project's memory (an older layout): creating MEMORY.md would hide it from Gemini."""
    okfgit("init", "--scope", "global", cwd=project)
    memory = gemini_project(home, project)
    (memory / "GEMINI.md").write_text("# My project notes\n- Deploys go through stage-3.\n")
    (memory / "deploy.md").write_bytes(NOTE)
    result = okfgit("sync", cwd=project)
    assert result.out.startswith("okfgit sync: captured 1")
    assert f"{memory / 'MEMORY.md'}: not created: Gemini CLI reads {memory / 'GEMINI.md'}" in result.err
    assert not (memory / "MEMORY.md").exists()
    assert (memory / "GEMINI.md").read_text() == "# My project notes\n- Deploys go through stage-3.\n"
    (memory / "MEMORY.md").write_text("# Index\n")  # the person moves to the new layout
    okfgit("sync", cwd=project)
    assert "<!-- okf:begin id=knowledge -->" in (memory / "MEMORY.md").read_text()
