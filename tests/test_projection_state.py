"""The projection state API that capture and sync rely on, and the protocol text's one source."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from okfgit.local import state
from okfgit.errors import IntegrityError
from okfgit.flows.projection import nav_protocol
from tests.conftest import Runner
from tests.test_projection import Kit, build_kit, project

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def kit(home: Path, repo: Path, git: Runner) -> Kit:
    return build_kit(home, repo, git)


def test_missing_state_owns_nothing(tmp_path: Path) -> None:
    st = state.load(tmp_path)
    assert st.memory_files == {} and st.targets == {} and st.memory_dir is None and st.warnings == []
    assert not st.wrote("x.md", "0" * 40)


def test_round_trip(tmp_path: Path) -> None:
    st = state.State(tmp_path, memory_dir=tmp_path / "mem", memory_dir_mtime_ns=5)
    st.inputs["project"] = state.TierInput("/r", "c" * 40, "t" * 40)
    st.targets[str(tmp_path / "CLAUDE.md")] = state.FileRecord("a" * 40, 10, 11)
    st.memory_files["x.md"] = state.MemoryFile("id", "project", "d/x.md", "b" * 40, 3, 4)
    state.save(st)
    again = state.load(tmp_path)
    assert again.to_json() == st.to_json()
    assert again.wrote("x.md", "b" * 40) and again.wrote(tmp_path / "mem" / "x.md", "b" * 40)
    assert not again.wrote("x.md", "a" * 40)
    assert again.wrote(tmp_path / "CLAUDE.md", "a" * 40)
    assert again.memory_file(tmp_path / "mem" / "x.md") == st.memory_files["x.md"]
    assert again.memory_files["x.md"].get("oid") == "b" * 40  # mapping-style access works too
    assert again.projected("id") == [("x.md", st.memory_files["x.md"])]


def test_damaged_state_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "okf").mkdir()
    (tmp_path / "okf" / "state.json").write_text('{"version": 1, "memory_files": {"x.md": {}}}')
    st = state.load(tmp_path)
    assert st.memory_files == {} and "is damaged" in st.warnings[0]


def test_newer_state_is_refused(tmp_path: Path) -> None:
    (tmp_path / "okf").mkdir()
    (tmp_path / "okf" / "state.json").write_text('{"version": 99}')
    with pytest.raises(IntegrityError, match="newer okfgit"):
        state.load(tmp_path)


def test_state_after_projection_and_from_a_worktree(kit: Kit, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    project(okfgit, kit)
    st = state.load(kit.repo / ".git")
    assert st.memory_dir == kit.memory
    oid = git("hash-object", str(kit.memory / "feedback_prefer_rg.md"), cwd=kit.repo).out.strip()
    assert st.wrote("feedback_prefer_rg.md", oid)
    record = st.memory_files["feedback_prefer_rg.md"]
    assert (record.okf_id, record.tier, record.path) == ("0f0f0000-0000-4000-8000-0000000000f1", "project",
                                                        "feedback/prefer-rg.md")
    assert record.citation == f"project:feedback/prefer-rg.md@{oid[:7]}"
    assert st.wrote(kit.agents_md, git("hash-object", str(kit.agents_md), cwd=kit.repo).out.strip())
    assert st.targets[str(kit.memory / "MEMORY.md")].size == (kit.memory / "MEMORY.md").stat().st_size
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "wt", str(worktree), cwd=kit.repo)
    linked = git("rev-parse", "--git-dir", cwd=worktree).out.strip()
    assert state.load(Path(linked)).memory_files == st.memory_files


def test_adopt_hands_a_file_to_projection(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    agent = kit.memory / "unicode.md"
    agent.write_text("an agent's version, now committed by capture\n")
    agent_oid = git("hash-object", str(agent), cwd=kit.repo).out.strip()
    st = state.load(kit.repo / ".git")
    assert st.inputs  # the folder is the projection of these inputs
    st.adopt({"unicode.md": agent_oid})
    assert st.wrote("unicode.md", agent_oid) and st.inputs == {}  # ... and no longer is
    state.save(st)
    assert state.load(kit.repo / ".git").wrote("unicode.md", agent_oid)
    path = kit.repo / ".okf" / "decisions" / "unicode.md"
    path.write_text(path.read_text() + "Captured.\n")
    git("commit", "-q", "-am", "capture", cwd=kit.repo)
    project(okfgit, kit)
    assert agent.read_bytes() == path.read_bytes()


def test_the_record_is_what_the_spec_describes(kit: Kit, okfgit: Runner) -> None:
    project(okfgit, kit)
    db = sqlite3.connect(kit.state)
    assert db.execute("PRAGMA user_version").fetchone() == (2,)
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables - {"lookup_words_" + part for part in ("idx", "data", "config", "docsize")} == {
        "meta", "targets", "memory_files", "catalogs", "facts", "records", "lookup", "lookup_words"}  # the store's
    meta = {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM meta")}
    assert sorted(meta) == ["declined", "inputs", "memory_dir", "memory_dir_mtime_ns", "merged", "recall", "rendered",
                            "stale_at",
                            "tool"]
    assert meta["merged"]["skipped"] == ["project:broken.md", "global:legacy-note.md"]
    assert any("okf_origin '../escape.md'" in w for w in meta["merged"]["warnings"])
    assert meta["merged"]["needs_merge"] == []
    limit, source, held, total = meta["merged"]["held"]  # the memory folder's budget held them all
    assert (limit, source, held) == (10_000, "the default", total)
    assert len(meta["recall"]) == 3 and isinstance(meta["recall"][2], int)  # [top, generation, fresh]
    row = db.execute("SELECT okf_id, tier, path, oid, size, mtime_ns, since, written FROM memory_files "
                     "WHERE name = 'testing.md'").fetchone()
    okf_id, tier, path, oid, size, mtime_ns, _, written = row
    assert (okf_id, tier, path, written) == ("11111111-2222-4333-8444-555555555555", "project", "testing.md", "")
    assert size == (kit.memory / "testing.md").stat().st_size
    assert mtime_ns == (kit.memory / "testing.md").stat().st_mtime_ns
    assert len(oid) == 40
    oid, size, mtime_ns = db.execute("SELECT oid, size, mtime_ns FROM targets WHERE path = ?",
                                     (str(kit.agents_md),)).fetchone()
    assert size == kit.agents_md.stat().st_size and mtime_ns == kit.agents_md.stat().st_mtime_ns


def test_a_state_json_of_an_earlier_okfgit_is_read_then_replaced(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    before = state.load(kit.repo / ".git").to_json()
    legacy = kit.repo / ".git" / "okf" / "state.json"
    legacy.write_text(json.dumps({**before, "version": 1}))
    kit.state.unlink()
    read = state.load(kit.repo / ".git")
    assert read.to_json() == before and read.wrote("testing.md", before["memory_files"]["testing.md"][3])
    path = kit.repo / ".okf" / "testing.md"
    path.write_text(path.read_text() + "More.\n")
    git("commit", "-q", "-am", "more", cwd=kit.repo)
    project(okfgit, kit)  # the record okfgit owned is honoured, and saved as the database
    assert (kit.memory / "testing.md").read_bytes() == path.read_bytes()
    assert kit.state.exists() and not legacy.exists()


def test_a_state_json_is_read_when_the_store_holds_only_facts(kit: Kit, okfgit: Runner, git: Runner) -> None:
    """After an upgrade a read verb may write facts into a new ``state.db`` before any projection:
    the record of an earlier okfgit is still the one in ``state.json``."""
    project(okfgit, kit)
    before = state.load(kit.repo / ".git").to_json()
    legacy = kit.repo / ".git" / "okf" / "state.json"
    legacy.write_text(json.dumps({**before, "version": 1}))
    kit.state.unlink()
    okfgit("search", "testing", cwd=kit.repo)  # facts only
    assert kit.state.exists() and state.load(kit.repo / ".git").to_json() == before
    (kit.memory / "testing.md").write_text("an agent's edit\n")  # not okfgit's any more: kept
    path = kit.repo / ".okf" / "testing.md"
    path.write_text(path.read_text() + "More.\n")
    git("commit", "-q", "-am", "more", cwd=kit.repo)
    project(okfgit, kit)
    assert (kit.memory / "testing.md").read_text() == "an agent's edit\n" and not legacy.exists()


def test_a_newer_database_is_refused_and_a_change_writes_only_its_rows(kit: Kit, okfgit: Runner,
                                                                       git: Runner) -> None:
    project(okfgit, kit)
    st = state.load(kit.repo / ".git")
    assert st.memory_files.get("testing.md") is not None and st.memory_files._all is None  # one row read
    changed = st.derive()
    rec = changed.memory_files["testing.md"]
    changed.memory_files["testing.md"] = rec._replace(size=rec.size + 1)
    del changed.memory_files["style.md"]
    assert changed.memory_files.changes() == {"testing.md": rec._replace(size=rec.size + 1), "style.md": None}
    assert state.save(changed) and not state.save(changed)  # the second has nothing to write
    again = state.load(kit.repo / ".git")
    assert again.memory_files["testing.md"].size == rec.size + 1 and "style.md" not in again.memory_files
    assert {n: r for n, r in again.memory_files.items() if n not in ("testing.md", "style.md")} == \
        {n: r for n, r in st.memory_files.items() if n not in ("testing.md", "style.md")}
    db = sqlite3.connect(kit.state)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(IntegrityError, match="newer okfgit"):
        state.load(kit.repo / ".git")



def test_nav_protocol_is_the_spec_text_verbatim() -> None:
    spec = (ROOT / "spec" / "okf-nav-protocol.md").read_text(encoding="utf-8")
    assert nav_protocol() == spec
    assert (ROOT / "okfgit" / "data" / "nav-protocol.md").read_bytes() == (ROOT / "spec" / "okf-nav-protocol.md").read_bytes()
    assert len(spec.encode("utf-8")) < 4096  # Codex loads at most 32 KiB of AGENTS.md in total
