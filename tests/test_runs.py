from __future__ import annotations

import json
from pathlib import Path

import pytest

from okfgit.format import concept as okf
from okfgit.errors import UsageError
from okfgit.format.log_md import add_entry as add_log_entry
from tests.conftest import EPOCH, Runner, fsck, trailers_by_git

NEXT_DAY = str(int(EPOCH) + 86400)  # 2025-12-01


def _job(repo: Path, run: str = "r1") -> Path:
    return repo / "runstate" / run / "okf"


def _files(git: Runner, root: Path) -> list[str]:
    return git("ls-tree", "-r", "--name-only", "HEAD", cwd=root).out.split()


def test_run_start_scaffolds_one_commit_and_sets_the_active_run(project: Path, okfgit: Runner, git: Runner) -> None:
    result = okfgit("run", "start", "r1", "--task", "Make the cache faster.", cwd=project)
    job = _job(project)
    assert result.out.startswith(f"started run r1 at {job} (")
    assert git("config", "okf.run", cwd=project).out == "r1\n"
    assert "/runstate/\n" in (project / ".git" / "info" / "exclude").read_text()
    assert git("status", "--porcelain", cwd=project).out == ""
    assert git("rev-list", "--count", "HEAD", cwd=job).out == "1\n"
    assert _files(git, job) == ["STATE.md", "index.md", "log.md", "notes/index.md"]
    assert trailers_by_git(git, job) == [("Okf-Operation", "run"), ("Okf-Tool", "okfgit 0.1.0"),
                                         ("Okf-Actor", "human:author@example.com"), ("Okf-Run", "r1")]
    assert (job / "log.md").read_text() == "# Run r1 log\n\n## 2025-11-30\n- **Start**: run r1 started.\n"
    state = okf.split((job / "STATE.md").read_bytes(), "STATE.md")
    assert state.meta["type"] == "Run State" and state.meta["scope"] == "job"
    assert state.meta["description"] == "Make the cache faster."
    assert b"## Task\n\nMake the cache faster.\n" in state.body
    assert okfgit("doctor", "--scope", "job", cwd=project).code == 0
    assert okfgit("index", "--check", "--scope", "job", cwd=project).code == 0
    fsck(git, job)


def test_run_start_again_writes_nothing(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    okfgit("run", "end", cwd=project)
    head = git("rev-parse", "HEAD", cwd=_job(project)).out
    again = okfgit("run", "start", "r1", cwd=project)
    assert "already exists" in again.out and "active run again" in again.out
    assert git("rev-parse", "HEAD", cwd=_job(project)).out == head
    assert git("config", "okf.run", cwd=project).out == "r1\n"
    assert okfgit("run", "start", "../x", cwd=project, expect=2).err.startswith("okfgit: error: invalid run slug")


def test_note_is_one_commit_with_index_and_log(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    out = okfgit("note", "--type", "lesson", "Warm the cache first", "--claim", "Cold runs vary threefold.",
                 "--why", "The first run reads from disk.", "--evidence", "bench/cache.py", "--generalizes", "yes",
                 "--tag", "perf", cwd=project).out
    job = _job(project)
    assert out.startswith("noted job/r1:notes/warm-the-cache-first.md@")
    changed = git("show", "--name-only", "--format=", "HEAD", cwd=job).out.split()
    assert changed == ["index.md", "log.md", "notes/index.md", "notes/warm-the-cache-first.md"]
    trailers = trailers_by_git(git, job)
    assert trailers[0] == ("Okf-Operation", "note") and trailers[3][0] == "Okf-Id"
    assert trailers[2] == ("Okf-Actor", "human:author@example.com")
    data = (job / "notes" / "warm-the-cache-first.md").read_bytes()
    meta = okf.split(data, "n").meta
    assert meta["okf_id"] == trailers[3][1]
    assert meta["generated"]["by"] == "human:author@example.com"
    assert {k: meta[k] for k in ("type", "title", "description", "tags", "scope", "generalizes")} == {
        "type": "Lesson", "title": "Warm the cache first", "description": "Cold runs vary threefold.",
        "tags": ["perf"], "scope": "job", "generalizes": "yes"}
    assert okf.split(data, "n").body == (b"\n# Warm the cache first\n\nCold runs vary threefold.\n\n## Why\n\n"
                                         b"The first run reads from disk.\n\n## Evidence\n\nbench/cache.py\n")
    log = (job / "log.md").read_text()
    assert log.split("\n")[3] == ("- **Lesson**: [Warm the cache first](notes/warm-the-cache-first.md): "
                                  "Cold runs vary threefold.")
    assert "- [Warm the cache first](warm-the-cache-first.md) \u2014 Cold runs vary threefold.\n" in \
        (job / "notes" / "index.md").read_text()
    assert okfgit("doctor", "--scope", "job", cwd=project).code == 0
    fsck(git, job)


def test_note_bad_input(project: Path, okfgit: Runner) -> None:
    assert "no active run" in okfgit("note", "--type", "Lesson", "x", cwd=project, expect=2).err
    okfgit("run", "start", "r1", cwd=project)
    err = okfgit("note", "--type", "Idea", "x", cwd=project, expect=2).err
    assert err == ("okfgit: error: unknown note type 'Idea': use one of Decision, Rejected, Discovery, Limitation, "
                   "Conclusion, Lesson, Blocker\n")
    assert "--generalizes must be one of yes, no, unsure" in \
        okfgit("note", "--type", "Lesson", "x", "--generalizes", "maybe", cwd=project, expect=2).err
    okfgit("note", "--type", "Lesson", "Same title", cwd=project)
    assert "already exists" in okfgit("note", "--type", "Lesson", "Same title", cwd=project, expect=2).err
    assert "no run 'r9' in " in okfgit("note", "--type", "Lesson", "x", "--run", "r9", cwd=project,
                                                     expect=2).err


def test_log_adds_newest_first_and_never_edits_past_entries(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    okfgit("log", "Tried lru_cache; no gain.", cwd=project)
    job = _job(project)
    before = (job / "log.md").read_text()
    assert before == "# Run r1 log\n\n## 2025-11-30\n- Tried lru_cache; no gain.\n- **Start**: run r1 started.\n"
    okfgit("log", "Switched", "to", "redis.", cwd=project, extra_env={"SOURCE_DATE_EPOCH": NEXT_DAY})
    after = (job / "log.md").read_text()
    assert after == "# Run r1 log\n\n## 2025-12-01\n- Switched to redis.\n\n" + before[len("# Run r1 log\n\n"):]
    assert trailers_by_git(git, job)[0] == ("Okf-Operation", "log")
    assert git("log", "-1", "--format=%s", cwd=job).out == "okf: log Switched to redis.\n"
    assert okfgit("doctor", "--scope", "job", cwd=project).code == 0


def test_add_log_entry_only_inserts_bytes() -> None:
    hand = b"# Log\n\nSome intro.\n\n## 2025-11-30\n\n* old entry\n  continued\n\n## 2025-11-01\n* older\n"
    same_day = add_log_entry(hand, "2025-11-30", "new", "# Log")
    assert same_day == hand.replace(b"* old entry", b"- new\n* old entry")
    new_day = add_log_entry(hand, "2025-12-02", "new", "# Log")
    assert new_day == hand.replace(b"## 2025-11-30", b"## 2025-12-02\n- new\n\n## 2025-11-30")
    # a clock behind the newest group: the group goes where date order puts it
    between = add_log_entry(hand, "2025-11-15", "late", "# Log")
    assert between == hand.replace(b"## 2025-11-01", b"## 2025-11-15\n- late\n\n## 2025-11-01")
    assert add_log_entry(b"# Log", "2025-11-30", "x", "# Log") == b"# Log\n\n## 2025-11-30\n- x\n"
    crlf = add_log_entry(b"# Log\r\n\r\n## 2025-11-30\r\n- a\r\n", "2025-11-30", "b", "# Log")
    assert crlf == b"# Log\r\n\r\n## 2025-11-30\r\n- b\r\n- a\r\n"
    assert add_log_entry(None, "2025-11-30", "first\nline", "# T") == b"# T\n\n## 2025-11-30\n- first line\n"
    with pytest.raises(UsageError):
        add_log_entry(hand, "2025-11-30", "  ", "# Log")


def test_status_and_end(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    okfgit("note", "--type", "Lesson", "Keep", "--generalizes", "yes", cwd=project)
    okfgit("note", "--type", "Blocker", "Local only", "--generalizes", "no", cwd=project)
    okfgit("note", "--type", "Discovery", "Maybe", cwd=project)
    status = json.loads(okfgit("run", "status", "--json", cwd=project).out)
    assert status["active"] is True
    assert [(c["path"], c["generalizes"], c["promotable"]) for c in status["concepts"]] == [
        ("STATE.md", "unsure", False), ("notes/keep.md", "yes", True), ("notes/local-only.md", "no", False),
        ("notes/maybe.md", "unsure", True)]
    text = okfgit("run", "status", cwd=project).out
    assert "  promotable  job/r1:notes/keep.md@" in text and "  stays       job/r1:STATE.md@" in text
    ended = okfgit("run", "end", cwd=project).out.split("\n")
    assert ended[0] == "ended run r1"
    assert ended[1] == "not promoted (2); promote with `okfgit promote REF --from job --to project --run r1`:"
    assert ended[2].startswith("  job/r1:notes/keep.md@") and ended[3].startswith("  job/r1:notes/maybe.md@")
    assert git("config", "okf.run", cwd=project, expect=1).out == ""
    assert _job(project).is_dir()  # the run's history stays
    assert "no active run" in okfgit("run", "end", cwd=project, expect=2).err
    env_run = okfgit("run", "end", cwd=project, extra_env={"OKF_RUN": "r1"}).out
    assert "still selected by $OKF_RUN" in env_run


def test_dry_runs_write_nothing(project: Path, okfgit: Runner, git: Runner) -> None:
    shown = okfgit("run", "start", "r1", "--dry-run", cwd=project).out
    assert "# commit in job/r1" in shown and "+++ b/job/r1:STATE.md" in shown
    assert not (project / "runstate").exists()
    okfgit("run", "start", "r1", cwd=project)
    head = git("rev-parse", "HEAD", cwd=_job(project)).out
    assert "+++ b/job/r1:notes/x.md" in okfgit("note", "--type", "Lesson", "x", "--dry-run", cwd=project).out
    assert "\n+- hello\n" in okfgit("log", "hello", "--dry-run", cwd=project).out
    assert git("rev-parse", "HEAD", cwd=_job(project)).out == head


def test_state_is_authored_by_the_configured_user(project: Path, okfgit: Runner, git: Runner) -> None:
    git("config", "user.email", "carol@example.com", cwd=project)
    okfgit("run", "start", "r9", cwd=project, extra_env={"GIT_AUTHOR_EMAIL": "", "GIT_AUTHOR_NAME": ""})
    state = (project / "runstate" / "r9" / "okf" / "STATE.md").read_text()
    assert "generated: {by: 'human:carol@example.com'" in state or "by: human:carol@example.com" in state, state


@pytest.mark.parametrize("verb", [("project",), ("sync",), ("status",), ("capture",), ("doctor",)])
def test_an_unknown_run_is_a_usage_error_naming_the_runs(verb: tuple[str, ...], project: Path, okfgit: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    okfgit("run", "start", "r2", cwd=project)
    result = okfgit(*verb, "--run", "nosuch", cwd=project, expect=2)
    assert "no run 'nosuch'" in result.err and "the runs here: r1, r2" in result.err


def test_a_note_cites_what_it_bears_on(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "use-postgres", "--type", "Decision", "--dir", "decisions", "--title", "Use Postgres",
           "--description", "All state in one Postgres cluster.", "--no-edit", cwd=project)
    okfgit("run", "start", "r1", cwd=project)
    okfgit("note", "--type", "Discovery", "Postgres cannot hold the event log", "--cites", "use-postgres",
           "--relation", "Contradicts", "--generalizes", "yes", cwd=project)
    note = (project / "runstate" / "r1" / "okf" / "notes" / "postgres-cannot-hold-the-event-log.md").read_text()
    oid = git("rev-parse", "--short=7", "HEAD:.okf/decisions/use-postgres.md", cwd=project).out.strip()
    assert f"ref: project:decisions/use-postgres.md@{oid}" in note and "relation: contradicts" in note
    assert "--cites and --relation go together" in okfgit("note", "--type", "Lesson", "X", "--cites", "use-postgres",
                                                           cwd=project, expect=2).err
    assert "--relation must be one of confirms, refines, contradicts" in okfgit(
        "note", "--type", "Lesson", "X", "--cites", "use-postgres", "--relation", "agrees", cwd=project, expect=2).err
    assert "--cites 'nothing-here' names no concept" in okfgit(
        "note", "--type", "Lesson", "X", "--cites", "nothing-here", "--relation", "refines", cwd=project, expect=2).err


def test_state_rewrites_state_md_as_one_commit(project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    okfgit("run", "start", "r1", "--task", "Make the cache faster.", cwd=project)
    job = _job(project)
    before = (job / "STATE.md").read_text()
    head = git("rev-parse", "HEAD", cwd=job).out.strip()
    out = okfgit("state", "--where", "Cold start measured.", "--next", "Warm it in CI", "--next", "Measure again",
                 "--question", "Does CI cache survive?", cwd=project).out
    assert out.startswith("rewrote job/r1:STATE.md (")
    assert git("rev-parse", "HEAD~1", cwd=job).out.strip() == head
    assert git("diff", "--name-only", "HEAD~1", "HEAD", cwd=job).out == "STATE.md\n"
    assert trailers_by_git(git, job) == [("Okf-Operation", "state"), ("Okf-Tool", "okfgit 0.1.0"),
                                         ("Okf-Actor", "human:author@example.com"), ("Okf-Run", "r1")]
    after = (job / "STATE.md").read_text()
    # the frontmatter and the title stay byte for byte; the sections given are replaced, the task kept
    assert after.split("## Task", 1)[0] == before.split("## Task", 1)[0]
    assert after.split("## Task", 1)[1] == (
        "\n\nMake the cache faster.\n\n## Where it stands\n\nCold start measured.\n\n"
        "## Next steps\n\n- Warm it in CI\n- Measure again\n\n## Open questions\n\n- Does CI cache survive?\n")
    # a new task moves the description with it; a section a person added is kept
    okfgit("state", "--task", "Make the cache twice as fast. Then document it.", cwd=project)
    state = okf.split((job / "STATE.md").read_bytes(), "STATE.md")
    assert state.meta["description"] == "Make the cache twice as fast."
    # saying the same again commits nothing; saying nothing is a usage error
    again = okfgit("state", "--task", "Make the cache twice as fast. Then document it.", cwd=project).out
    assert "already says that; nothing to commit" in again
    assert "nothing to write" in okfgit("state", cwd=project, expect=2).err
    body = tmp_path / "body.md"
    body.write_text("# Run r1 state\n\n## Task\n\nShip it.\n\n## Notes from the pairing session\n\nKeep this.\n")
    okfgit("state", "--body", str(body), cwd=project)
    assert (job / "STATE.md").read_text().endswith("\n\n# Run r1 state\n\n## Task\n\nShip it.\n\n"
                                                    "## Notes from the pairing session\n\nKeep this.\n")
    okfgit("state", "--where", "Shipped.", cwd=project)
    assert "## Notes from the pairing session\n\nKeep this.\n" in (job / "STATE.md").read_text()
    # a body that is no text is refused by name, and nothing changes
    kept, head = (job / "STATE.md").read_bytes(), git("rev-parse", "HEAD", cwd=job).out
    for data, why in ((b"Caf\xe9\n", "is not UTF-8 text (byte 3)"), (b"a\0b", "is binary")):
        body.write_bytes(data)
        assert f"{body} {why}" in okfgit("state", "--body", str(body), cwd=project, expect=2).err
    # nor is a STATE.md okfgit could not read back (over 1 MiB)
    body.write_text("x" * (1 << 20))
    refused = okfgit("state", "--body", str(body), cwd=project, expect=2).err
    assert "job/r1:STATE.md: file is over 1 MiB" in refused and refused.endswith("; nothing was written\n")
    assert (job / "STATE.md").read_bytes() == kept and git("rev-parse", "HEAD", cwd=job).out == head
    assert okfgit("doctor", "--scope", "job", cwd=project).code == 0
    fsck(git, job)


def test_an_edit_in_the_run_is_shown_then_committed_by_sync_as_the_agents(project: Path, okfgit: Runner,
                                                                          git: Runner) -> None:
    okfgit("run", "start", "r1", "--task", "Make the cache faster.", cwd=project)
    job = _job(project)
    okfgit("sync", cwd=project)
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    head = git("rev-parse", "HEAD", cwd=job).out.strip()
    # an agent edits STATE.md in place and writes a note by hand; a person edits the log
    state = job / "STATE.md"
    state.write_text(state.read_text().replace("Started on", "Cache warmed; started on"))
    note = ("---\ntype: Lesson\ntitle: Warm first\ndescription: Warm the cache before timing.\nscope: job\n"
            "okf_id: 12345678-1234-4123-8123-123456789abc\nokf_source: authored\n---\n\nWarm it.\n")
    (job / "notes" / "warm-first.md").write_text(note)
    (job / "log.md").write_text((job / "log.md").read_text().replace("started.", "began."))
    status = okfgit("status", cwd=project, expect=2)
    assert "run r1: edits sync commits (as agent:claude-code): 2\n  modified: STATE.md\n  added: notes/warm-first.md\n" \
        in status.out
    assert "run r1: edits waiting for a person: 1\n  modified: log.md: log.md is append-only" in status.out
    data = json.loads(okfgit("status", "--json", cwd=project, expect=2).out)["run_edits"]
    assert data["commit"] == [{"path": "STATE.md", "change": "modified"}, {"path": "notes/warm-first.md",
                                                                            "change": "added"}]
    # the next `okfgit sync` commits the two, as the agent's, with the note's index; the log waits
    out = okfgit("sync", cwd=project)
    assert "committed 2 edited run files, 1 run file waiting for a person" in out.out
    assert "job/r1:log.md (modified) waits for a person" in out.err
    assert git("rev-parse", "HEAD~1", cwd=job).out.strip() == head
    assert git("diff", "--name-only", "HEAD~1", "HEAD", cwd=job).out.split() == [
        "STATE.md", "index.md", "notes/index.md", "notes/warm-first.md"]
    assert ("Okf-Actor", "agent:claude-code") in trailers_by_git(git, job)
    assert git("status", "--porcelain", cwd=job).out == " M log.md\n"  # still the person's to decide
    okfgit("sync", cwd=project)
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    # an in-place edit after that is seen by the next sync, not stamped away as up to date
    state.write_text(state.read_text().replace("Cache warmed", "Cache warmed twice"))
    assert "committed 1 edited run file," in okfgit("sync", cwd=project).out
    fsck(git, job)
