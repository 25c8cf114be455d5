"""okfgit project, end to end: golden outputs, re-runs, ownership, worktrees, budgets.

The fixture KB (fixtures/projection/kb) has three tiers with overlapping okf_ids; it is
committed from files with the pinned author and clock, so every OID is reproducible.
Regenerate the golden files with OKFGIT_REGEN_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, Runner, fsck

KIT = FIXTURES / "projection"
EXPECTED = KIT / "expected"
REGEN = os.environ.get("OKFGIT_REGEN_GOLDEN") == "1"
RUN = "fix-login"
BENCH = Path(__file__).resolve().parent.parent / "bench"


def enc(path: str) -> str:
    """Claude Code's folder name for an ASCII path, by hand: every non-[A-Za-z0-9] -> '-'."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in path)


@dataclass
class Kit:
    home: Path
    repo: Path
    global_dir: Path
    job: Path

    @property
    def memory(self) -> Path:
        return self.home / ".claude" / "projects" / enc(str(self.repo.resolve())) / "memory"

    @property
    def claude_md(self) -> Path:
        return self.home / ".claude" / "CLAUDE.md"

    @property
    def codex_md(self) -> Path:
        return self.home / ".codex" / "AGENTS.md"

    @property
    def agents_md(self) -> Path:
        return self.repo / "AGENTS.md"

    @property
    def state(self) -> Path:
        return self.repo / ".git" / "okf" / "state.db"

    def state_json(self) -> dict[str, Any]:
        """The ownership record as one document (``state.State.to_json``)."""
        from okfgit.local import state

        return state.load(self.repo / ".git").to_json()

    @property
    def stamp(self) -> Path:
        return self.repo / ".git" / "okf" / "fastpath.json"


def commit_files(git: Runner, repo: Path, src: Path, dest: Path, message: str = "fixture") -> None:
    """Copy ``src`` into ``dest`` (inside ``repo``) and commit everything."""
    shutil.copytree(src, dest, dirs_exist_ok=True)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)


def new_repo(git: Runner, path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main", cwd=path)
    return path


def build_kit(home: Path, repo: Path, git: Runner, *, job: bool = True) -> Kit:
    """The three-tier fixture KB plus the person's files that exist before projecting."""
    shutil.copy(KIT / "before" / "AGENTS.md", repo / "AGENTS.md")
    commit_files(git, repo, KIT / "kb" / "project", repo / ".okf")
    global_dir = new_repo(git, home / ".local" / "share" / "okf")
    commit_files(git, global_dir, KIT / "kb" / "global", global_dir)
    job_dir = repo / "runstate" / RUN / "okf"
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("/runstate/\n")
    if job:
        new_repo(git, job_dir)
        commit_files(git, job_dir, KIT / "kb" / "job", job_dir)
    (home / ".claude").mkdir(exist_ok=True)
    shutil.copy(KIT / "before" / "CLAUDE.md", home / ".claude" / "CLAUDE.md")
    return Kit(home, repo, global_dir, job_dir)


@pytest.fixture
def kit(home: Path, repo: Path, git: Runner) -> Kit:
    return build_kit(home, repo, git)


def placeholders(kit: Kit, text: str) -> str:
    return (text.replace(str(kit.global_dir / "index.md"), "@GLOBAL_INDEX@")
            .replace(str(kit.memory), "@MEMORY@").replace(str(kit.home), "@HOME@").replace(str(kit.repo), "@REPO@"))


def outputs(kit: Kit) -> dict[str, bytes]:
    """Every file projection writes, keyed as in fixtures/projection/expected."""
    out: dict[str, bytes] = {}
    for path in sorted(kit.memory.rglob("*")):
        if path.is_file():
            out["memory/" + path.relative_to(kit.memory).as_posix()] = path.read_bytes()
    for key, path in (("CLAUDE.md", kit.claude_md), ("AGENTS.md", kit.agents_md), ("codex-AGENTS.md", kit.codex_md)):
        out[key] = placeholders(kit, path.read_text(encoding="utf-8")).encode("utf-8")
    return out


def check_golden(actual: dict[str, bytes]) -> None:
    if REGEN:
        shutil.rmtree(EXPECTED, ignore_errors=True)
        for key, data in actual.items():
            (EXPECTED / key).parent.mkdir(parents=True, exist_ok=True)
            (EXPECTED / key).write_bytes(data)
        return
    expected = {p.relative_to(EXPECTED).as_posix(): p.read_bytes() for p in EXPECTED.rglob("*") if p.is_file()}
    assert sorted(actual) == sorted(expected), "set of projected files differs (OKFGIT_REGEN_GOLDEN=1 regenerates)"
    for key in expected:
        assert actual[key] == expected[key], f"{key} differs from fixtures/projection/expected/{key}"


def check_golden_text(name: str, actual: str) -> None:
    path = KIT / name
    if REGEN:
        path.write_text(actual, encoding="utf-8")
        return
    assert actual == path.read_text(encoding="utf-8"), f"{path} differs (OKFGIT_REGEN_GOLDEN=1 regenerates)"


def mtimes(kit: Kit) -> dict[str, int]:
    files = [p for p in kit.memory.rglob("*") if p.is_file()] + [kit.claude_md, kit.codex_md, kit.agents_md]
    return {str(p): p.stat().st_mtime_ns for p in files} | {str(kit.memory): kit.memory.stat().st_mtime_ns}


def project(okfgit: Runner, kit: Kit, *args: str, expect: int = 0):  # noqa: ANN201
    run = ("--run", RUN) if (kit.job / ".git").exists() else ()  # an unknown --run is a usage error
    return okfgit("project", *run, *args, cwd=kit.repo, expect=expect)


# -- the golden projection ---------------------------------------------------------------------


def test_golden_three_tier_projection(kit: Kit, okfgit: Runner, git: Runner) -> None:
    result = project(okfgit, kit)
    check_golden(outputs(kit))
    check_golden_text("expected-stderr.txt", placeholders(kit, result.err))
    assert result.out.startswith("projected: 13 written\n")


def test_memory_files_are_blobs_verbatim(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    sources = {
        "cache.md": (kit.job, "HEAD:cache.md"),
        "testing.md": (kit.repo, "HEAD:.okf/testing.md"),
        "feedback_prefer_rg.md": (kit.repo, "HEAD:.okf/feedback/prefer-rg.md"),
        "style.md": (kit.repo, "HEAD:.okf/guides/style.md"),
        "style-5a1e0000.md": (kit.global_dir, "HEAD:style.md"),
    }
    for name, (where, rev) in sources.items():
        file_oid = git("hash-object", str(kit.memory / name), cwd=kit.repo).out.strip()
        assert file_oid == git("rev-parse", rev, cwd=where).out.strip(), name
    state = kit.state_json()
    okf_id, tier, path, oid = state["memory_files"]["testing.md"][:4]
    assert (okf_id, tier, path) == ("11111111-2222-4333-8444-555555555555", "project", "testing.md")
    assert oid == git("rev-parse", "HEAD:.okf/testing.md", cwd=kit.repo).out.strip()
    assert state["inputs"]["project"][2] == git("rev-parse", "HEAD:.okf", cwd=kit.repo).out.strip()
    assert state["inputs"][f"job/{RUN}"][1] == git("rev-parse", "HEAD", cwd=kit.job).out.strip()
    fsck(git, kit.repo)


def test_second_run_writes_nothing(kit: Kit, okfgit: Runner) -> None:
    project(okfgit, kit)
    before = mtimes(kit)
    state_mtime = kit.state.stat().st_mtime_ns
    again = project(okfgit, kit)
    assert again.out.startswith("nothing to do")
    assert mtimes(kit) == before
    kit.stamp.unlink()  # the full path, not the fast path, must also write nothing
    full = project(okfgit, kit)
    assert full.out.startswith("nothing to do: every target is up to date")
    assert mtimes(kit) == before
    assert kit.state.stat().st_mtime_ns == state_mtime
    third = project(okfgit, kit)
    assert third.out.startswith("nothing to do")
    assert mtimes(kit) == before


def test_one_changed_concept_rewrites_its_file_and_memory_md_only(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    before = mtimes(kit)
    path = kit.repo / ".okf" / "testing.md"
    path.write_text(path.read_text().replace("How tests are written in this project;", "How we test here;"))
    git("commit", "-q", "-am", "reword testing", cwd=kit.repo)
    result = json.loads(project(okfgit, kit, "--json").out)
    assert sorted(Path(w["path"]).name for w in result["written"]) == ["MEMORY.md", "testing.md"]
    assert result["removed"] == [] and result["skipped"] == []
    after = mtimes(kit)
    # Bytes: only the changed concept and MEMORY.md. Times: the changed concept is now the
    # newest file, first in Claude's recall order (spec/okf-projection.md), and the others
    # keep their order below it.
    files = sorted((p for p in after if Path(p).suffix == ".md" and Path(p).parent == kit.memory
                    and Path(p).name != "MEMORY.md"), key=lambda p: -after[p])
    assert Path(files[0]).name == "testing.md"
    assert files[1:] == sorted(files[1:], key=lambda p: -before[p])
    assert (kit.memory / "testing.md").read_bytes() == path.read_bytes()
    assert "- [Testing](testing.md) \u2014 How we test here; overrides" in (kit.memory / "MEMORY.md").read_text()


def test_deleted_concept_removes_its_file(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    git("rm", "-q", "state.md", cwd=kit.job)
    git("commit", "-q", "-m", "drop state", cwd=kit.job)
    result = json.loads(project(okfgit, kit, "--json").out)
    assert [Path(r["path"]).name for r in result["removed"]] == ["state.md"]
    assert not (kit.memory / "state.md").exists()
    assert "state.md" not in (kit.memory / "MEMORY.md").read_text()


def test_a_shadowed_concept_returns_when_the_specific_one_goes(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    git("rm", "-q", "cache.md", cwd=kit.job)
    git("commit", "-q", "-m", "drop run cache", cwd=kit.job)
    project(okfgit, kit)
    assert (kit.memory / "cache.md").read_bytes() == (kit.repo / ".okf" / "decisions" / "cache.md").read_bytes()


def test_memory_file_okfgit_did_not_write_survives_every_run(kit: Kit, okfgit: Runner, git: Runner) -> None:
    kit.memory.mkdir(parents=True)
    mine = kit.memory / "user_prefers_tabs.md"
    mine.write_text("---\nname: user-prefers-tabs\ndescription: Tabs.\nmetadata:\n  type: user\n---\nTabs.\n")
    squat = kit.memory / "state.md"  # an agent's file where a concept wants to go
    squat.write_text("agent's own state notes\n")
    (kit.memory / "MEMORY.md").write_text("- [Prefers tabs](user_prefers_tabs.md) \u2014 Tabs.\n")
    first = project(okfgit, kit)
    assert f"{squat}: was not written by okfgit (or was edited since); left for capture" in first.err
    lines = (kit.memory / "MEMORY.md").read_text().splitlines()
    assert lines[0] == "- [Prefers tabs](user_prefers_tabs.md) \u2014 Tabs."
    assert not any("(state.md)" in line for line in lines)
    git("rm", "-q", "state.md", cwd=kit.job)
    git("commit", "-q", "-m", "drop state", cwd=kit.job)
    for _ in range(2):
        project(okfgit, kit)
        assert mine.read_text().startswith("---\nname: user-prefers-tabs")
        assert squat.read_text() == "agent's own state notes\n"
        assert (kit.memory / "MEMORY.md").read_text().startswith("- [Prefers tabs](user_prefers_tabs.md)")


def test_lines_a_person_wrote_in_memory_md_are_kept_before_it_is_regenerated(kit: Kit, okfgit: Runner,
                                                                             git: Runner) -> None:
    project(okfgit, kit)
    index = kit.memory / "MEMORY.md"
    okfgits = index.read_text()
    mine = ["# What I keep telling Claude", "Always run `make lint` before committing.",
            "- [An old note](gone.md) \u2014 a file nobody has any more"]
    index.write_text("\n".join(mine[:2]) + "\n" + okfgits + mine[2] + "\n")
    result = project(okfgit, kit)
    drafts = list((kit.repo / ".git" / "okf" / "drafts").iterdir())
    assert len(drafts) == 1 and drafts[0].name.startswith("MEMORY-lines-")
    assert (f"{index}: was edited since okfgit wrote it; 3 lines okfgit did not write were saved to {drafts[0]} "
            "before it was regenerated") in result.err
    saved = drafts[0].read_text().splitlines()
    assert saved[0].startswith(f"<!-- okfgit kept these lines from {index} on 2025-11-30T00:00:00Z")
    assert saved[1:] == mine  # every word, in order; okfgit's own lines are not among them
    assert index.read_text() == okfgits  # regenerated
    project(okfgit, kit)  # okfgit's own MEMORY.md again: nothing more to keep
    assert list((kit.repo / ".git" / "okf" / "drafts").iterdir()) == drafts


def test_memory_md_is_not_regenerated_when_its_lines_cannot_be_kept(kit: Kit, okfgit: Runner) -> None:
    project(okfgit, kit)
    index = kit.memory / "MEMORY.md"
    edited = "A line I wrote.\n" + index.read_text()
    index.write_text(edited)
    (kit.repo / ".git" / "okf" / "drafts").write_text("a file where the drafts folder goes\n")
    result = project(okfgit, kit, expect=3)
    assert f"{index}: not regenerated: could not keep the lines someone wrote there first" in result.err
    assert index.read_text() == edited


def test_dry_run_shows_where_memory_md_lines_would_be_kept(kit: Kit, okfgit: Runner) -> None:
    project(okfgit, kit)
    index = kit.memory / "MEMORY.md"
    index.write_text("A line I wrote.\n" + index.read_text())
    result = project(okfgit, kit, "--dry-run")
    assert "+A line I wrote." in result.out and "MEMORY-lines-" in result.out
    assert not (kit.repo / ".git" / "okf" / "drafts").exists()


def test_agent_edit_of_a_projected_file_is_left_for_capture(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    edited = kit.memory / "testing.md"
    edited.write_text(edited.read_text() + "\nAn agent added this line.\n")
    path = kit.repo / ".okf" / "testing.md"
    path.write_text(path.read_text() + "\nA person added this one.\n")
    git("commit", "-q", "-am", "extend testing", cwd=kit.repo)
    result = project(okfgit, kit)
    assert "An agent added this line." in edited.read_text()
    assert "A person added this one." not in edited.read_text()
    assert f"{edited}: was not written by okfgit (or was edited since); left for capture" in result.err
    # An edited file whose concept leaves the KB is not deleted either.
    other = kit.memory / "unicode.md"
    other.write_text(other.read_text() + "\nAgent note.\n")
    git("rm", "-q", ".okf/decisions/unicode.md", cwd=kit.repo)
    git("commit", "-q", "-m", "drop unicode", cwd=kit.repo)
    result = project(okfgit, kit)
    assert other.read_text().endswith("\nAgent note.\n")
    assert f"{other}: held project:decisions/unicode.md@" in result.err
    assert "but was edited since okfgit wrote it; left for capture" in result.err
    assert "unicode.md" not in kit.state_json()["memory_files"]


def test_an_edit_beside_a_new_memory_is_seen_although_the_folder_changed(kit: Kit, okfgit: Runner) -> None:
    # A new file in the folder means each projected file is checked on its own: by its size
    # and time against the record, and by its bytes when either differs.
    project(okfgit, kit)
    (kit.memory / "user_note.md").write_text("---\nname: user-note\ndescription: A note.\nmetadata:\n"
                                             "  type: user\n---\nA note.\n")
    edited = kit.memory / "testing.md"
    before = edited.read_bytes()
    after = before.replace(b"e", b"E", 1)  # the same size, other bytes, a later time
    assert len(after) == len(before) and after != before
    edited.write_bytes(after)
    os.utime(edited, ns=(os.stat(edited).st_atime_ns, os.stat(edited).st_mtime_ns + 1_000_000_000))
    untouched = {p.name: p.read_bytes() for p in kit.memory.iterdir() if p.name not in ("testing.md", "MEMORY.md")}
    result = project(okfgit, kit)
    assert f"{edited}: was not written by okfgit (or was edited since); left for capture" in result.err
    assert edited.read_bytes() == after
    assert {p.name: p.read_bytes() for p in kit.memory.iterdir()
            if p.name not in ("testing.md", "MEMORY.md")} == untouched


def test_hand_written_text_around_each_block_survives(kit: Kit, okfgit: Runner) -> None:
    kit.codex_md.parent.mkdir(parents=True, exist_ok=True)
    kit.codex_md.write_text("# Codex, my way\n\nAlways run the linter.\n")
    project(okfgit, kit)
    for path in (kit.claude_md, kit.agents_md, kit.codex_md):
        text = path.read_text()
        path.write_text("Above, added later.\n" + text + "Below, added later.\n")
    before = {p: p.read_text() for p in (kit.claude_md, kit.agents_md, kit.codex_md)}
    kit.stamp.unlink()
    project(okfgit, kit)
    for path, text in before.items():
        assert path.read_text() == text
    assert kit.codex_md.read_text().startswith("Above, added later.\n# Codex, my way\n\nAlways run the linter.\n\n")
    assert kit.agents_md.read_text().count("<!-- okf:begin id=project -->") == 1
    assert "## Hand-written footer\n\nAsk in #proj-dev when unsure.\n" in kit.agents_md.read_text()


def test_dry_run_prints_diffs_and_writes_nothing(kit: Kit, okfgit: Runner) -> None:
    result = project(okfgit, kit, "--dry-run")
    assert f"+++ b/{kit.memory / 'testing.md'}" in result.out
    assert f"--- a/{kit.agents_md}\n+++ b/{kit.agents_md}" in result.out
    assert "-An outdated block from an older okfgit." in result.out
    assert f"--- /dev/null\n+++ b/{kit.codex_md}" in result.out
    assert "13 would be written" in result.out
    assert not kit.memory.exists() and not kit.codex_md.exists()
    assert (kit.state_json()["memory_files"], kit.state_json()["targets"]) == ({}, {})  # facts only: no record
    assert kit.agents_md.read_bytes() == (KIT / "before" / "AGENTS.md").read_bytes()


def test_scope_project_mirrors_only_the_project_tier(kit: Kit, okfgit: Runner) -> None:
    project(okfgit, kit)
    result = json.loads(project(okfgit, kit, "--scope", "project", "--json").out)
    assert [t["tier"] for t in result["tiers"]] == ["project"]
    names = sorted(p.name for p in kit.memory.iterdir())
    assert names == ["MEMORY.md", "cache.md", "feedback_prefer_rg.md", "style.md", "testing.md", "unicode.md"]
    assert (kit.memory / "cache.md").read_bytes() == (kit.repo / ".okf" / "decisions" / "cache.md").read_bytes()


def test_target_agents_leaves_claude_files_alone(kit: Kit, okfgit: Runner) -> None:
    before = kit.claude_md.read_bytes()
    project(okfgit, kit, "--target", "agents")
    assert kit.claude_md.read_bytes() == before
    assert not kit.memory.exists()
    assert "<!-- okf:begin id=global -->" in kit.codex_md.read_text()
    assert "<!-- okf:begin id=project -->" in kit.agents_md.read_text()


# -- worktrees and folder names --------------------------------------------------------------


def test_linked_worktree_shares_the_main_checkouts_memory_folder(kit: Kit, okfgit: Runner, git: Runner,
                                                                 tmp_path: Path) -> None:
    project(okfgit, kit)
    worktree = tmp_path / "proj-feature"
    git("worktree", "add", "-q", "-b", "feature", str(worktree), cwd=kit.repo)
    before = (kit.memory / "testing.md").read_bytes()
    result = okfgit("project", "--json", cwd=worktree)  # no run: the job tier's concepts go
    data = json.loads(result.out)
    assert data["memory_dir"] == str(kit.memory)
    assert not (tmp_path / "home" / ".claude" / "projects" / enc(str(worktree)) ).exists()
    assert (worktree / "AGENTS.md").read_text() == kit.agents_md.read_text()
    assert sorted(Path(r["path"]).name for r in data["removed"]) == ["state.md"]
    assert (kit.memory / "cache.md").read_bytes() == (worktree / ".okf" / "decisions" / "cache.md").read_bytes()
    assert not (worktree / ".git" / "okf").exists()  # one state, in the common dir
    assert kit.state_json()["inputs"]["project"][0] == str(worktree)
    # a concept the worktree shares is not written again (its time may move: the recall order
    # lost the job tier's concepts, and a new order is set from the clock when it changes)
    assert (kit.memory / "testing.md").read_bytes() == before
    assert str(kit.memory / "testing.md") not in {r["path"] for r in data["written"]}


def _java_hash(text: str) -> int:
    data = text.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (h * 31 + (data[i] | data[i + 1] << 8)) % 2**32
    return h - 2**32 if h >= 2**31 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def _by_hand(path: str) -> str:
    """DESIGN.md's rule, written out independently of okfgit.targets.claude_home."""
    units = path.encode("utf-16-le", "surrogatepass")
    out = ""
    for i in range(0, len(units), 2):
        unit = units[i] | units[i + 1] << 8
        out += chr(unit) if chr(unit).isascii() and chr(unit).isalnum() else "-"
    if len(out) <= 200:
        return out
    return out[:200] + "-" + _base36(abs(_java_hash(path)))


@pytest.mark.parametrize("name", ["my.repo_v2", "with space", "caf\u00e9-\U0001f600", "long-" + "x" * 220])
def test_memory_folder_name_encodes_the_repo_root(name: str, tmp_path: Path, okfgit: Runner, git: Runner,
                                                 home: Path) -> None:
    root = tmp_path / name
    new_repo(git, root)
    commit_files(git, root, KIT / "kb" / "project", root / ".okf")
    okfgit("project", "--scope", "project", cwd=root)
    real = str(root.resolve())
    expected = home / ".claude" / "projects" / _by_hand(real) / "memory"
    assert (expected / "testing.md").is_file()
    if name.startswith("caf"):
        assert _by_hand(real).endswith("caf" + "-" + "-" + "--")  # é is one unit, '-' one, the emoji two
    if name.startswith("long"):
        assert len(_by_hand(real)) > 201 and _by_hand(real)[200] == "-"
    assert [p.name for p in (home / ".claude" / "projects").iterdir()] == [_by_hand(real)]


def test_auto_memory_directory_setting_is_honoured(kit: Kit, okfgit: Runner, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "mem"
    (kit.home / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": str(target)}))
    project(okfgit, kit)
    assert (target / "testing.md").is_file() and (target / "MEMORY.md").is_file()
    assert not kit.memory.exists()


# -- budgets -----------------------------------------------------------------------------------


def test_memory_md_of_1000_concepts_stays_in_budget(repo: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import genkb
    finally:
        sys.path.remove(str(BENCH))
    genkb.generate(repo / ".okf", 1000, scope="project")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "kb", cwd=repo)
    result = okfgit("project", cwd=repo)
    memory = home / ".claude" / "projects" / enc(str(repo.resolve())) / "memory"
    data = (memory / "MEMORY.md").read_bytes()
    lines = data.decode("utf-8").splitlines()
    assert len(lines) <= 200 and len(data) <= 25_000
    assert all(len(line) < 150 for line in lines)
    assert lines[-1].startswith(f"- [Project knowledge index]({repo.resolve()}/.okf/index.md) \u2014 ")
    listed = len(lines) - 1
    assert lines[-1].endswith(f" \u2014 {1000 - listed:,} more concepts, not listed here")
    assert f"listed {listed} of 1000 concepts" in result.err and f"{1000 - listed} left out" in result.err
    assert len([p for p in memory.iterdir() if p.name != "MEMORY.md"]) == 1000
    assert lines[0].startswith("- [") and "(concept-00000.md)" in lines[0]


def test_moving_the_memory_folder_cleans_up_the_old_one(kit: Kit, okfgit: Runner, tmp_path: Path) -> None:
    project(okfgit, kit)
    (kit.memory / "agent_own.md").write_text("an agent's file\n")
    target = tmp_path / "moved"
    (kit.home / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": str(target)}))
    result = json.loads(project(okfgit, kit, "--json").out)
    assert sorted(p.name for p in kit.memory.iterdir()) == ["agent_own.md"]
    assert len(result["removed"]) == 10 and (target / "MEMORY.md").is_file()
    assert kit.state_json()["memory_dir"] == str(target)


def test_when_the_only_tier_goes_the_memory_folder_empties(kit: Kit, okfgit: Runner, git: Runner) -> None:
    project(okfgit, kit)
    git("rm", "-q", "-r", ".okf", cwd=kit.repo)
    git("commit", "-q", "-m", "no project kb", cwd=kit.repo)
    result = okfgit("project", "--scope", "project", cwd=kit.repo)
    assert "no knowledge base at HEAD" in result.err
    assert sorted(p.name for p in kit.memory.iterdir()) == []


def test_quiet_does_not_go_with_dry_run_or_json(kit: Kit, okfgit: Runner) -> None:
    for flag in ("--dry-run", "--json", "--explain"):
        r = project(okfgit, kit, "--quiet", flag, expect=2)
        assert r.err == ("okfgit: error: --quiet prints nothing, so it does not go with --dry-run, --json or "
                         "--explain\n")
    assert not kit.memory.exists()
