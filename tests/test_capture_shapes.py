"""Capture of every shape Claude Code 2.1.332 writes, through the real CLI.

The memory files are the fixtures Claude Code's own code made
(fixtures/agents/claude-code-2.1.332/README.md): a projected concept Claude rewrote, the
same again after a deleted ``.git/okf/``, a rename, a restamp that changed nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import Runner, fsck, trailers_by_git
from tests.test_capture import blob, memory, split, write_memory

CASES = Path(__file__).resolve().parent.parent / "fixtures" / "agents" / "claude-code-2.1.332" / "memory"
CONCEPT = (CASES / "okfgit-concept.input.md").read_bytes()  # okf_id 6f1d2c3b-...
OKF_ID = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"
KB_PATH = ".okf/decisions/cache-invalidation.md"
EDITED = CONCEPT.replace(b"A TTL is only a safety net.", b"A TTL is only a safety net, never the rule.")


def projected_concept(project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> Path:
    """The project tier holding CONCEPT (committed by hand), projected: its memory folder."""
    (project / ".okf" / "decisions").mkdir(parents=True, exist_ok=True)
    (project / KB_PATH).write_bytes(CONCEPT)
    git("add", KB_PATH, cwd=project)
    git("commit", "-q", "-m", "a decision", cwd=project)
    okfgit("index", cwd=project)
    okfgit("project", cwd=project)
    mem = memory(project, env, home)
    assert (mem / "cache-invalidation.md").read_bytes() == CONCEPT
    return mem


def concept_files(git: Runner, project: Path) -> list[str]:
    return sorted(p for p in git("ls-tree", "-r", "--name-only", "HEAD", ".okf", cwd=project).out.split()
                  if p.endswith(".md") and not p.endswith(("index.md", "log.md")))


def test_a_concept_claude_rewrote_is_captured_onto_the_same_concept(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    mem = projected_concept(project, git, okfgit, env, home)
    write_memory(mem, "cache-invalidation.md", (CASES / "okfgit-concept-edited.md").read_bytes())
    assert okfgit("sync", cwd=project).out.startswith("okfgit sync: captured 1")
    # the same concept, updated in place: only the edited body line changed, every key's
    # line as committed, no `metadata`, no Claude stamp, no second concept
    assert blob(git, project, f"HEAD:{KB_PATH}") == EDITED
    assert concept_files(git, project) == [KB_PATH]
    captured = [v.split(" ") for k, v in trailers_by_git(git, project) if k == "Okf-Captured"]
    assert [c[:2] for c in captured] == [[OKF_ID, "cache-invalidation.md"]]
    assert (mem / "cache-invalidation.md").read_bytes() == EDITED  # projected back, verbatim
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    fsck(git, project)


def test_without_the_ownership_record_claudes_own_stamp_decides(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    mem = projected_concept(project, git, okfgit, env, home)
    shutil.rmtree(project / ".git" / "okf")  # another clone, or a deleted record
    write_memory(mem, "cache-invalidation.md", (CASES / "okfgit-concept-edited.md").read_bytes())
    okfgit("sync", cwd=project)
    # modified: 2026-12-03T09:30 is after the concept's last commit: the agent saw it
    assert blob(git, project, f"HEAD:{KB_PATH}") == EDITED
    assert concept_files(git, project) == [KB_PATH]  # no duplicate, no needs-merge sibling


def test_a_restamp_that_changed_nothing_is_not_a_capture(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    mem = projected_concept(project, git, okfgit, env, home)
    before = git("rev-parse", "HEAD", cwd=project).out
    write_memory(mem, "cache-invalidation.md", (CASES / "okfgit-concept.md").read_bytes())
    write_memory(mem, "other.md", b"")  # the folder changed too (an empty file is skipped)
    okfgit("sync", cwd=project, expect=None)
    assert git("rev-parse", "HEAD", cwd=project).out == before  # nothing committed
    assert (mem / "cache-invalidation.md").read_bytes() == CONCEPT  # the concept's bytes again


def test_a_file_claude_renamed_moves_the_concept_there(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    mem = projected_concept(project, git, okfgit, env, home)
    (mem / "cache-invalidation.md").unlink()
    write_memory(mem, "caching.md", (CASES / "okfgit-concept-edited.md").read_bytes())
    status = okfgit("status", "--json", cwd=project, expect=None).out
    assert '"deleted_by_agent": []' in status  # a rename, not a deletion
    okfgit("sync", cwd=project)
    meta, _ = split(blob(git, project, f"HEAD:{KB_PATH}"))
    assert (meta["okf_id"], meta["okf_origin"]) == (OKF_ID, "caching.md")
    assert meta["status"] == "stable"  # renamed, not deleted: not proposed deprecated
    assert concept_files(git, project) == [KB_PATH]
    assert (mem / "caching.md").read_bytes() == blob(git, project, f"HEAD:{KB_PATH}")
    assert not (mem / "cache-invalidation.md").exists()


def test_an_older_okfgit_capture_is_unfolded_once(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    legacy = (CASES / "okfgit-captured-legacy.input.md").read_bytes()
    path = ".okf/memory/feedback-testing.md"
    (project / ".okf" / "memory").mkdir(parents=True)
    (project / path).write_bytes(legacy)
    git("add", path, cwd=project)
    git("commit", "-q", "-m", "captured by an older okfgit", cwd=project)
    okfgit("project", cwd=project)
    mem = memory(project, env, home)
    assert (mem / "feedback_testing.md").read_bytes() == legacy  # projected to its origin
    stamped = (CASES / "okfgit-captured-legacy.md").read_bytes()
    write_memory(mem, "feedback_testing.md", stamped.replace(b"real database.", b"real database, always."))
    okfgit("sync", cwd=project)
    committed = blob(git, project, f"HEAD:{path}")
    meta, body = split(committed)
    assert "metadata" not in meta and committed.count(b"type: feedback") == 1
    assert body.strip() == b"Integration tests must hit a real database, always."


def test_a_decision_claude_rewrote_becomes_a_proposal_not_an_edit(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    decision = (CASES / "okfgit-decision.input.md").read_bytes()
    (project / ".okf" / "decisions").mkdir(parents=True, exist_ok=True)
    (project / KB_PATH).write_bytes(decision)
    git("add", KB_PATH, cwd=project)
    git("commit", "-q", "-m", "a decision", cwd=project)
    okfgit("project", cwd=project)
    mem = memory(project, env, home)
    write_memory(mem, "cache-invalidation.md", (CASES / "okfgit-decision-edited.md").read_bytes())
    err = okfgit("sync", cwd=project).err
    assert "a Decision, so no agent changes it in place" in err
    assert blob(git, project, f"HEAD:{KB_PATH}") == decision  # the Decision unchanged
    sibling = blob(git, project, "HEAD:.okf/decisions/cache-invalidation.needs-merge.md")
    meta, body = split(sibling)
    # the agent's version, unfolded once, said to be the agent's: no metadata, no stamp
    assert "metadata" not in meta and "originSessionId" not in meta and meta["okf_id"] == OKF_ID
    assert meta["generated"]["by"] == "agent:claude-code" and b"never the rule" in body


def test_claudes_own_memory_index_backfill_loses_and_doubles_nothing(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    """When MEMORY.md is missing, Claude Code 2.1.332 writes one itself ("memory index backfill",
    its ``lQr``/``dQr``): one ``- [<file stem>](<file>) — <description>`` line per memory file (an
    ASCII description is used as it is, cut at 150 characters). okfgit's next projection keeps
    the line of a file it does not manage yet and writes its own for the rest: no line twice."""
    mem = projected_concept(project, git, okfgit, env, home)
    (mem / "MEMORY.md").unlink()
    write_memory(mem, "tabs.md", b"---\nname: tabs\ndescription: The user indents with tabs\nmetadata:\n  type: user\n"
                                 b"---\n\nTabs, always.\n")
    backfill = ("- [cache-invalidation](cache-invalidation.md) \u2014 Caches are invalidated by domain events, never by "
                "TTL alone\n- [tabs](tabs.md) \u2014 The user indents with tabs\n")
    (mem / "MEMORY.md").write_text(backfill)
    result = okfgit("project", cwd=project)
    assert "was edited since okfgit wrote it" not in result.err  # an index, not a person's words
    index = (mem / "MEMORY.md").read_text()
    assert index.count("(cache-invalidation.md)") == 1 and index.count("(tabs.md)") == 1
    assert index.startswith("- [tabs](tabs.md) \u2014 The user indents with tabs\n")  # kept: not captured yet
    assert "- [Cache invalidation by event](cache-invalidation.md)" in index


def test_without_the_record_an_edit_older_than_the_concept_is_a_conflict(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    mem = projected_concept(project, git, okfgit, env, home)
    shutil.rmtree(project / ".git" / "okf")
    changed = CONCEPT.replace(b"Every cache entry", b"Each cache entry")
    (project / KB_PATH).write_bytes(changed)
    # the concept changed in the tier after Claude's edit (modified: 2026-12-03T09:30)
    git("commit", "-q", "-am", "cache: each", cwd=project, extra_env={"GIT_COMMITTER_DATE": "@1798761600 +0000"})
    write_memory(mem, "cache-invalidation.md", (CASES / "okfgit-concept-edited.md").read_bytes())
    err = okfgit("sync", cwd=project).err
    assert "never projected to this file" in err
    assert blob(git, project, f"HEAD:{KB_PATH}") == changed  # the tier's version kept
    sibling = ".okf/decisions/cache-invalidation.needs-merge.md"
    assert concept_files(git, project) == [KB_PATH, sibling]
    meta, body = split(blob(git, project, f"HEAD:{sibling}"))
    assert meta["okf_id"] == OKF_ID and b"never the rule" in body and "metadata" not in meta


def test_two_files_claude_merged_are_an_edit_and_a_deprecation(
        project: Path, git: Runner, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    okfgit("new", "ttl-safety", "--type", "Note", "--description", "A TTL is a safety net.", "--no-edit",
           cwd=project)
    mem = projected_concept(project, git, okfgit, env, home)
    ttl_id = split(blob(git, project, "HEAD:.okf/ttl-safety.md"))[0]["okf_id"]
    # Claude's consolidation: the TTL memory merged into the cache one, its own file deleted
    (mem / "ttl-safety.md").unlink()
    write_memory(mem, "cache-invalidation.md", (CASES / "okfgit-concept-edited.md").read_bytes())
    okfgit("sync", cwd=project)
    assert blob(git, project, f"HEAD:{KB_PATH}") == EDITED  # the kept concept says what was merged into it
    ttl, _ = split(blob(git, project, "HEAD:.okf/ttl-safety.md"))
    assert (ttl["okf_id"], ttl["status"]) == (ttl_id, "deprecated")  # the other one proposed deprecated
    assert concept_files(git, project) == [KB_PATH, ".okf/ttl-safety.md"]  # no new fact minted
    trailers = trailers_by_git(git, project)
    assert [v.split(" ")[:2] for k, v in trailers if k == "Okf-Captured"] == [[OKF_ID, "cache-invalidation.md"]]
    assert [v.split(" ") for k, v in trailers if k == "Okf-Deleted"] == [[ttl_id, "ttl-safety.md"]]
    fsck(git, project)
