"""``state.db``: one store per repository for the ownership record, every derived fact and the
records; facts keyed by the code that computed them; one write per repository and run."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from okfgit.local import paths
from okfgit.local.store import Store
from tests.conftest import Runner, fsck
from tests.test_capture import CURRENT, memory, write_memory

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def mem(project: Path, env: dict[str, str], home: Path) -> Path:
    return memory(project, env, home)


def rows(common: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """What ``sqlite3 <common>/okf/state.db`` shows for ``sql``."""
    conn = sqlite3.connect(paths.state(common))
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def forget_facts(common: Path, kind: str | None = None) -> None:
    """Delete the stored facts (of one ``kind``): what a cold store holds."""
    where, args = ("WHERE kind = ?", (kind,)) if kind else ("", ())
    conn = sqlite3.connect(paths.state(common))
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'facts'").fetchone() is None:
        conn.close()
        return  # none stored yet
    conn.execute(f"DELETE FROM facts {where}", args)
    conn.execute(f"DELETE FROM catalogs {where}", args)
    conn.commit()
    conn.close()


def damage_facts(common: Path, kind: str) -> None:
    """Every stored fact of ``kind`` made unreadable."""
    conn = sqlite3.connect(paths.state(common))
    conn.execute("UPDATE facts SET value = '[{damaged' WHERE kind = ?", (kind,))
    conn.commit()
    conn.close()


def kinds(common: Path) -> dict[tuple[str, str], str]:
    """(kind, tier) -> the KB tree each stored catalog describes."""
    return {(kind, tier): tree for kind, tier, tree in rows(common, "SELECT kind, tier, tree FROM catalogs")}


def test_a_repository_keeps_one_store_and_the_hook_stamps(project: Path, mem: Path, okfgit: Runner,
                                                         git: Runner) -> None:
    write_memory(mem, "feedback_testing.md", CURRENT)
    okfgit("sync", cwd=project)
    okfgit("doctor", cwd=project)
    okfgit("index", "--check", cwd=project)
    okfgit("links", "feedback-testing", cwd=project)
    common = project / ".git"
    assert sorted(p.name for p in paths.okf_dir(common).iterdir()) == \
        ["fastpath.json", "journal", "state.db", "sync.json", "sync.lock"]
    tree = git("rev-parse", "HEAD:.okf", cwd=project).out.strip()
    assert kinds(common) == {(kind, "project"): tree for kind in ("cards", "doctor", "indexes", "links", "lookup")}
    # each row names the blob it was read from, as git does
    listed = dict(line.split("\t")[::-1] for line in git("ls-tree", "-r", "--format=%(objectname)\t%(path)",
                                                           "HEAD", cwd=project / ".okf").out.splitlines())
    cards = rows(common, "SELECT path, oid FROM facts WHERE kind = 'cards' AND tier = 'project'")
    assert cards and all(listed[path] == oid for path, oid in cards)
    assert {p for p, _ in rows(common, "SELECT path, oid FROM facts WHERE kind = 'doctor'")} == \
        {p for p in listed if p.endswith(".md")}
    fsck(git, project)


def test_facts_computed_by_other_code_are_never_served(project: Path, okfgit: Runner, env: dict[str, str],
                                                      tmp_path: Path) -> None:
    """No version to bump: a change to what a card holds (here, its title) is seen by the very
    next read of a store whose cards the earlier code wrote."""
    okfgit("new", "fact", "--title", "A fact", "--description", "What was found.", cwd=project)
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "okfgit", copy / "okfgit", ignore=shutil.ignore_patterns("__pycache__"))

    def titles() -> str:
        run = subprocess.run([sys.executable, "-m", "okfgit", "search", "fact"], cwd=project,
                             env={**env, "PYTHONPATH": str(copy)}, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout

    assert "A fact" in titles() and "A fact" in titles()  # stored, then served from the store
    cards = copy / "okfgit" / "knowledge" / "cards.py"
    text = cards.read_text()
    assert "title=title_of(meta, path)," in text
    cards.write_text(text.replace("title=title_of(meta, path),", "title=title_of(meta, path).upper(),"))
    assert "A FACT" in titles()


def test_an_earlier_okfgits_cache_files_are_removed_and_never_read(project: Path, okfgit: Runner) -> None:
    okfgit("new", "fact", "--title", "A fact", "--description", "What was found.", cwd=project)
    folder = paths.okf_dir(project / ".git")
    for name in paths.LEGACY_CACHES:
        (folder / name).write_text('{"version": 2, "tool": "okfgit 0.1.0", "tiers": {"project": {"tree": "x"}}}')
    assert "A fact" in okfgit("search", "fact", cwd=project).out
    assert not any((folder / name).exists() for name in paths.LEGACY_CACHES)


def test_facts_stay_only_a_cache(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "fact", "--title", "A fact", "--description", "What was found.", cwd=project)
    first = okfgit("search", "fact", "--json", cwd=project).out
    common = project / ".git"
    conn = sqlite3.connect(paths.state(common))
    conn.execute("UPDATE facts SET value = '[damaged' WHERE kind = 'cards'")
    conn.commit()
    assert okfgit("search", "fact", "--json", cwd=project).out == first
    conn.execute("UPDATE catalogs SET tree = ? WHERE kind = 'cards'", ("1" * 40,))  # a tree git does not have
    conn.commit()
    assert okfgit("search", "fact", "--json", cwd=project).out == first
    conn.execute("DELETE FROM facts")
    conn.execute("DELETE FROM catalogs")
    conn.commit()
    conn.close()
    assert okfgit("search", "fact", "--json", cwd=project).out == first
    assert kinds(common)[("cards", "project")] == git("rev-parse", "HEAD:.okf", cwd=project).out.strip()


def test_one_sync_writes_each_store_once_with_the_ownership_record(project: Path, mem: Path, okfgit: Runner,
                                                                  git: Runner, home: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    okfgit("new", "tabs", "--scope", "global", "--description", "Indent with tabs.", cwd=project)
    okfgit("sync", cwd=project)
    tier = home / ".local" / "share" / "okf"
    (tier / "tabs.md").write_text((tier / "tabs.md").read_text().replace("Indent with tabs.", "Indent with tabs!"))
    git("commit", "-q", "-am", "a person's edit", cwd=tier)
    write_memory(mem, "feedback_testing.md", CURRENT)  # a new fact: a capture commit, then its projection
    writes: list[tuple[Path, bool, list[str]]] = []
    real = Store.save

    def save(self: Store, write: Any = None) -> bool:
        staged = sorted(kind for kind, _ in self._catalogs)
        done = real(self, write)
        if done:
            writes.append((self.common_dir, write is not None, staged))
        return done

    monkeypatch.setattr(Store, "save", save)
    assert "captured 1" in okfgit("sync", cwd=project).out
    # one write per store, the project's with the ownership record; among the facts staged, the cards
    # of the tiers that changed (sync also counts doctor's errors and capture looks for repeats in them)
    assert sorted((where, record) for where, record, _ in writes) == sorted([(project / ".git", True),
                                                                              (tier / ".git", False)])
    assert all("cards" in staged for _, _, staged in writes)
    assert kinds(project / ".git")[("cards", "project")] == git("rev-parse", "HEAD:.okf", cwd=project).out.strip()
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"


def test_a_run_that_only_reads_leaves_the_hook_stamp_valid(project: Path, okfgit: Runner, git: Runner) -> None:
    """Facts written by a read verb share the file with the ownership record, but only a change
    to the record takes the projection's no-op stamp away."""
    okfgit("new", "fact", "--title", "A fact", "--description", "What was found.", cwd=project)
    okfgit("sync", cwd=project)
    stamp = Path(paths.fastpath_stamp(project / ".git"))
    before = stamp.read_bytes()
    conn = sqlite3.connect(paths.state(project / ".git"))
    conn.execute("DELETE FROM facts")
    conn.execute("DELETE FROM catalogs")
    conn.commit()
    conn.close()
    okfgit("search", "fact", cwd=project)  # writes every card again
    assert stamp.read_bytes() == before
    top = git("rev-parse", "HEAD", cwd=project).out.strip()
    assert okfgit("sync", "--hook", "post-checkout", "--", top, top, "1", cwd=project).out == ""
    assert stamp.read_bytes() == before
