"""okfgit status: what sync would do, without writing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from okfgit.local import state

from tests.conftest import Runner
from tests.test_capture import (
    CURRENT,
    OLDER,
    conflict_setup,
    head,
    memory,
    mtimes,
    write_memory,
)

ON = "capture is on: git config okf.capture is not set (default on); the project has no .okf/okfgit.toml at HEAD"


@pytest.fixture
def mem(project: Path, env: dict[str, str], home: Path) -> Path:
    folder = memory(project, env, home)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def text(okfgit: Runner, project: Path, mem: Path, home: Path, expect: int = 0) -> str:
    out = okfgit("status", cwd=project, expect=expect).out
    return out.replace(str(mem), "@MEM@").replace(str(project), "@REPO@").replace(str(home), "@HOME@")


def test_a_fresh_project(project: Path, mem: Path, home: Path, okfgit: Runner) -> None:
    assert text(okfgit, project, mem, home) == f"""\
tiers: project
{ON}
memory folder: @MEM@ (from $CLAUDE_CONFIG_DIR)
captures pending: 0
conflicts: 0
projections stale: 2
  written: @MEM@/MEMORY.md
  written: @REPO@/AGENTS.md
git hooks: 0 of 4 installed in @REPO@/.git/hooks (run `okfgit hooks install`)
claude code hooks: absent (@HOME@/.claude/settings.json)
run `okfgit sync` to bring everything in line
"""
    okfgit("sync", cwd=project)
    assert text(okfgit, project, mem, home).endswith("projections stale: 0\n"
                                                      "git hooks: 0 of 4 installed in @REPO@/.git/hooks "
                                                      "(run `okfgit hooks install`)\n"
                                                      "claude code hooks: absent (@HOME@/.claude/settings.json)\n"
                                                      "in sync\n")
    assert json.loads(okfgit("status", "--json", cwd=project).out)["in_sync"] is True


def test_everything_sync_would_do_is_listed_and_nothing_written(project: Path, mem: Path, home: Path,
                                                                okfgit: Runner, git: Runner) -> None:
    conflict_setup(project, mem, okfgit, git)
    write_memory(mem, "gone.md", CURRENT.replace(b"feedback-testing", b"gone").replace(b"real database", b"staging "
                 b"cluster").replace(b"a mocked test hid a broken migration", b"the nightly job reads its logs"))
    okfgit("sync", cwd=project)  # captures gone.md ... and the conflict; set the scene again
    conflict_setup_again(project, mem, git)
    write_memory(mem, "project_freeze.md", OLDER)
    write_memory(mem, "bad.md", b"---\nname: [x\n---\n")
    (mem / "gone.md").unlink()
    okfgit("hooks", "install", cwd=project)
    top = head(git, project)
    before = mtimes(mem, project / "AGENTS.md", project / ".git" / "okf" / "fastpath.json",
                    project / ".git" / "okf" / "sync.json")
    owned = state.load(project / ".git").to_json()
    assert text(okfgit, project, mem, home, expect=2) == f"""\
tiers: project
{ON}
memory folder: @MEM@ (from $CLAUDE_CONFIG_DIR)
captures pending: 2
  new: project_freeze.md -> project:memory/release-freeze.md
  deprecate: gone.md -> project:memory/gone.md
conflicts: 1
  feedback_testing.md: the concept changed on both sides: in the KB (project:memory/feedback-testing.md is no \
longer what okfgit projected here) and in Claude memory; sync keeps the KB's and commits the agent's as \
project:memory/feedback-testing.needs-merge.md
unreadable memory files (left untouched): 1
  bad.md: invalid YAML frontmatter (line 2): did not find expected ',' or ']'
needs-merge variants waiting for a person: 1 concept
  project:memory/feedback-testing.md: 1 variant in memory/feedback-testing.needs-merge.md; merge what matters into \
memory/feedback-testing.md, then delete it (or `okfgit proposal accept|drop \
project:memory/feedback-testing.needs-merge.md`)
projected files an agent deleted (not written back; sync proposes deprecating them): 1
  gone.md
projections stale: 1
  written: @MEM@/MEMORY.md
git hooks: 4 of 4 installed in @REPO@/.git/hooks
claude code hooks: absent (@HOME@/.claude/settings.json)
run `okfgit sync` to bring everything in line
needs a person: 1 concept with needs-merge variants to merge; 1 memory file okfgit cannot capture
"""
    st = json.loads(okfgit("status", "--json", cwd=project, expect=2).out)
    cap = st["capture"]
    assert (cap["enabled"], cap["reason"], cap["machine"], cap["project"]) == (True, ON, "unset", "unset")
    assert cap["pending"] == [
        {"origin": "feedback_testing.md", "action": "conflict", "tier": "project",
         "path": "memory/feedback-testing.needs-merge.md"},
        {"origin": "project_freeze.md", "action": "new", "tier": "project", "path": "memory/release-freeze.md"},
        {"origin": "gone.md", "action": "deprecate", "tier": "project", "path": "memory/gone.md"}]
    assert cap["unreadable"] == [{"origin": "bad.md",
                                  "reason": "invalid YAML frontmatter (line 2): did not find expected ',' or ']'"}]
    assert cap["deleted_by_agent"] == ["gone.md"] and cap["blocked"] == []
    assert st["needs_merge"] == ["project:memory/feedback-testing.needs-merge.md"]
    assert [s["path"] for s in st["projection"]["skipped"]] == [str(mem / "feedback_testing.md"), str(mem / "gone.md")]
    assert [h["state"] for h in st["hooks"]["hooks"]] == ["ours"] * 4
    assert st["in_sync"] is False and st["sync_lock"] is None
    # status wrote nothing a user or sync relies on
    assert head(git, project) == top
    assert mtimes(mem, project / "AGENTS.md", project / ".git" / "okf" / "fastpath.json",
                  project / ".git" / "okf" / "sync.json") == before
    assert state.load(project / ".git").to_json() == owned  # the store's facts may change, the record not


def conflict_setup_again(project: Path, mem: Path, git: Runner) -> None:
    master = project / ".okf" / "memory" / "feedback-testing.md"
    master.write_bytes(master.read_bytes().replace(b"PostgreSQL 16", b"PostgreSQL 17"))
    git("commit", "-q", "-am", "a person again", cwd=project)
    file = mem / "feedback_testing.md"
    file.write_bytes(file.read_bytes().replace(b"hid a", b"hid one"))


def test_status_says_when_sync_would_defer_the_capture(project: Path, mem: Path, home: Path, okfgit: Runner,
                                                       git: Runner) -> None:
    index = project / ".okf" / "index.md"
    index.write_text(index.read_text() + "\nunsaved\n")
    write_memory(mem, "feedback_testing.md", CURRENT)
    out = text(okfgit, project, mem, home)
    assert ("conflicts: 0\nsync would defer the capture for now (it projects anyway):\n"
            "  @REPO@: uncommitted edits in .okf/index.md\n") in out
    git("checkout", "-q", "--", ".okf/index.md", cwd=project)
    git("checkout", "-q", "--detach", cwd=project)
    blocked = json.loads(okfgit("status", "--json", cwd=project).out)["capture"]["blocked"]
    assert blocked == [f"{project}: HEAD is detached; check out a branch first (nothing was changed)"]


def test_status_shows_the_last_hook_error(project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("hooks", "install", cwd=project)
    log = project / ".git" / "okf" / "hook.log"
    log.parent.mkdir(exist_ok=True)
    log.write_text("2025-11-30T00:00:00Z post-merge: exit 3: okfgit sync --repo x --hook post-merge -- 0\n"
                   "  okfgit: error: something broke\n")
    result = okfgit("status", cwd=project, expect=2)
    assert ("  last hook error (since the last successful sync): 2025-11-30T00:00:00Z post-merge: exit 3: okfgit "
            "sync --repo x --hook post-merge -- 0 | okfgit: error: something broke\n") in result.out
    assert result.out.endswith("needs a person: a git hook failed since the last successful sync\n")
    # a sync that succeeds afterwards makes it history
    os.utime(log, ns=(1, 1))
    okfgit("sync", cwd=project)
    after = okfgit("status", cwd=project)
    assert "last hook error" not in after.out and after.out.endswith("in sync\n")


def test_status_outside_a_repository_is_a_usage_error(tmp_path: Path, okfgit: Runner) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    assert okfgit("status", cwd=folder, expect=2).err.startswith("okfgit: error: ")


def test_a_needs_merge_sibling_waiting_for_a_person_is_listed_and_exits_2(project: Path, mem: Path, okfgit: Runner,
                                                                          git: Runner) -> None:
    conflict_setup(project, mem, okfgit, git)
    okfgit("sync", cwd=project)  # commits the agent's variant as a sibling
    result = okfgit("status", cwd=project, expect=2)
    assert ("needs-merge variants waiting for a person: 1 concept\n  project:memory/feedback-testing.md: 1 variant in "
            "memory/feedback-testing.needs-merge.md; merge what matters into memory/feedback-testing.md, then "
            "delete it (or `okfgit proposal accept|drop project:memory/feedback-testing.needs-merge.md`)\n") \
        in result.out
    assert result.out.endswith("needs a person: 1 concept with needs-merge variants to merge\n")
    assert "in sync" not in result.out
    recorded = state.load(project / ".git").needs_merge
    assert recorded == ["project:memory/feedback-testing.needs-merge.md"]  # what status read
    (project / ".git" / "okf" / "state.db").unlink()  # no projection recorded: the tree is walked
    assert "project:memory/feedback-testing.md: 1 variant in memory/feedback-testing.needs-merge.md; merge" in \
        okfgit("status", cwd=project, expect=2).out
    okfgit("sync", cwd=project)
    git("rm", "-q", ".okf/memory/feedback-testing.needs-merge.md", cwd=project)
    git("commit", "-q", "-m", "merged by a person", cwd=project)
    okfgit("sync", cwd=project)
    assert okfgit("status", cwd=project).out.endswith("in sync\n")


def test_a_concept_without_an_okf_id_is_not_projected_and_named(project: Path, mem: Path, okfgit: Runner,
                                                                git: Runner) -> None:
    (project / ".okf" / "no-id.md").write_text("---\ntype: Note\ntitle: No id\ndescription: Has no okf_id.\n---\nX.\n")
    git("add", ".okf/no-id.md", cwd=project)
    git("commit", "-q", "-m", "a concept without an okf_id", cwd=project)
    result = okfgit("project", cwd=project)
    assert "okfgit: warning: skipped project:no-id.md: not projected, it has no valid okf_id" in result.err
    assert not (mem / "no-id.md").exists() and "no-id" not in (mem / "MEMORY.md").read_text()
    sync = okfgit("sync", cwd=project)
    assert sync.code == 0
    status = okfgit("status", cwd=project, expect=2)
    assert "concepts not projected: 1\n  skipped project:no-id.md: not projected" in status.out
    assert json.loads(okfgit("status", "--json", cwd=project, expect=2).out)["unprojected"] == ["project:no-id.md"]
    (project / ".git" / "okf" / "state.db").unlink()  # no projection recorded: read from the cards instead
    assert json.loads(okfgit("status", "--json", cwd=project, expect=2).out)["unprojected"] == ["project:no-id.md"]


def test_doctors_errors_are_listed_and_exit_2(project: Path, mem: Path, home: Path, okfgit: Runner,
                                              git: Runner) -> None:
    okfgit("sync", cwd=project)
    bad = project / ".okf" / "bad.md"
    bad.write_text("---\ntype: Note\ntitle: Bad\ndescription: Links nowhere.\nscope: project\n"
                   "okf_id: 11111111-1111-4111-8111-111111111111\nokf_source: authored\n---\n\nSee [x](missing.md).\n")
    git("add", ".okf", cwd=project)
    git("commit", "-q", "-m", "bad", cwd=project)
    out = text(okfgit, project, mem, home, expect=2)
    assert ("doctor errors: 2 (`okfgit doctor` says more)\n"
            "  project:bad.md:10: dangling-link: link to missing.md: missing.md does not exist in the tier\n"
            "  project:index.md: index-omission: does not list bad.md (run `okfgit index`)\n") in out
    assert out.endswith("needs a person: 2 doctor errors\n")
    report = json.loads(okfgit("status", "--json", cwd=project, expect=2).out)
    assert [(f["file"], f["code"]) for f in report["doctor_errors"]] == [("project:bad.md", "dangling-link"),
                                                                          ("project:index.md", "index-omission")]
