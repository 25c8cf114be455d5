"""The recall rule (okfgit.targets.recall): ranking, file times and the 30-line read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from okfgit.targets import recall
from okfgit.format.concept import key_lines as recall_lines
from okfgit.targets.recall import Candidate
from tests.test_local_store import forget_facts, kinds


def cand(name: str, *, tier: int = 1, captured: bool = False, verified: bool = False, type_: str = "Reference",
         deprecated: bool = False, since: int = 0) -> Candidate:
    return Candidate(name, tier, f"kb/{name}", captured, verified, type_, deprecated, since)


def test_rank_order_fresh_verified_types_rest_deprecated() -> None:
    pool = [cand("old-dep.md", deprecated=True), cand("plain.md"), cand("decision.md", type_="Decision"),
            cand("verified.md", verified=True), cand("captured.md", captured=True),
            cand("changed.md", since=2), cand("changed-dep.md", since=3, deprecated=True),
            cand("job.md", tier=0)]
    assert recall.rank(pool) == [
        "changed.md", "captured.md", "verified.md", "decision.md", "job.md", "plain.md", "changed-dep.md",
        "old-dep.md"]


def test_fresh_slots_are_capped() -> None:
    pool = [cand(f"c{i:03}.md", captured=True, since=1 + i) for i in range(150)] + [cand("v.md", verified=True)]
    order = recall.rank(pool, baseline=0)
    assert order[:recall.FRESH_LIMIT] == [f"c{i:03}.md" for i in range(149, 149 - recall.FRESH_LIMIT, -1)]
    assert order[recall.FRESH_LIMIT] == "v.md"


def test_mtimes_top_distinct_rest_one_older_time() -> None:
    order = [f"f{i}.md" for i in range(250)]
    times = recall.mtimes(order, top_anchor_s=10_000_000)
    top = [times[n] for n in order[:200]]
    assert top == sorted(top, reverse=True) and len(set(top)) == 200
    assert {times[n] for n in order[200:]} == {(10_000_000 - 200 - 86_400) * 10**9}
    assert max(times[n] for n in order[200:]) < min(top)
    assert not recall.needs_restamp(order, times, 10_000_000)
    assert recall.needs_restamp(order[::-1], times, 10_000_000)


def test_mtimes_rest_files_already_older_keep_their_time() -> None:
    order = [f"f{i}.md" for i in range(250)]
    before = recall.mtimes(order, top_anchor_s=10_000_000)
    moved = [order[-1], *order[:-1]]  # a changed file goes to the top; the 200th drops to the rest
    after = recall.mtimes(moved, top_anchor_s=10_000_050, recorded=before)
    rest = (10_000_050 - 200 - 86_400) * 10**9
    assert after[order[199]] == rest  # it left the top: it gets the rest time
    assert all(after[n] == before[n] for n in order[200:-1])  # already older than the top: untouched
    assert max(after[n] for n in moved[200:]) < min(after[n] for n in moved[:200])
    assert not recall.needs_restamp(moved, after, 10_000_050)


LONG = b"---\ntitle: A\n" + b"".join(b"k%02d: v\n" % i for i in range(40)) + \
    b"type: Decision\ndescription: Why it is so.\ntags:\n- a\n- b\n---\nBody line.\n"


def test_keys_after_line_30_move_to_the_top_and_nothing_else_changes() -> None:
    assert max(recall_lines(LONG).values()) > recall.SCAN_LINES
    out = recall.within_scan(LONG)
    assert out is not None
    assert recall_lines(out) == {"description": 2, "type": 3}
    assert out.endswith(b"---\nBody line.\n")
    assert sorted(out.split(b"\n")) == sorted(LONG.split(b"\n"))


def test_keys_within_the_read_are_left_alone() -> None:
    assert recall.within_scan(b"---\ntype: Lesson\ndescription: d\n---\nbody\n") is None
    assert recall.within_scan(b"no frontmatter\n") is None


def test_claude_candidates_is_newest_200_without_memory_md(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for i in range(210):
        path = tmp_path / ("sub" if i % 2 else "") / f"m{i:03}.md"
        path.write_text("x\n")
        import os
        os.utime(path, ns=(i * 10**9, i * 10**9))
    (tmp_path / "MEMORY.md").write_text("index\n")
    (tmp_path / "notes.txt").write_text("not md\n")
    found = recall.claude_candidates(tmp_path)
    assert len(found) == 200
    assert found[0].name == "m209.md" and found[-1].name == "m010.md"
    assert all(p.name != "MEMORY.md" for p in found)


@pytest.mark.parametrize("data", [LONG.replace(b"type: Decision", b"type: &t Decision")])
def test_a_reorder_that_would_change_meaning_is_not_made(data: bytes) -> None:
    # an anchor moved after its alias would not parse the same; the original is projected instead
    aliased = data.replace(b"k00: v", b"k00: *t")
    assert recall.within_scan(aliased) is None


# -- end to end: what Claude Code itself would list ------------------------------------------

BENCH = Path(__file__).resolve().parent.parent / "bench"


def claude_would_recall(folder: Path) -> list[Path]:
    """The memory folder listed exactly as Claude Code 2.1 does, independently of okfgit:
    recursive *.md without MEMORY.md, newest 200 by modification time."""
    files = [p for p in folder.rglob("*.md") if p != folder / "MEMORY.md"]
    files.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
    return files[:200]


def first_30_lines_say(path: Path, key: str) -> bool:
    head = path.read_text(encoding="utf-8").split("\n")[:30]
    return any(line.startswith(f"{key}:") for line in head)


def test_claude_recalls_what_okfgit_ranks_first(repo: Path, okfgit, git, home: Path) -> None:  # noqa: ANN001
    import os
    import sys
    sys.path.insert(0, str(BENCH))
    try:
        import genkb
    finally:
        sys.path.remove(str(BENCH))
    planned = genkb.generate(repo / ".okf", 1000, scope="project")
    plain = sorted((p for p in planned if "/concept-" in p), reverse=True)  # late paths: never first by path
    kb = repo / ".okf"

    def edit(path: str, old: str, new: str) -> None:
        file = kb / path
        file.write_text(file.read_text().replace(old, new, 1))

    verified, deprecated, padded = plain[:10], plain[10:30], plain[30:33]
    for path in verified:
        edit(path, "okf_source: authored\n",
             "okf_source: authored\nverified:\n- by: human:alice\n  at: 2026-01-01T00:00:00Z\n")
    for path in deprecated:
        edit(path, "okf_source: authored\n", "okf_source: authored\nstatus: deprecated\n")
    pad = "".join(f"x_note_{i:02}: padding\n" for i in range(35))
    for path in padded:  # description and type pushed past line 30
        edit(path, "okf_source: authored\n", "okf_source: authored\n" + pad)
        text = (kb / path).read_text()
        head, sep, body = text.partition("\n---\n")
        lines = head.split("\n")
        moved = [line for line in lines if line.startswith(("type:", "description:"))]
        (kb / path).write_text("\n".join([x for x in lines if x not in moved] + moved) + sep + body)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "kb", cwd=repo)
    okfgit("sync", cwd=repo)
    from okfgit.targets.claude_home import memory_dir
    folder = Path(memory_dir(repo.resolve(), os.environ, home).path)
    for i in range(5):
        (folder / f"project_fact_{i}.md").write_text(
            f"---\nname: fact-{i}\ndescription: Fact {i} the agent learned\nmetadata:\n  type: project\n---\n"
            f"The build needs step {i}.\n")
    okfgit("sync", cwd=repo)
    okfgit("sync", cwd=repo)

    top = claude_would_recall(folder)
    names = {p.name for p in top}
    assert all(f"project_fact_{i}.md" in names for i in range(5))
    assert all(path.rsplit("/", 1)[-1] in names for path in verified)
    assert not any(path.rsplit("/", 1)[-1] in names for path in deprecated)
    assert all(first_30_lines_say(p, "description") for p in top)
    for path in padded:
        projected = folder / path.rsplit("/", 1)[-1]
        assert first_30_lines_say(projected, "description") and first_30_lines_say(projected, "type")
        assert sorted(projected.read_bytes().split(b"\n")) == sorted((kb / path).read_bytes().split(b"\n"))
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*.md")}
    okfgit("project", cwd=repo)
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*.md")} == before  # no change, no time moved

    changed = next(p for p in plain[40:] if p.rsplit("/", 1)[-1] not in names)  # outside the 200 so far
    edit(changed, "okf_source: authored\n", "okf_source: authored\n# reworded\n")
    git("commit", "-q", "-am", "change one concept", cwd=repo)
    okfgit("sync", cwd=repo)
    assert claude_would_recall(folder)[0].name == changed.rsplit("/", 1)[-1]

    # what --explain says is what Claude Code's own listing gives
    explained = json.loads(okfgit("project", "--explain", "--json", cwd=repo).out)["explain"]
    recalled = [entry["file"] for entry in explained["claude"]["recall"]]
    assert recalled == [p.relative_to(folder).as_posix() for p in claude_would_recall(folder)]
    assert all(entry["citation"].startswith("project:") for entry in explained["claude"]["recall"])
    memory_md = explained["claude"]["memory_md"]
    assert memory_md["cut"] and memory_md["lines"] <= 200 and memory_md["bytes"] <= 25_000
    assert len(explained["claude"]["neither"]) >= explained["claude"]["projected"] - 200 - memory_md["listed"]
    assert explained["codex"]["max_bytes"] == 32 * 1024
    assert any("MEMORY.md lists" in s for s in explained["over_budget"])
    text = okfgit("project", "--explain", cwd=repo).out
    assert "Claude Code" in text and "recall: the 200 newest memory files" in text and "Codex" in text
    # the default budget holds every concept of a knowledge base of this size, and says so
    n = explained["claude"]["projected"]
    assert explained["claude"]["budget"] == {"files": 10_000, "source": "the default", "holds": n, "concepts": n}
    assert f"memory folder: holds {n:,} of {n:,} concepts (its budget: 10,000 files, the default" in text
    status = okfgit("status", cwd=repo, expect=None).out
    assert "over an agent's budget: Claude Code: MEMORY.md lists" in status


@pytest.mark.parametrize(("captured_n", "references"), [(1, False), (recall.FRESH_LIMIT, False),
                                                       (recall.FRESH_LIMIT, True)])
def test_a_change_in_place_gives_what_reading_every_concept_gives(repo: Path, okfgit, git, home: Path,  # noqa: ANN001
                                                                  captured_n: int, references: bool) -> None:
    """A run where only concepts' bodies changed plans without reading every concept
    (targets/claude_memory.py ``_changed_in_place``); a full run right after it, made to
    read every concept, finds nothing to write and no time to move. With the slots for what
    changed last all taken, a new one pushes the oldest of them back among the rest."""
    import os
    import sys
    sys.path.insert(0, str(BENCH))
    try:
        import genkb
    finally:
        sys.path.remove(str(BENCH))
    size = 400 if references else 260  # enough Decisions, Playbooks and Lessons to fill the top's rest
    planned = sorted(p for p in genkb.generate(repo / ".okf", size, scope="project") if "/concept-" in p)
    kb = repo / ".okf"

    def edit(path: str, old: str, new: str) -> None:
        file = kb / path
        file.write_text(file.read_text().replace(old, new, 1))

    deprecated, captured, more = planned[5], planned[6], planned[7:6 + captured_n]
    edit(deprecated, "okf_source: authored\n", "okf_source: authored\nstatus: deprecated\n")
    for path in (captured, *more):
        edit(path, "okf_source: authored\n", "okf_source: claude-memory\n")
    for path in more if references else ():  # pushed out of what changed last, they go past the top's rest
        text = (kb / path).read_text()
        kind = next(line for line in text.split("\n") if line.startswith("type: "))
        edit(path, kind + "\n", "type: Reference\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "kb", cwd=repo)
    okfgit("project", cwd=repo)
    from okfgit.targets.claude_home import memory_dir
    folder = Path(memory_dir(repo.resolve(), os.environ, home).path)
    okf_dir = repo / ".git" / "okf"

    def recorded_state() -> dict[str, object]:
        from okfgit.local import state

        return state.load(okf_dir.parent).to_json()

    def times() -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.md")}

    def one_run(*paths: str, note: str, in_place: bool = True) -> None:
        for path in paths:
            edit(path, "\n---\n", f"\n---\n{note}\n")
        if not paths:
            (repo / "README.md").write_text(f"# proj {note}\n")
        git("commit", "-q", "-am", note, cwd=repo)
        forget_facts(okf_dir.parent, "cards")
        out = json.loads(okfgit("project", "--json", cwd=repo).out)
        assert sorted(Path(w["path"]).name for w in out["written"]) == sorted(p.rsplit("/", 1)[-1] for p in paths)
        unchanged = [Path(u["path"]).name for u in out["unchanged"] if u["target"] == "claude-memory"]
        assert sorted(unchanged + [Path(w["path"]).name for w in out["written"]]) == \
            sorted(p.name for p in folder.glob("*.md"))  # every other file, MEMORY.md too, listed once
        assert (("cards", "project") in kinds(okf_dir.parent)) != in_place  # no concept read, or every one
        assert any("left out, reachable" in w for w in out["warnings"])  # the concepts' warnings, repeated
        for path in paths:
            assert (folder / path.rsplit("/", 1)[-1]).read_bytes() == (kb / path).read_bytes()
        after, recorded = times(), recorded_state()
        from okfgit.local import state

        forced = state.load(okf_dir.parent)  # the full plan from here must give the same
        forced.inputs, forced.skipped, forced.notes, forced.needs_merge = {}, None, None, None
        state.save(forced)
        again = json.loads(okfgit("project", "--json", cwd=repo).out)
        assert again["written"] == [] and again["removed"] == []
        assert times() == after
        full = recorded_state()
        assert full["memory_files"] == recorded["memory_files"]
        assert (full["recall"], full["merged"]) == (recorded["recall"], recorded["merged"])

    rest = [p for p in planned[40:] if p not in (deprecated, captured, *more)]
    if more:  # every slot for what changed last is taken
        one_run(captured, note="already among what changed last")
        one_run(more[-1], captured, note="two already among them")
        one_run(rest[-1], note="a new one pushes the oldest out")
        one_run(rest[-1], note="now among them")
        one_run(rest[-2], rest[-3], note="two new ones push two out")
        one_run(rest[0], note="one from the top of the rest")
        one_run(note="nothing in the knowledge base")
        return
    one_run(rest[-1], note="edited below the top")
    one_run(rest[-1], note="edited again, already first")
    one_run(rest[-2], rest[-3], note="two at once")
    one_run(deprecated, note="a deprecated one")
    one_run(captured, note="a captured one")
    one_run(note="nothing in the knowledge base")
    assert recorded_state()["recall"][2] == 4  # three edited, one captured lead the order
    edit(rest[-4], "title: ", "title: Renamed ")
    git("commit", "-q", "-am", "a title changed", cwd=repo)
    forget_facts(okf_dir.parent, "cards")
    okfgit("project", cwd=repo)
    assert ("cards", "project") in kinds(okf_dir.parent)  # MEMORY.md may change: every concept is read


def test_the_candidates_from_a_scan_are_the_candidates_claude_lists(tmp_path: Path) -> None:
    """status lists Claude's recall candidates from the scan it already made of the folder:
    the same list as a walk of it, links and nested folders included. Claude Code 2.1.332
    follows links to folders, leaves MEMORY.md out at any depth and its reserved subtrees out."""
    from okfgit.local import stamps
    from okfgit.targets import recall

    folder = tmp_path / "memory"
    (folder / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.md").write_text("outside")
    (folder / "team" / "store").mkdir(parents=True)
    (folder / "logs").mkdir()
    names = ["a.md", "MEMORY.md", "sub/MEMORY.md", "sub/b.md", "sub/deeper/c.md", "notes.txt", "team/mine.md",
             "team/store/shared.md", "logs/today.md"]
    for i, name in enumerate(names):
        (folder / name).write_text(name)
        os.utime(folder / name, ns=(1_700_000_000_000_000_000 + i, 1_700_000_000_000_000_000 + i * 10**9))
    os.symlink(folder / "a.md", folder / "link-to-file.md")
    os.symlink(tmp_path / "elsewhere", folder / "link-to-folder.md")
    walked = recall.claude_candidates(folder)
    listed = [p.relative_to(folder).as_posix() for p in walked]
    assert listed == ["link-to-folder.md/x.md", "team/mine.md", "sub/deeper/c.md", "sub/b.md", "a.md",
                      "link-to-file.md"]
    seen = stamps.scan(str(folder), keep=True).entries
    assert seen is not None and recall.claude_candidates(folder, seen) == walked
    os.unlink(folder / "link-to-folder.md")  # no linked folder: the scan's own entries decide
    seen = stamps.scan(str(folder), keep=True).entries
    assert seen is not None and recall.claude_candidates(folder, seen) == recall.claude_candidates(folder) \
        == [folder / n for n in ("team/mine.md", "sub/deeper/c.md", "sub/b.md", "a.md", "link-to-file.md")]


def _note(n: int, *, type_: str = "Reference", extra: str = "") -> str:
    return (f"---\ntype: {type_}\ntitle: Note {n:02}\ndescription: Budget note number {n:02}.\n"
            f"okf_id: {n:08x}-0000-4000-8000-000000000000\n{extra}---\n\nBody {n}.\n")


def test_the_memory_folder_holds_its_budget_and_every_other_concept_stays_in_reach(
        repo: Path, okfgit, git, home: Path, env: dict[str, str]) -> None:  # noqa: ANN001
    from okfgit.context import Context
    from okfgit.mcp import tools
    from okfgit.targets.claude_home import memory_dir

    kb = repo / ".okf" / "notes"
    kb.mkdir(parents=True)
    verified = "verified:\n- by: human:alice@example.com\n  at: 2026-01-01T00:00:00Z\n"
    for n in range(12):
        (kb / f"n{n:02}.md").write_text(_note(n, extra=verified if n in (9, 10) else ""))
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "twelve notes", cwd=repo)
    git("config", "okf.memoryFiles", "5", cwd=repo)
    folder = Path(memory_dir(repo.resolve(), env, home).path)

    def held() -> set[str]:
        return {p.name for p in folder.glob("*.md") if p.name != "MEMORY.md"}

    okfgit("sync", cwd=repo)
    # the human-verified ones first (recall.rank), then the first by path: five files
    assert held() == {"n09.md", "n10.md", "n00.md", "n01.md", "n02.md"}
    memory_md = (folder / "MEMORY.md").read_text()
    assert "n09.md" in memory_md and "n11.md" not in memory_md
    summary = okfgit("project", "--explain", "--json", cwd=repo).out
    assert json.loads(summary)["explain"]["claude"]["budget"] == {
        "files": 5, "source": "git config okf.memoryFiles", "holds": 5, "concepts": 12}
    assert ("memory folder: holds 5 of 12 concepts (its budget: 5 files, git config okf.memoryFiles, and every "
            "human-verified one)") in okfgit("project", "--explain", cwd=repo).out
    status = okfgit("status", cwd=repo, expect=None).out
    assert ("over an agent's budget: Claude Code: the memory folder holds 5 of 12 concepts (its budget: 5 files, "
            "git config okf.memoryFiles, and every human-verified one); the other 7 are reached through the tier "
            "indexes, `okfgit cat` and MCP") in status

    # outside the budget, still one step away: cat, search and MCP
    assert okfgit("cat", "n11", cwd=repo).out == _note(11)
    assert json.loads(okfgit("search", "number", "11", "--json", cwd=repo).out)[0]["path"] == "notes/n11.md"

    reader = tools.Reader(Context(env, repo))  # what `okfgit mcp` answers each tool call with
    assert [r["path"] for r in tools.call(reader, "search", {"words": ["number", "11"]}).data["results"]] == \
        ["notes/n11.md"]
    assert tools.call(reader, "cat", {"ref": "n11"}).text == _note(11)

    # a concept changed since leads the recall order: it moves in, the last one held moves out
    (kb / "n11.md").write_text(_note(11).replace("Body 11.", "Body 11, reworded."))
    git("commit", "-q", "-am", "reword n11", cwd=repo)
    removed = json.loads(okfgit("project", "--json", cwd=repo).out)["removed"]
    assert [(Path(r["path"]).name, r["reason"].split(", ")[-1]) for r in removed] == [
        ("n02.md", "outside the memory folder's budget")]
    assert held() == {"n11.md", "n09.md", "n10.md", "n00.md", "n01.md"}
    assert not (folder / "n02.md").exists()  # no stale file
    assert "n02.md" not in (folder / "MEMORY.md").read_text()

    # a budget smaller than the human-verified concepts drops none of them; and what leaves the
    # budget is removed only as okfgit wrote it: a file a person edited, or their own, stays
    edited = (folder / "n00.md").read_bytes() + b"\nA line a person added.\n"
    (folder / "n00.md").write_bytes(edited)
    (folder / "mine.md").write_bytes(b"My own note.\n")
    git("config", "okf.memoryFiles", "1", cwd=repo)
    done = json.loads(okfgit("project", "--json", cwd=repo, expect=None).out)
    assert [Path(r["path"]).name for r in done["removed"]] == ["n01.md"]
    assert held() == {"n11.md", "n09.md", "n10.md", "n00.md", "mine.md"}
    assert (folder / "n00.md").read_bytes() == edited and (folder / "mine.md").read_bytes() == b"My own note.\n"


def test_the_budget_is_read_from_git_config_then_the_projects_settings(repo: Path, okfgit, git,  # noqa: ANN001
                                                                      home: Path, env: dict[str, str]) -> None:
    from okfgit.targets.claude_home import memory_dir

    kb = repo / ".okf" / "notes"
    kb.mkdir(parents=True)
    for n in range(4):
        (kb / f"n{n:02}.md").write_text(_note(n))
    (repo / ".okf" / "okfgit.toml").write_text("memory_files = 2\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "four notes, two held", cwd=repo)
    folder = Path(memory_dir(repo.resolve(), env, home).path)
    out = okfgit("project", cwd=repo).out
    assert "(holds 2 of 4 concepts: its budget, memory_files in .okf/okfgit.toml)" in out
    assert sorted(p.name for p in folder.glob("n*.md")) == ["n00.md", "n01.md"]
    git("config", "okf.memoryFiles", "3", cwd=repo)
    assert "(holds 3 of 4 concepts: its budget, git config okf.memoryFiles)" in okfgit("project", cwd=repo).out
    git("config", "okf.memoryFiles", "many", cwd=repo)
    done = okfgit("project", cwd=repo)
    assert "git config okf.memoryFiles is 'many', not a whole number; the memory folder holds 10,000 files" in done.err
    assert sorted(p.name for p in folder.glob("n*.md")) == ["n00.md", "n01.md", "n02.md", "n03.md"]
    from okfgit.knowledge.capture_policy import project_setting
    assert project_setting(repo)[0] == "unset"  # a known key: capture still reads the file (and stays on)
