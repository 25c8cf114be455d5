"""The one REF grammar (cat, links, promote) and the card cache every reader shares."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from okfgit.format import concept as okf
from okfgit.knowledge.cards import TierCards
from okfgit.knowledge.tiers import Tier
from okfgit.local import paths
from okfgit.local.store import Row, Store
from tests.conftest import Runner
from tests.test_local_store import damage_facts, kinds, rows
from tests.test_nav import commit_files, concept

CACHES = "notes/use-caches.md"
LOCKS = "notes/use-locks.md"


def _job(project: Path) -> Path:
    return project / "runstate" / "r1" / "okf"


@pytest.fixture
def run_kb(project: Path, okfgit: Runner) -> Path:
    """A run with two lessons whose slugs share the prefix ``use-``."""
    okfgit("run", "start", "r1", cwd=project)
    for title, claim in (("Use caches", "Benchmarks warm the cache first."), ("Use locks", "Hooks take a lock.")):
        okfgit("note", "--type", "Lesson", title, "--claim", claim, "--why", "Measured.", "--generalizes", "yes",
               cwd=project)
    return project


def _citation(okfgit: Runner, project: Path, path: str) -> str:
    listing = json.loads(okfgit("ls", "notes", "--json", cwd=project).out)
    cite = next(c["citation"] for c in listing["concepts"] if c["path"] == path)
    assert cite in okfgit("ls", "notes", cwd=project).out  # the text listing prints the same citation
    return str(cite)


def _check_every_verb(okfgit: Runner, project: Path, ref: str, cite: str, blob: bytes) -> None:
    shown = okfgit("cat", ref, cwd=project)
    assert (shown.out.encode(), shown.err) == (blob, f"citation: {cite}\n"), ref
    assert okfgit("links", ref, cwd=project).out.startswith(f"# {cite}\n"), ref
    planned = okfgit("promote", ref, "--dry-run", cwd=project).out
    assert f"okf: promote {CACHES} from job/r1" in planned, ref


def test_the_citation_ls_prints_is_accepted_by_cat_links_and_promote(run_kb: Path, okfgit: Runner,
                                                                     git: Runner) -> None:
    cite = _citation(okfgit, run_kb, CACHES)
    assert cite.startswith(f"job/r1:{CACHES}@")
    blob = (_job(run_kb) / CACHES).read_bytes()
    short = "job:" + cite.split(":", 1)[1]  # job: means the active run
    for ref in (cite, short):
        _check_every_verb(okfgit, run_kb, ref, cite, blob)
    out = okfgit("promote", cite, cwd=run_kb).out
    assert out.startswith(f"promoted job/r1:{CACHES} -> project:{CACHES}\n")
    assert (run_kb / ".okf" / CACHES).is_file() and not (_job(run_kb) / CACHES).exists()


def test_every_form_of_ref_names_the_same_concept_in_every_verb(run_kb: Path, okfgit: Runner) -> None:
    cite = _citation(okfgit, run_kb, CACHES)
    blob = (_job(run_kb) / CACHES).read_bytes()
    okf_id = okf.split(blob, CACHES).meta["okf_id"]
    for ref in ("use-caches", "use-caches.md", okf_id, CACHES, "/" + CACHES, "notes/use-caches",
                "job:use-caches", "job/r1:use-caches", f"job:{okf_id}", "Use caches", "use caches",
                "use-c", "notes/use-c", "job:use-ca"):
        _check_every_verb(okfgit, run_kb, ref, cite, blob)


def test_an_ambiguous_ref_is_exit_2_with_candidates_in_every_verb(run_kb: Path, okfgit: Runner,
                                                                  git: Runner) -> None:
    caches, locks = _citation(okfgit, run_kb, CACHES), _citation(okfgit, run_kb, LOCKS)
    heads = git("rev-parse", "HEAD", cwd=_job(run_kb)).out
    for verb in ("cat", "links", "promote"):
        for ref in ("use-", "notes/use-"):
            err = okfgit(verb, ref, cwd=run_kb, expect=2).err
            assert err.startswith(f"okfgit: error: '{ref}' is ambiguous: 2 matches; name one by tier:path or "
                                  "okf_id:\n"), (verb, ref)
            assert f"\n  {caches}  okf_id " in err and f"\n  {locks}  okf_id " in err, (verb, ref)
    assert "not in view" in okfgit("promote", "project:use-caches", cwd=run_kb, expect=2).err
    assert "no concept or file matches 'nope'" in okfgit("links", "nope", cwd=run_kb, expect=2).err
    assert git("rev-parse", "HEAD", cwd=_job(run_kb)).out == heads


def test_a_stale_citation_is_named_read_verbs_warn_and_promote_refuses(run_kb: Path, okfgit: Runner,
                                                                      git: Runner) -> None:
    old = _citation(okfgit, run_kb, CACHES)
    note = _job(run_kb) / CACHES
    note.write_bytes(note.read_bytes() + b"\nOne more line.\n")
    git("commit", "-q", "-am", "edit", cwd=_job(run_kb))
    new = _citation(okfgit, run_kb, CACHES)
    assert new != old
    stale = f"stale citation: {old} cites blob {old.rsplit('@', 1)[1]}, but HEAD now has {new}"
    shown = okfgit("cat", old, cwd=run_kb)
    assert shown.out.encode() == note.read_bytes() and f"okfgit: warning: {stale}\n" in shown.err
    links = okfgit("links", old, cwd=run_kb)
    assert links.out.startswith(f"# {new}\n") and stale in links.err
    head = git("rev-parse", "HEAD", cwd=_job(run_kb)).out
    refused = okfgit("promote", old, cwd=run_kb, expect=2).err
    assert refused.startswith(f"okfgit: error: {stale}; name it without @") and "nothing was written" in refused
    assert git("rev-parse", "HEAD", cwd=_job(run_kb)).out == head
    assert okfgit("promote", new, "--dry-run", cwd=run_kb).out


# -- the card cache ---------------------------------------------------------------------------


def _cards(tier: Tier) -> tuple[dict[str, object], dict[str, tuple[str, str]]]:
    cards = TierCards(tier)
    return {p: c.card for p, c in cards.cards.items()}, dict(cards.problems)


def _cold(tier: Tier, repo: Path) -> tuple[dict[str, object], dict[str, tuple[str, str]]]:
    """The cards read with no stored facts at all (the store is put back as it was)."""
    db = paths.state(repo / ".git")
    kept = db.read_bytes() if db.exists() else None
    db.unlink(missing_ok=True)
    try:
        return _cards(tier)
    finally:
        db.unlink(missing_ok=True)
        if kept is not None:
            db.write_bytes(kept)


def test_the_card_cache_sees_each_change_and_never_changes_an_answer(project: Path, okfgit: Runner,
                                                                      git: Runner) -> None:
    tier = Tier("project", project, ".okf")
    commit_files(git, project, {
        ".okf/a.md": concept("Note", "A", "Links to b.", "See [b](b.md) and [[c]].\n"),
        ".okf/b.md": concept("Note", "B", "The target."),
        ".okf/bad.md": "no frontmatter\n",
    })
    first = _cards(tier)
    assert first == _cold(tier, project)
    assert [(link.kind, link.target) for link in TierCards(tier).links_of("a.md")[1]] == [("md", "b.md"), ("wiki", "c")]
    assert set(first[1]) == {"bad.md"}

    # one concept changes, and one link now points elsewhere: exactly those two files are read again
    commit_files(git, project, {
        ".okf/a.md": concept("Note", "A", "Links to c now.", "See [c](sub/c.md).\n"),
        ".okf/b.md": concept("Note", "B renamed", "The old target."),
    })
    warm = TierCards(tier)
    assert warm.catalog.reread == 2
    assert warm.cards["b.md"].title == "B renamed" and warm.cards["a.md"].description == "Links to c now."
    assert [link.target for link in warm.links_of("a.md")[1]] == ["sub/c.md"]
    assert _cards(tier) == _cold(tier, project)
    assert "a.md@" in okfgit("links", "a", cwd=project).out and "sub/c.md dangling" in \
        okfgit("links", "a", cwd=project).out

    # more commits, a removal, a repair, a rename: warm answers equal cold ones after each
    steps: list[dict[str, str]] = [
        {".okf/sub/c.md": concept("Note", "C", "Now it exists.", "Back to [a](../a.md).\n")},
        {".okf/bad.md": concept("Note", "Bad no more", "Repaired.", name="repaired")},
    ]
    for files in steps:
        commit_files(git, project, files)
        assert _cards(tier) == _cold(tier, project)
    git("mv", ".okf/b.md", ".okf/b2.md", cwd=project)
    git("commit", "-q", "-m", "rename", cwd=project)
    assert _cards(tier) == _cold(tier, project)
    assert "b2.md" in _cards(tier)[0] and "b.md" not in _cards(tier)[0]
    git("rm", "-q", ".okf/sub/c.md", cwd=project)
    git("commit", "-q", "-m", "remove", cwd=project)
    assert _cards(tier) == _cold(tier, project)
    assert "sub/c.md dangling" in okfgit("links", "a", cwd=project).out

    # damaged facts, or ones stored for a tree the repository lacks, are only a cache
    expected = _cards(tier)
    damage_facts(project / ".git", "cards")
    assert _cards(tier) == expected
    conn = sqlite3.connect(paths.state(project / ".git"))
    conn.execute("UPDATE catalogs SET tree = ? WHERE kind = 'cards'", ("1" * 40,))
    conn.commit()
    conn.close()
    assert _cards(tier) == expected
    shutil.rmtree(paths.okf_dir(project / ".git"))
    assert _cards(tier) == expected


def test_a_run_that_redid_a_few_concepts_writes_only_their_rows(project: Path, git: Runner,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    tier = Tier("project", project, ".okf")
    commit_files(git, project, {f".okf/n{i}.md": concept("Note", f"N{i}", f"Note {i}.") for i in range(5)})
    assert TierCards(tier).catalog.reread > 0
    common = project / ".git"
    staged: list[tuple[str | None, list[str]]] = []
    real = Store.stage_catalog

    def stage(self: Store, kind: str, label: str, tree: str, commit: str | None,
              rows: Callable[[], Iterable[tuple[str, Row | None]]], base: str | None,
              saved: Any = lambda: None) -> None:
        staged.append((base, sorted(path for path, _ in rows())))
        real(self, kind, label, tree, commit, rows, base, saved)

    monkeypatch.setattr(Store, "stage_catalog", stage)
    # one concept changed: its row alone is written, from the stored tree, and the next
    # reader starts from the new tree (it reads nothing again)
    before = kinds(common)[("cards", "project")]
    commit_files(git, project, {".okf/n1.md": concept("Note", "N1 again", "Changed.")})
    assert TierCards(tier).catalog.reread == 1
    assert staged == [(before, ["n1.md"])]
    again = TierCards(tier)
    assert again.catalog.reread == 0 and again.cards["n1.md"].title == "N1 again"
    assert _cards(tier) == _cold(tier, project)

    # a commit outside the KB: the store learns the new commit and the KB tree is not looked up again
    commit_files(git, project, {"README.md": "# proj, edited\n"})
    head = git("rev-parse", "HEAD", cwd=project).out.strip()
    assert TierCards(tier).catalog.reread == 0
    assert rows(common, "SELECT commit_oid FROM catalogs WHERE kind = 'cards'") == [(head,)]

    # rows changed from a tree the store no longer holds (another okfgit stored one meanwhile)
    # are not written: what is there stays, and answers are the same
    store = Store(common)
    stored = store.catalog("cards", "project")
    assert stored is not None
    store.stage_catalog("cards", "project", "2" * 40, head, {"n1.md": None}.items, "1" * 40)
    assert store.save()
    assert kinds(common)[("cards", "project")] == stored.tree
    assert _cards(tier) == _cold(tier, project)


def test_a_first_name_lookup_answers_as_the_name_index_does(project: Path, git: Runner) -> None:
    # named() answers its first question by a pass over the cards and later ones from
    # by_name: both must give the same concepts, in path order, for every kind of name.
    tier = Tier("project", project, ".okf")
    commit_files(git, project, {
        ".okf/x.md": concept("Note", "X at the root", "One."),
        ".okf/a/x.md": concept("Note", "X in a", "Two."),
        ".okf/b/y.md": concept("Note", "Y", "Named x.", name="x"),
        ".okf/b/z.md": concept("Note", "Z", "Named as its slug.", name="z"),
        ".okf/c/w.md": concept("Note", "W", "Named with a slash.", name="a/x"),
        ".okf/c/ax.md": concept("Note", "AX", "Slug ends like x."),
        ".okf/c/bad.md": "no frontmatter\n",
    })
    for name in ("x", "y", "z", "a/x", "ax", "bad", "nope", "x.md", ""):
        first = [c.path for c in TierCards(tier).named(name)]
        warm = TierCards(tier)
        warm.named("anything")  # the first question goes by the pass; this one by by_name
        assert [c.path for c in warm.named(name)] == first, name
        assert first == sorted(warm.by_name.get(name, [])), name
    assert [c.path for c in TierCards(tier).named("x")] == ["a/x.md", "b/y.md", "x.md"]
