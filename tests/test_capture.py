"""okfgit capture (and the capture half of sync), end to end through the real CLI.

An "agent" is simulated by writing files into Claude Code's memory folder for the repo
(``<CLAUDE_CONFIG_DIR>/projects/<encoded repo root>/memory/``), exactly as Claude Code
would. Everything okfgit commits is read back with real git.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from okfgit.format import concept as okf
from okfgit.targets.claude_home import memory_dir
from tests.conftest import Runner, fsck, trailers_by_git

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

# Claude Code 2.1.x writes this form (its prompt's shape; 2.1.332 then stamps it: STAMPED) ...
CURRENT = (
    b"---\n"
    b"name: feedback-testing\n"
    b"description: Integration tests hit a real database, never mocks\n"
    b"metadata:\n"
    b"  type: feedback\n"
    b"  node_type: memory\n"
    b"---\n"
    b"Integration tests must hit a real database.\n"
    b"\n"
    b"**Why:** a mocked test hid a broken migration.\n"
)
CLAUDE_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "agents" / "claude-code-2.1.332" / "memory"
STAMPED = (CLAUDE_FIXTURES / "native-feedback.md").read_bytes()  # what Claude Code 2.1.332 leaves on disk
# ... older versions wrote the type at the top level.
OLDER = (
    b"---\n"
    b"name: release-freeze\n"
    b"description: The release freeze starts every Thursday at noon\n"
    b"type: project\n"
    b"---\n"
    b"Freeze begins Thursday 12:00 UTC;   only fixes merge after that ([[feedback-testing]] still applies).\n"
)


# -- helpers shared with the other capture/sync test modules ----------------------------------


def memory(repo: Path, env: dict[str, str], home: Path) -> Path:
    """The repo's Claude Code memory folder, as okfgit and Claude Code compute it."""
    return memory_dir(repo.resolve(), env, home).path


def write_memory(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def head(git: Runner, repo: Path) -> str:
    return git("rev-parse", "HEAD", cwd=repo).out.strip()


def blob(git: Runner, repo: Path, rev_path: str) -> bytes:
    """A blob's bytes (``HEAD:.okf/x.md``), exactly."""
    import subprocess

    return subprocess.run(["git", "cat-file", "blob", rev_path], cwd=repo, capture_output=True, check=True).stdout


def hash_object(git: Runner, repo: Path, path: Path) -> str:
    return git("hash-object", str(path), cwd=repo).out.strip()


def split(data: bytes) -> tuple[dict, bytes]:
    """(frontmatter mapping, body bytes) of a concept or memory file."""
    assert data.startswith(b"---\n"), data
    end = data.index(b"\n---\n", 3)
    return yaml.safe_load(data[4:end + 1].decode()), data[end + 5:]


def mtimes(*paths: Path) -> dict[str, int]:
    """mtime_ns of each file (folders: of every file below them, and the folder itself)."""
    out: dict[str, int] = {}
    for path in paths:
        if path.is_dir():
            out[str(path)] = path.stat().st_mtime_ns
            for file in sorted(path.rglob("*")):
                out[str(file)] = file.lstat().st_mtime_ns
        elif path.exists():
            out[str(path)] = path.stat().st_mtime_ns
    return out


def commit_count(git: Runner, repo: Path) -> int:
    return int(git("rev-list", "--count", "HEAD", cwd=repo).out)


def captured_trailers(git: Runner, repo: Path, rev: str = "HEAD") -> list[list[str]]:
    return [value.split(" ") for key, value in trailers_by_git(git, repo, rev) if key == "Okf-Captured"]


@pytest.fixture
def mem(project: Path, env: dict[str, str], home: Path) -> Path:
    folder = memory(project, env, home)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- migration of native memories -----------------------------------------------------------


def test_native_memories_of_both_formats_are_captured_committed_and_reprojected(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    older = OLDER.replace(b"[[feedback-testing]]", b"[[testing-policy]]")
    write_memory(mem, "feedback_testing.md", STAMPED)
    write_memory(mem, "project_freeze.md", older)
    before = head(git, project)
    result = okfgit("sync", cwd=project)
    assert result.out == "okfgit sync: captured 2, projected 4 files\n"
    assert git("rev-parse", "HEAD~1", cwd=project).out.strip() == before  # exactly one commit

    trailers = trailers_by_git(git, project)
    assert trailers[:4] == [("Okf-Operation", "capture"), ("Okf-Tool", trailers[1][1]),
                            ("Okf-Actor", "agent:claude-code"), ("Okf-Source", "claude-memory")]
    assert trailers[1][1].startswith("okfgit ")
    captured = {origin: (okf_id, oid) for okf_id, origin, oid in captured_trailers(git, project)}
    assert sorted(captured) == ["feedback_testing.md", "project_freeze.md"]
    assert git("log", "-1", "--format=%s", cwd=project).out == "okf: capture 2 facts from Claude Code memory\n"

    for origin, original, kb_path, native_type in (
        ("feedback_testing.md", STAMPED, ".okf/memory/testing-policy.md", "feedback"),
        ("project_freeze.md", older, ".okf/memory/release-freeze.md", "project"),
    ):
        okf_id, oid = captured[origin]
        assert UUID.match(okf_id)
        assert oid == git("hash-object", "--stdin", cwd=project, input=original.decode()).out.strip()
        committed = blob(git, project, f"HEAD:{kb_path}")
        meta, body = split(committed)
        old_meta, old_body = split(original)
        assert body == old_body  # every body byte
        if original is STAMPED:
            # Claude's shape unfolded once: its keys at the top, its stamps (node_type,
            # originSessionId, modified) not part of the concept
            assert "metadata" not in meta and not {"node_type", "originSessionId", "modified"} & set(meta)
            assert (meta["name"], meta["description"]) == (old_meta["name"], old_meta["description"])
        else:
            assert {k: meta[k] for k in old_meta} == old_meta  # every key the agent wrote, unchanged
            # the agent's frontmatter lines are all still there, in order, byte for byte
            assert committed.startswith(original[: original.index(b"\n---\n") + 1])
        assert meta["type"] == native_type
        assert meta["scope"] == "project"
        assert meta["okf_id"] == okf_id
        assert meta["okf_source"] == "claude-memory"
        assert meta["okf_origin"] == origin
        assert meta["generated"]["by"] == "agent:claude-code"
        assert meta["title"]
        # re-projected at the same path, in OKF form: the file is the blob at HEAD
        assert (mem / origin).read_bytes() == committed
    assert b"- [Testing Policy](testing-policy.md)" in blob(git, project, "HEAD:.okf/memory/index.md")
    memory_md = (mem / "MEMORY.md").read_text()
    assert "(feedback_testing.md)" in memory_md and "(project_freeze.md)" in memory_md
    # [[testing-policy]] still resolves (by name), and the tier is clean
    assert okfgit("doctor", "--scope", "project", cwd=project).code == 0
    fsck(git, project)


def test_capture_command_dry_run_writes_nothing_then_json(project: Path, mem: Path, okfgit: Runner,
                                                        git: Runner) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    before, files = head(git, project), mtimes(mem)
    dry = okfgit("capture", "--dry-run", cwd=project)
    assert dry.out.startswith("# commit in project (")
    assert "#   Okf-Source: claude-memory\n" in dry.out and "\n+++ b/project:memory/feedback-testing.md\n" in dry.out
    assert "\n+++ b/project:memory/index.md\n" in dry.out and "\n+++ b/project:index.md\n" in dry.out
    assert "would capture 1 file" in dry.out
    assert head(git, project) == before and mtimes(mem) == files
    done = json.loads(okfgit("capture", "--json", cwd=project).out)
    assert done["enabled"] is True
    assert [(c["action"], c["origin"], c["tier"], c["path"]) for c in done["captured"]] == [
        ("new", "feedback_testing.md", "project", "memory/feedback-testing.md")]
    assert done["commits"] == [{"tier": "project", "commit": head(git, project)}]
    # capture alone does not touch the agent's file; the next projection replaces it
    assert (mem / "feedback_testing.md").read_bytes() == CURRENT
    again = json.loads(okfgit("capture", "--json", cwd=project).out)
    assert again["captured"] == [] and again["unchanged"] == ["feedback_testing.md"]
    okfgit("project", cwd=project)
    assert (mem / "feedback_testing.md").read_bytes() == blob(git, project, "HEAD:.okf/memory/feedback-testing.md")


def test_memories_in_subfolders_and_taken_names(project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    write_memory(mem, "team/feedback_testing.md", CURRENT)
    write_memory(mem, "feedback_testing.md", CURRENT.replace(b"real database", b"real queue"))
    okfgit("sync", cwd=project)
    captured = {origin: okf_id for okf_id, origin, _ in captured_trailers(git, project)}
    assert sorted(captured) == ["feedback_testing.md", "team/feedback_testing.md"]
    assert captured["feedback_testing.md"] != captured["team/feedback_testing.md"]
    tree = git("ls-tree", "-r", "--name-only", "HEAD", ".okf/memory", cwd=project).out.split()
    assert tree == [".okf/memory/feedback-testing-2.md", ".okf/memory/feedback-testing.md", ".okf/memory/index.md"]
    for origin in captured:
        assert git("hash-object", str(mem / origin), cwd=project).out.strip() in (
            git("rev-parse", "HEAD:.okf/memory/feedback-testing.md", cwd=project).out.strip(),
            git("rev-parse", "HEAD:.okf/memory/feedback-testing-2.md", cwd=project).out.strip())


def test_slugs_keep_letters_of_any_script_and_titles_keep_a_names_words(project: Path, mem: Path, okfgit: Runner,
                                                                        git: Runner) -> None:
    write_memory(mem, "uni.md", b"---\nname: \xc3\x9cn\xc3\xafc\xc3\xb6d\xc3\xa9\xe5\x90\x8d\xe5\x89\x8d fact\n"
                                b"description: A fact with a name in two scripts\ntype: project\n---\nBody.\n")
    write_memory(mem, "dns.md", b"---\nname: flaky dns\ndescription: DNS in CI is flaky\ntype: project\n---\nB.\n")
    okfgit("sync", cwd=project)
    names = git("-c", "core.quotepath=off", "ls-tree", "-r", "--name-only", "HEAD", ".okf/memory", cwd=project).out
    assert ".okf/memory/\u00fcn\u00efc\u00f6d\u00e9\u540d\u524d-fact.md" in names.split("\n")
    meta, _ = split(blob(git, project, "HEAD:.okf/memory/flaky-dns.md"))
    assert meta["title"] == "flaky dns"
    uni, _ = split(blob(git, project, "HEAD:.okf/memory/\u00fcn\u00efc\u00f6d\u00e9\u540d\u524d-fact.md"))
    assert uni["title"] == "\u00dcn\u00efc\u00f6d\u00e9\u540d\u524d fact"
    assert okfgit("doctor", "--scope", "project", cwd=project).code == 0


def test_origin_with_a_space_is_escaped_in_the_trailer(project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    write_memory(mem, "my notes.md", OLDER)
    okfgit("sync", cwd=project)
    [[okf_id, origin, oid]] = captured_trailers(git, project)
    assert origin == "my%20notes.md"
    assert split(blob(git, project, "HEAD:.okf/memory/release-freeze.md"))[0]["okf_origin"] == "my notes.md"


def test_the_target_tier_is_the_job_when_a_run_is_active_and_to_overrides(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    write_memory(mem, "feedback_testing.md", CURRENT)
    job = project / "runstate" / "r1" / "okf"
    before = head(git, project)
    okfgit("sync", cwd=project)
    assert head(git, project) == before  # nothing in the project tier
    meta, _ = split(blob(git, job, "HEAD:memory/feedback-testing.md"))
    assert meta["scope"] == "job"
    assert ("Okf-Source", "claude-memory") in trailers_by_git(git, job)
    write_memory(mem, "project_freeze.md", OLDER)
    okfgit("capture", "--to", "project", cwd=project)
    assert split(blob(git, project, "HEAD:.okf/memory/release-freeze.md"))[0]["scope"] == "project"


# Where facts land without a project tier, and by memory type: tests/test_capture_routing.py


# -- edits of projected concepts ------------------------------------------------------------


def captured_once(project: Path, mem: Path, okfgit: Runner, git: Runner) -> tuple[Path, str]:
    """Capture CURRENT and project it back; (the agent's file, the concept's KB path)."""
    write_memory(mem, "feedback_testing.md", CURRENT)
    okfgit("sync", cwd=project)
    return mem / "feedback_testing.md", ".okf/memory/feedback-testing.md"


def test_an_agent_edit_updates_the_concept_when_the_kb_did_not_change(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, kb_path = captured_once(project, mem, okfgit, git)
    before = head(git, project)
    okf_id = split(file.read_bytes())[0]["okf_id"]
    edited = file.read_bytes().replace(b"must hit a real database", b"must hit a real PostgreSQL database")
    file.write_bytes(edited)
    result = okfgit("sync", cwd=project)
    assert result.out == "okfgit sync: captured 1\n"  # the file is already the concept: nothing projected
    assert git("rev-parse", "HEAD~1", cwd=project).out.strip() == before
    assert blob(git, project, f"HEAD:{kb_path}") == edited
    assert captured_trailers(git, project) == [[okf_id, "feedback_testing.md", hash_object(git, project, file)]]
    assert "- update: feedback_testing.md -> memory/feedback-testing.md" in git("log", "-1", "--format=%b",
                                                                                cwd=project).out
    assert file.read_bytes() == edited
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    assert git("rev-parse", "HEAD~1", cwd=project).out.strip() == before


def test_an_agent_edit_that_breaks_scope_or_type_is_repaired_in_the_commit(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, kb_path = captured_once(project, mem, okfgit, git)
    edited = file.read_bytes().replace(b"scope: project\n", b"scope: global\n").replace(
        b"type: feedback\ntitle", b"type: ''\ntitle")
    file.write_bytes(edited)
    okfgit("sync", cwd=project)
    meta, body = split(blob(git, project, f"HEAD:{kb_path}"))
    assert meta["scope"] == "project" and meta["type"] == "Note"
    assert body == split(CURRENT)[1]


def test_a_native_rewrite_of_a_captured_fact_updates_the_same_concept(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, kb_path = captured_once(project, mem, okfgit, git)
    okf_id = split(file.read_bytes())[0]["okf_id"]
    # Claude Code rewrites the whole file in its own format (our keys gone)
    rewritten = CURRENT.replace(b"never mocks", b"never mocks or fakes")
    file.write_bytes(rewritten)
    okfgit("sync", cwd=project)
    meta, body = split(blob(git, project, f"HEAD:{kb_path}"))
    assert meta["okf_id"] == okf_id and meta["description"].endswith("never mocks or fakes")
    assert meta["okf_origin"] == "feedback_testing.md"
    assert git("ls-tree", "--name-only", "HEAD", ".okf/memory/", cwd=project).out.split() == [
        ".okf/memory/feedback-testing.md", ".okf/memory/index.md"]
    assert file.read_bytes() == blob(git, project, f"HEAD:{kb_path}")


def test_a_native_file_saying_what_was_captured_is_not_captured_again(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, _ = captured_once(project, mem, okfgit, git)
    before = head(git, project)
    file.write_bytes(CURRENT)  # the agent writes the same fact again, in its own format
    report = json.loads(okfgit("capture", "--json", cwd=project).out)
    assert report["captured"] == [] and report["unchanged"] == ["feedback_testing.md"]
    assert head(git, project) == before
    # it says what the KB says, so it is okfgit's now: projection puts the OKF form back
    okfgit("sync", cwd=project)
    assert head(git, project) == before
    assert file.read_bytes() == blob(git, project, "HEAD:.okf/memory/feedback-testing.md")


def conflict_setup(project: Path, mem: Path, okfgit: Runner, git: Runner, agent_bytes: bytes | None = None
                   ) -> tuple[Path, bytes, bytes]:
    """The KB's concept and the agent's file both change; (file, master bytes, agent bytes)."""
    file, kb_path = captured_once(project, mem, okfgit, git)
    master = project / kb_path
    master.write_bytes(master.read_bytes().replace(b"must hit a real database", b"must hit a real PostgreSQL 16 database"))
    git("commit", "-q", "-am", "a person sharpens the testing rule", cwd=project)
    agent = agent_bytes if agent_bytes is not None else file.read_bytes().replace(b"hid a", b"once hid a")
    file.write_bytes(agent)
    return file, master.read_bytes(), agent


def test_a_concept_changed_on_both_sides_keeps_the_master_and_commits_a_sibling(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, master, agent = conflict_setup(project, mem, okfgit, git)
    before = head(git, project)
    result = okfgit("sync", cwd=project)
    assert result.out == ("okfgit sync: captured 1, 1 need a merge, projected 1 file, doctor: 1 error in "
                          "project (`okfgit doctor` lists them)\n")  # the sibling waits for a person
    assert ("okfgit: warning: feedback_testing.md: the concept changed on both sides: in the KB "
            "(project:memory/feedback-testing.md is no longer what okfgit projected here) and in Claude memory; kept "
            "the KB's version and committed the agent's as project:memory/feedback-testing.needs-merge.md "
            "(needs a person to merge)\n") in result.err
    assert git("rev-parse", "HEAD~1", cwd=project).out.strip() == before
    assert blob(git, project, "HEAD:.okf/memory/feedback-testing.md") == master
    assert blob(git, project, "HEAD:.okf/memory/feedback-testing.needs-merge.md") == agent
    assert b"needs-merge" not in blob(git, project, "HEAD:.okf/memory/index.md")
    assert "- conflict: feedback_testing.md -> memory/feedback-testing.needs-merge.md" in git(
        "log", "-1", "--format=%b", cwd=project).out
    # nothing lost: the agent's words are in the sibling, so its file now shows the master
    assert file.read_bytes() == master
    doctor = okfgit("doctor", "--scope", "project", cwd=project, expect=2)
    assert ("memory/feedback-testing.needs-merge.md: error: needs-merge: unresolved needs-merge sibling of "
            "memory/feedback-testing.md") in doctor.out
    assert "1 error, 0 warnings" in doctor.out
    again = okfgit("sync", cwd=project)
    assert again.out == "okfgit sync: up to date\n" and again.err == ""
    fsck(git, project)


def test_an_edited_copy_says_only_the_copy_changed(project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, _ = captured_once(project, mem, okfgit, git)
    write_memory(mem, "copy_of_testing.md", file.read_bytes().replace(b"hid a", b"once hid a"))
    result = okfgit("sync", cwd=project)
    assert (f"okfgit: warning: copy_of_testing.md: the agent edited a copy of project:memory/feedback-testing.md "
            "that okfgit never projected to this file, so it cannot tell which version the agent started from; "
            "kept the KB's version") in result.err
    assert "changed on both sides" not in result.err
    assert b"once hid a" in blob(git, project, "HEAD:.okf/memory/feedback-testing.needs-merge.md")


def test_a_second_conflict_joins_the_one_sibling(project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, _, _ = conflict_setup(project, mem, okfgit, git)
    okfgit("sync", cwd=project)
    first = blob(git, project, "HEAD:.okf/memory/feedback-testing.needs-merge.md")
    master = project / ".okf" / "memory" / "feedback-testing.md"
    master.write_bytes(master.read_bytes().replace(b"PostgreSQL 16", b"PostgreSQL 17"))
    git("commit", "-q", "-am", "again", cwd=project)
    file.write_bytes(file.read_bytes().replace(b"hid a", b"hid a second"))
    second = file.read_bytes()
    result = okfgit("sync", cwd=project)
    assert "committed the agent's as project:memory/feedback-testing.needs-merge.md" in result.err
    assert git("ls-tree", "--name-only", "HEAD", ".okf/memory/", cwd=project).out.split() == [
        ".okf/memory/feedback-testing.md", ".okf/memory/feedback-testing.needs-merge.md", ".okf/memory/index.md"]
    sibling = blob(git, project, "HEAD:.okf/memory/feedback-testing.needs-merge.md")
    assert sibling.startswith(first)  # the first variant, byte for byte, then the second, whole
    assert b"\n<!-- okf:needs-merge variant: Claude memory feedback_testing.md -->\n```markdown\n" in sibling
    assert b"hid a second" in sibling[len(first):] and split(second)[1] in sibling
    assert "1 variant" not in okfgit("status", cwd=project, expect=2).out
    assert "project:memory/feedback-testing.md: 2 variants in" in okfgit("status", cwd=project, expect=2).out
    doctor = okfgit("doctor", "--scope", "project", cwd=project, expect=2).out
    assert "1 error, 0 warnings" in doctor  # the sibling's needs-merge finding; no link inside the fence counts


def test_a_native_rewrite_against_a_changed_concept_is_a_conformant_sibling(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, master, _ = conflict_setup(project, mem, okfgit, git,
                                     agent_bytes=CURRENT.replace(b"never mocks", b"never mocks or fakes"))
    okf_id = split(master)[0]["okf_id"]
    okfgit("sync", cwd=project)
    sibling = blob(git, project, "HEAD:.okf/memory/feedback-testing.needs-merge.md")
    meta, body = split(sibling)
    assert meta["okf_id"] == okf_id and meta["type"] == "feedback" and meta["scope"] == "project"
    assert meta["description"].endswith("never mocks or fakes") and body == split(CURRENT)[1]
    doctor = okfgit("doctor", "--scope", "project", cwd=project, expect=2)
    assert "1 error, 0 warnings" in doctor.out and "needs-merge" in doctor.out


# -- deletions ------------------------------------------------------------------------------


def test_a_projected_file_the_agent_deleted_becomes_a_deprecation_proposal(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, kb_path = captured_once(project, mem, okfgit, git)
    before = head(git, project)
    other = write_memory(mem, "other.md", OLDER)  # the folder is not emptied: one file of it was deleted
    okfgit("sync", cwd=project)
    before = head(git, project)
    file.unlink()
    report = json.loads(okfgit("capture", "--dry-run", "--json", cwd=project).out)
    assert report["deleted"] == ["feedback_testing.md"]
    assert [(c["action"], c["path"]) for c in report["captured"]] == [("deprecate", kb_path[len(".okf/"):])]
    status = okfgit("status", cwd=project).out
    assert "  deprecate: feedback_testing.md -> project:memory/feedback-testing.md\n" in status
    assert ("projected files an agent deleted (not written back; sync proposes deprecating them): 1\n"
            "  feedback_testing.md\n") in status
    result = okfgit("sync", cwd=project)
    assert "feedback_testing.md: the agent deleted its memory file, saying project:memory/feedback-testing.md is " \
           "stale; proposed deprecated in the commit" in result.err
    # one commit, the agent's: the concept deprecated in place, the deletion named in a trailer
    assert git("rev-parse", "HEAD~1", cwd=project).out.strip() == before
    concept = okf.split(blob(git, project, f"HEAD:{kb_path}"), "c").meta
    assert concept["status"] == "deprecated"
    trailers = trailers_by_git(git, project)
    assert ("Okf-Actor", "agent:claude-code") in trailers
    assert [v for k, v in trailers if k == "Okf-Deleted"] == [f"{concept['okf_id']} feedback_testing.md"]
    # the agent's judgement holds: the file is not written back, now or by the next projection
    assert not file.exists() and other.exists()
    okfgit("project", cwd=project)
    okfgit("sync", cwd=project)
    assert not file.exists() and "feedback_testing" not in (mem / "MEMORY.md").read_text()
    assert json.loads(okfgit("status", "--json", cwd=project).out)["capture"]["deleted_by_agent"] == []
    # review sees it as any change: a modified concept, status added
    data = json.loads(okfgit("review", f"{before}..HEAD", "--format", "json", cwd=project).out)
    [change] = data["concepts"]
    assert change["change"] == "modified" and [f["key"] for f in change["fields"]] == ["status"]


def test_an_emptied_memory_folder_is_written_again_not_deprecated(project: Path, mem: Path, okfgit: Runner,
                                                                   git: Runner) -> None:
    file, kb_path = captured_once(project, mem, okfgit, git)
    before = head(git, project)
    for path in mem.iterdir():
        path.unlink()
    okfgit("sync", cwd=project)
    assert head(git, project) == before  # a new machine or a person's rm: no agent judged each fact
    assert file.read_bytes() == blob(git, project, f"HEAD:{kb_path}")


def test_a_deleted_file_of_a_verified_concept_is_a_proposal_a_person_settles(
        project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    file, kb_path = captured_once(project, mem, okfgit, git)
    path = project / kb_path
    path.write_bytes(okf.set_keys(path.read_bytes(), "c", {"verified": [{"by": "human:alice", "at": "2026-01-01"}]}))
    git("commit", "-qam", "alice verified it", cwd=project)
    write_memory(mem, "other.md", OLDER)
    okfgit("sync", cwd=project)
    before = head(git, project)
    (mem / "feedback_testing.md").unlink()
    result = okfgit("sync", cwd=project)
    sibling = kb_path[len(".okf/"):].replace(".md", ".needs-merge.md")
    assert f"so no agent deprecates it; the KB keeps it unchanged and the agent's version is committed as " \
           f"project:{sibling}" in result.err
    assert blob(git, project, f"HEAD:{kb_path}") == path.read_bytes() and "status" not in okf.split(
        path.read_bytes(), "c").meta
    assert not (mem / "feedback_testing.md").exists()  # not written back while a person decides
    assert "agent proposals waiting for a person: 1" in okfgit("status", cwd=project, expect=2).out
    okfgit("proposal", "accept", f"project:{sibling}", cwd=project)
    meta = okf.split(path.read_bytes(), "c").meta
    assert meta["status"] == "deprecated" and meta["verified"] == [{"by": "human:alice", "at": "2026-01-01"}]
    assert not (project / ".okf" / sibling).exists()
    assert git("rev-list", "--count", f"{before}..HEAD", cwd=project).out.strip() == "2"


# -- bad input ------------------------------------------------------------------------------


def bad_files(mem: Path, outside: Path) -> dict[str, str]:
    """Write every kind of unreadable memory file; name -> the expected reason's start."""
    outside.write_bytes(OLDER)
    write_memory(mem, "bad_yaml.md", b"---\nname: [unclosed\ndescription: x\n---\nbody\n")
    write_memory(mem, "latin1.md", b"---\nname: caf\xe9\ndescription: x\ntype: user\n---\nbody\n")
    write_memory(mem, "binary.md", b"---\nname: bin\n---\n\x00\x01\x02\xff")
    write_memory(mem, "huge.md", b"---\nname: huge\ntype: user\n---\n" + b"x" * (1024 * 1024 + 1))
    (mem / "escape.md").symlink_to(outside)
    write_memory(mem, "dotdot_name.md", b"---\nname: ../../etc/passwd\ndescription: x\ntype: user\n---\nbody\n")
    write_memory(mem, "nul_origin.md", b'---\nname: ok\nokf_origin: "a\\0b.md"\ntype: user\n---\nbody\n')
    write_memory(mem, "dotdot_origin.md", b"---\nname: ok2\nokf_origin: ../x.md\ntype: user\n---\nbody\n")
    write_memory(mem, "nul_name.md", b'---\nname: "ok\\0../x"\ntype: user\n---\nbody\n')
    return {
        "bad_yaml.md": "invalid YAML frontmatter (line 2): ",
        "latin1.md": "not UTF-8 (byte 13)",
        "binary.md": "binary file (contains NUL bytes)",
        "huge.md": "over 1 MiB (1048607 bytes); not a memory",
        "escape.md": "leaves the memory folder (",
        "dotdot_name.md": "frontmatter name '../../etc/passwd' tries to leave the memory folder",
        "nul_origin.md": "frontmatter okf_origin 'a\\x00b.md' tries to leave the memory folder",
        "dotdot_origin.md": "frontmatter okf_origin '../x.md' tries to leave the memory folder",
        "nul_name.md": "frontmatter name 'ok\\x00../x' tries to leave the memory folder",
    }


def test_bad_memory_files_are_skipped_named_untouched_and_listed(
        project: Path, mem: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    expected = bad_files(mem, tmp_path / "outside.md")
    write_memory(mem, "feedback_testing.md", CURRENT)
    names = sorted(expected)
    before = {n: ((mem / n).read_bytes() if not (mem / n).is_symlink() else os.readlink(mem / n),
                  (mem / n).lstat().st_mtime_ns) for n in names}
    outside_before = ((tmp_path / "outside.md").read_bytes(), (tmp_path / "outside.md").stat().st_mtime_ns)

    status = json.loads(okfgit("status", "--json", cwd=project, expect=2).out)
    unreadable = {u["origin"]: u["reason"] for u in status["capture"]["unreadable"]}
    assert sorted(unreadable) == names
    for name, reason in expected.items():
        assert unreadable[name].startswith(reason), (name, unreadable[name])
    text = okfgit("status", cwd=project, expect=2).out
    assert f"unreadable memory files (left untouched): {len(names)}\n" in text
    for name in names:
        assert f"\n  {name}: " in text

    result = okfgit("sync", cwd=project)
    assert result.out == f"okfgit sync: captured 1, {len(names)} memory files unreadable, projected 3 files\n"
    for name, reason in expected.items():
        assert f"okfgit: warning: skipped {mem / name}: {reason}" in result.err
    assert [o for _, o, _ in captured_trailers(git, project)] == ["feedback_testing.md"]
    after = {n: ((mem / n).read_bytes() if not (mem / n).is_symlink() else os.readlink(mem / n),
                 (mem / n).lstat().st_mtime_ns) for n in names}
    assert after == before
    assert ((tmp_path / "outside.md").read_bytes(), (tmp_path / "outside.md").stat().st_mtime_ns) == outside_before
    tree = git("ls-tree", "-r", "--name-only", "HEAD", ".okf", cwd=project).out.split()
    assert tree == [".okf/.gitattributes", ".okf/index.md", ".okf/memory/feedback-testing.md", ".okf/memory/index.md"]
    # skipped again, still untouched, and no commit
    top = head(git, project)
    okfgit("capture", cwd=project)
    assert head(git, project) == top
    assert after == {n: ((mem / n).read_bytes() if not (mem / n).is_symlink() else os.readlink(mem / n),
                         (mem / n).lstat().st_mtime_ns) for n in names}


def test_odd_entries_in_the_memory_folder_are_skipped(project: Path, mem: Path, okfgit: Runner, git: Runner,
                                                     tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    write_memory(outside, "secret.md", OLDER)
    (mem / "linked").symlink_to(outside, target_is_directory=True)
    os.mkfifo(mem / "pipe.md")
    write_memory(mem, "no_frontmatter.md", b"just some text\n")
    write_memory(mem, "notes.txt", b"not a memory\n")
    write_memory(mem, ".hidden.md", OLDER)
    write_memory(mem, "feedback_testing.md", CURRENT)
    result = okfgit("sync", cwd=project)
    status = json.loads(okfgit("status", "--json", cwd=project, expect=2).out)
    unreadable = {u["origin"]: u["reason"] for u in status["capture"]["unreadable"]}
    assert sorted(unreadable) == ["linked", "no_frontmatter.md", "pipe.md"]
    assert "not a regular file" in unreadable["pipe.md"]
    assert f"skipped {mem / 'linked'}: a symlinked folder" in result.err
    assert [o for _, o, _ in captured_trailers(git, project)] == ["feedback_testing.md"]
    assert (mem / "no_frontmatter.md").read_bytes() == b"just some text\n"


# -- the capture switch ----------------------------------------------------------------------


@pytest.mark.parametrize(("machine", "project_says", "captures", "reason"), [
    (None, None, True, "capture is on: git config okf.capture is not set (default on); the project has no "
                       ".okf/okfgit.toml at HEAD"),
    ("off", None, False, "capture is off: git config okf.capture is off"),
    (None, "off", False, 'capture is off: .okf/okfgit.toml at HEAD says capture = "off"'),
    ("off", "off", False, 'capture is off: .okf/okfgit.toml at HEAD says capture = "off"'),
    ("on", "off", False, 'capture is off: .okf/okfgit.toml at HEAD says capture = "off"'),
    ("on", "on", True, 'capture is on: git config okf.capture is on; .okf/okfgit.toml at HEAD says capture = "on"'),
])
def test_the_capture_switch_through_the_cli(project: Path, mem: Path, okfgit: Runner, git: Runner,
                                            machine: str | None, project_says: str | None, captures: bool,
                                            reason: str) -> None:
    if machine is not None:
        git("config", "okf.capture", machine, cwd=project)
    if project_says is not None:
        (project / ".okf" / "okfgit.toml").write_text(f'capture = "{project_says}"\n')
        git("add", ".okf/okfgit.toml", cwd=project)
        git("commit", "-q", "-m", "capture setting", cwd=project)
    write_memory(mem, "feedback_testing.md", CURRENT)
    status = okfgit("status", cwd=project).out
    assert f"\n{reason}\n" in status
    st = json.loads(okfgit("status", "--json", cwd=project).out)
    assert st["capture"]["enabled"] is captures and st["capture"]["reason"] == reason
    assert len(st["capture"]["pending"]) == 1  # shown either way: it is what sync would take
    if not captures:
        assert "captures pending: 1 (capture is off: sync will not take them)" in status
    before = head(git, project)
    result = okfgit("sync", cwd=project)
    assert (head(git, project) != before) is captures
    if captures:
        assert "captured 1" in result.out
    else:
        assert result.out.startswith("okfgit sync: capture off")
        assert (mem / "feedback_testing.md").read_bytes() == CURRENT  # the agent's file stays the agent's
        assert okfgit("capture", cwd=project).out == reason + "\n"
        assert head(git, project) == before


@pytest.mark.parametrize("content", [b'capture = "of"\n', b"captur = false\n", b"capture = [\n", b"\xff\n"])
def test_an_unreadable_project_setting_fails_closed(project: Path, mem: Path, okfgit: Runner, git: Runner,
                                                   content: bytes) -> None:
    git("config", "okf.capture", "on", cwd=project)
    (project / ".okf" / "okfgit.toml").write_bytes(content)
    git("add", ".okf/okfgit.toml", cwd=project)
    git("commit", "-q", "-m", "a broken setting", cwd=project)
    write_memory(mem, "feedback_testing.md", CURRENT)
    before = head(git, project)
    st = json.loads(okfgit("status", "--json", cwd=project).out)
    assert st["capture"]["enabled"] is False
    assert st["capture"]["reason"].startswith("capture is off: .okf/okfgit.toml at HEAD ")
    okfgit("sync", cwd=project)
    okfgit("capture", cwd=project)
    assert head(git, project) == before
    assert (mem / "feedback_testing.md").read_bytes() == CURRENT


def test_an_uncommitted_project_setting_fails_closed(project: Path, mem: Path, okfgit: Runner, git: Runner) -> None:
    (project / ".okf" / "okfgit.toml").write_text('capture = "on"\n')
    write_memory(mem, "feedback_testing.md", CURRENT)
    before = head(git, project)
    reason = json.loads(okfgit("status", "--json", cwd=project).out)["capture"]["reason"]
    assert reason == ("capture is off: .okf/okfgit.toml has uncommitted changes; capture stays off until they "
                      "are committed")
    okfgit("sync", cwd=project)
    assert head(git, project) == before


# -- findings of the review: forks, shared folders, unknown ids, hostile names ---------------


def test_native_rewrite_of_a_projected_authored_concept_updates_it(project: Path, okfgit: Runner, git: Runner,
                                                                   env: dict[str, str], home: Path) -> None:
    okfgit("new", "cache-policy", "--description", "We cache for a day.", "--no-edit", cwd=project)
    okfgit("project", cwd=project)
    mem = memory(project, env, home)
    okf_id = split((mem / "cache-policy.md").read_bytes())[0]["okf_id"]
    write_memory(mem, "cache-policy.md", b"---\nname: cache-policy\ndescription: We cache for an hour now.\n"
                                         b"metadata:\n  type: project\n---\nAn hour.\n")
    result = okfgit("sync", cwd=project)
    assert "captured 1" in result.out
    changed = git("show", "--name-only", "--format=", "HEAD", cwd=project).out.split()
    assert changed == [".okf/cache-policy.md", ".okf/index.md"]  # updated in place: no second concept
    meta, body = split(blob(git, project, "HEAD:.okf/cache-policy.md"))
    assert meta["okf_id"] == okf_id and meta["description"] == "We cache for an hour now." and body == b"An hour.\n"
    assert sorted(p.name for p in mem.glob("*.md")) == ["MEMORY.md", "cache-policy.md"]


def test_a_memory_folder_shared_by_every_project_is_never_captured(project: Path, okfgit: Runner, git: Runner,
                                                                   home: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared-memory"
    write_memory(shared, "secret-of-another-repo.md", CURRENT)
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"autoMemoryDirectory": str(shared)}))
    before = head(git, project)
    result = okfgit("capture", cwd=project)
    assert "capture is off" in result.out and "autoMemoryDirectory" in result.out
    assert head(git, project) == before
    status = json.loads(okfgit("status", "--json", cwd=project).out)
    assert status["capture"]["enabled"] is False and "autoMemoryDirectory" in status["capture"]["reason"]


def test_an_okf_id_no_tier_has_is_left_alone(project: Path, okfgit: Runner, git: Runner, env: dict[str, str],
                                             home: Path) -> None:
    mem = memory(project, env, home)
    foreign = (b"---\ntype: Note\ntitle: Elsewhere\ndescription: From another repository.\nscope: project\n"
               b"okf_id: 0b9a2f1e-1111-4222-8333-444455556666\nokf_source: authored\n---\nbody\n")
    path = write_memory(mem, "elsewhere.md", foreign)
    write_memory(mem, "feedback-testing.md", CURRENT)
    result = okfgit("capture", cwd=project)
    assert "captured 1 file" in result.out
    assert "elsewhere.md" in result.err and "which no tier here has" in result.err
    assert path.read_bytes() == foreign
    assert "elsewhere" not in git("show", "--name-only", "--format=", "HEAD", cwd=project).out


def test_a_file_name_with_a_newline_is_skipped_and_blocks_nothing(project: Path, okfgit: Runner, git: Runner,
                                                                  env: dict[str, str], home: Path) -> None:
    mem = memory(project, env, home)
    evil = write_memory(mem, "evil\nOkf-Operation: forged.md", CURRENT)
    write_memory(mem, "release freeze.md", OLDER)
    okfgit("capture", cwd=project)
    assert evil.read_bytes() == CURRENT
    trailers = trailers_by_git(git, project)
    assert ("Okf-Operation", "forged.md") not in trailers
    captured = [v for k, v in trailers if k == "Okf-Captured"]
    assert len(captured) == 1 and " release%20freeze.md " in captured[0]
