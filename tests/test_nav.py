from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner
from tests.test_local_store import damage_facts, forget_facts, kinds

ID_A = "11111111-1111-4111-8111-111111111111"
ID_SHARED = "22222222-2222-4222-8222-222222222222"


def concept(type_: str, title: str, description: str, body: str = "", **extra: str) -> str:
    lines = ["---", f"type: {type_}", f"title: {title}", f"description: {description}"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n---\n\n" + body


def commit_files(git: Runner, repo: Path, files: dict[str, str], message: str = "hand-written knowledge") -> None:
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
    git("add", *files, cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)


def oid7(git: Runner, repo: Path, path: str) -> str:
    return git("rev-parse", f"HEAD:{path}", cwd=repo).out.strip()[:7]


def global_repo(home: Path) -> Path:
    return home / ".local" / "share" / "okf"


@pytest.fixture
def kb(project: Path, okfgit: Runner, git: Runner, home: Path) -> Path:
    """A project tier with decisions and links, and a global tier sharing one okf_id."""
    okfgit("new", "cache-policy", "--type", "Decision", "--title", "Cache policy",
           "--description", "We cache responses for a day.", "--tag", "perf", "--tag", "http",
           "--dir", "decisions", "--no-edit", cwd=project)
    okfgit("new", "tabs", "--scope", "global", "--description", "Indent with tabs, see [[cache-policy]].",
           "--no-edit", cwd=project)
    glob = global_repo(home)
    commit_files(git, glob, {
        "shared.md": concept("Note", "Shared rule", "The global wording.", "Global body.\n",
                             scope="global", okf_id=ID_SHARED),
        "linker.md": concept("Note", "Linker", "Links by name.", "See [[cache-policy]] for caching.\n",
                             scope="global", okf_id="33333333-3333-4333-8333-333333333333"),
    })
    commit_files(git, project, {
        ".okf/shared.md": concept("Note", "Shared rule", "The project wording.", "Project body.\n",
                                  scope="project", okf_id=ID_SHARED),
        ".okf/decisions/storage.md": concept(
            "Decision", "Storage engine", "We store blobs in sqlite for caching speed.",
            "Relative [policy](cache-policy.md), absolute [again](/decisions/cache-policy.md),\n"
            "wiki [[cache-policy]], external [site](https://example.com), missing [gone](nope.md).\n",
            scope="project", okf_id=ID_A, tags="[storage, perf]", name="storage-engine"),
        ".okf/notes/a/x.md": concept("Note", "X in a", "First x."),
        ".okf/notes/b/x.md": concept("Note", "X in b", "Second x."),
    })
    return project


def test_cat_prints_blob_and_cites_by_slug_id_path_and_tier_path(kb: Path, okfgit: Runner, git: Runner) -> None:
    blob = git("show", "HEAD:.okf/decisions/storage.md", cwd=kb).out
    cite = f"citation: project:decisions/storage.md@{oid7(git, kb, '.okf/decisions/storage.md')}\n"
    for ref in ("storage", "storage-engine", ID_A, "decisions/storage.md", "/decisions/storage.md",
                "project:decisions/storage.md", "project:storage", cite.split(": ")[1].strip()):
        result = okfgit("cat", ref, cwd=kb)
        assert result.out == blob, ref
        assert result.err == cite, ref


def test_cat_keeps_bytes_exactly_and_folder_means_its_index(kb: Path, okfgit: Runner, git: Runner,
                                                             env: dict[str, str]) -> None:
    raw = b"\xef\xbb\xbf---\r\ntype: Note\r\ntitle: Crlf\r\n---\r\n\r\nLine one.\r\n\r\n"
    (kb / ".okf" / "crlf.md").write_bytes(raw)
    git("add", ".okf/crlf.md", cwd=kb)
    git("commit", "-q", "-m", "crlf", cwd=kb)
    proc = subprocess.run([sys.executable, "-m", "okfgit", "cat", "crlf"], cwd=kb, env=env, capture_output=True)
    assert proc.returncode == 0 and proc.stdout == raw
    index = okfgit("cat", "project:decisions/", cwd=kb)
    assert index.out == git("show", "HEAD:.okf/decisions/index.md", cwd=kb).out
    assert index.err.startswith("citation: project:decisions/index.md@")


def test_cat_shows_its_citation_above_the_text_where_both_streams_meet(kb: Path, git: Runner,
                                                                       env: dict[str, str]) -> None:
    """A terminal shows stdout and stderr on one screen: the citation comes first there, and
    stdout alone still holds the exact blob."""
    blob = git("show", "HEAD:.okf/decisions/storage.md", cwd=kb).out
    both = subprocess.run([sys.executable, "-m", "okfgit", "cat", "storage"], cwd=kb, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    cite = f"citation: project:decisions/storage.md@{oid7(git, kb, '.okf/decisions/storage.md')}\n"
    assert both.returncode == 0 and both.stdout == cite + blob


def test_search_outside_a_repository_says_the_project_tier_was_skipped(kb: Path, okfgit: Runner,
                                                                       tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    none = okfgit("search", "zebra", cwd=outside)
    assert none.out == "" and none.err == ("no matching concepts\n"
                                           "note: project tier skipped: not inside a git repository (pass --repo)\n")
    found = okfgit("search", "tabs", cwd=outside)
    assert found.out.startswith("global:tabs.md@") and "project tier skipped" in found.err
    assert "project tier skipped" in okfgit("ls", cwd=outside).err
    assert okfgit("search", "cache", cwd=kb).err == ""  # inside, with every tier there: no note


def test_cat_ambiguous_and_not_found_exit_2(kb: Path, okfgit: Runner, git: Runner) -> None:
    err = okfgit("cat", "x", cwd=kb, expect=2).err
    a = oid7(git, kb, ".okf/notes/a/x.md")
    b = oid7(git, kb, ".okf/notes/b/x.md")
    assert err == (
        "okfgit: error: 'x' is ambiguous: 2 matches; name one by tier:path or okf_id:\n"
        f"  project:notes/a/x.md@{a}\n  project:notes/b/x.md@{b}\n"
    )
    assert okfgit("cat", "notes/b/x.md", cwd=kb).out.startswith("---\ntype: Note\ntitle: X in b")
    both = okfgit("cat", "index.md", cwd=kb, expect=2).err
    assert "project:index.md@" in both and "global:index.md@" in both
    missing = okfgit("cat", "cache-polcy", cwd=kb, expect=2)
    assert missing.out == ""
    assert missing.err.startswith("okfgit: error: no concept or file matches 'cache-polcy' in the tiers in view "
                                  "(project, global); did you mean: cache-policy (project:decisions/cache-policy.md@")
    assert "not in view" in okfgit("cat", "job:x", cwd=kb, expect=2).err


def test_precedence_project_shadows_global_by_okf_id(kb: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    g = f"global:shared.md@{oid7(git, global_repo(home), 'shared.md')}"
    p = f"project:shared.md@{oid7(git, kb, '.okf/shared.md')}"
    shown = okfgit("cat", ID_SHARED, cwd=kb)
    assert "Project body." in shown.out
    assert shown.err == f"citation: {p}\nshadows: {g}\n"
    assert okfgit("cat", "shared", cwd=kb).err.startswith(f"citation: {p}\n")
    assert okfgit("cat", "shared.md", cwd=kb).err.startswith(f"citation: {p}\n")
    assert "Global body." in okfgit("cat", "global:shared", cwd=kb).out
    assert "Global body." in okfgit("cat", ID_SHARED, "--scope", "global", cwd=kb).out
    root = okfgit("ls", cwd=kb).out.splitlines()
    assert f"{p}  [Note] Shared rule \u2014 The project wording.  (shadows {g})" in root
    assert not any(line.startswith(g) for line in root)
    assert f"{g}  [Note] Shared rule \u2014 The global wording.  (shadowed by {p})" in \
        okfgit("ls", "global:", cwd=kb).out.splitlines()
    hits = json.loads(okfgit("search", "shared", "--json", cwd=kb).out)
    assert [h["citation"] for h in hits] == [p]
    assert hits[0]["shadows"] == [g]


def test_ls_root_and_folder_text_and_json(kb: Path, okfgit: Runner, git: Runner) -> None:
    root = okfgit("ls", cwd=kb).out.splitlines()
    assert root[0] == "# /  (tiers: project, global)"
    assert "decisions/  2 concepts  [project]  Concepts under decisions/." in root
    assert "notes/  2 concepts  [project]  Concepts under notes/." in root
    assert any(line.startswith("global:tabs.md@") for line in root)
    listing = json.loads(okfgit("ls", "decisions", "--json", cwd=kb).out)
    assert listing["path"] == "decisions" and listing["tier"] is None and listing["folders"] == []
    storage = listing["concepts"][1]
    assert storage == {
        "citation": f"project:decisions/storage.md@{oid7(git, kb, '.okf/decisions/storage.md')}",
        "tier": "project", "path": "decisions/storage.md",
        "oid": git("rev-parse", "HEAD:.okf/decisions/storage.md", cwd=kb).out.strip(),
        "okf_id": ID_A, "type": "Decision", "title": "Storage engine",
        "description": "We store blobs in sqlite for caching speed.", "tags": ["storage", "perf"],
        "status": "stable", "superseded_by": [], "stale": False, "stale_after": None, "shadows": [],
    }
    notes = json.loads(okfgit("ls", "project:notes", "--json", cwd=kb).out)
    assert notes["tier"] == "project"
    assert notes["folders"] == [
        {"path": "notes/a", "tiers": ["project"], "description": "Concepts under a/.", "concepts": 1},
        {"path": "notes/b", "tiers": ["project"], "description": "Concepts under b/.", "concepts": 1},
    ]
    err = okfgit("ls", "decisons", cwd=kb, expect=2).err
    assert err.startswith("okfgit: error: no concept or file matches 'decisons'")


def test_links_outgoing_and_backlinks_across_tiers(kb: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    storage = f"project:decisions/storage.md@{oid7(git, kb, '.okf/decisions/storage.md')}"
    policy = f"project:decisions/cache-policy.md@{oid7(git, kb, '.okf/decisions/cache-policy.md')}"
    out = okfgit("links", "storage", cwd=kb).out
    assert out == (
        f"# {storage}\n"
        "outgoing (5):\n"
        f"  line 11  cache-policy.md  -> {policy}\n"
        f"  line 11  /decisions/cache-policy.md  -> {policy}\n"
        "  line 12  https://example.com  -> external\n"
        "  line 12  nope.md  -> decisions/nope.md dangling\n"
        f"  line 12  [[cache-policy]]  -> {policy}\n"
        "backlinks (0):\n"
    )
    report = json.loads(okfgit("links", "cache-policy", "--json", cwd=kb).out)
    assert report["concept"]["citation"] == policy
    linker = f"global:linker.md@{oid7(git, global_repo(home), 'linker.md')}"
    tabs = f"global:tabs.md@{oid7(git, global_repo(home), 'tabs.md')}"
    assert [(b["citation"], b["kind"], b["target"]) for b in report["backlinks"]] == [
        (storage, "md", "cache-policy.md"),
        (storage, "md", "/decisions/cache-policy.md"),
        (storage, "wiki", "cache-policy"),
        (linker, "wiki", "cache-policy"),
        (tabs, "wiki", "cache-policy"),
    ]
    gone = json.loads(okfgit("links", ID_A, "--json", cwd=kb).out)["outgoing"][3]
    assert gone == {"kind": "md", "target": "nope.md", "line": 12, "status": "dangling",
                    "path": "decisions/nope.md", "citation": None}


def test_links_follow_a_commit_that_changes_them(kb: Path, okfgit: Runner, git: Runner) -> None:
    # The links are stored apart from the cards: a commit that changes a body's links is
    # seen by the next call, outgoing and as backlinks on both sides.
    before = json.loads(okfgit("links", "storage", "--json", cwd=kb).out)
    assert [o["target"] for o in before["outgoing"]][:2] == ["cache-policy.md", "/decisions/cache-policy.md"]
    assert ("links", "project") in kinds(kb / ".git")
    commit_files(git, kb, {".okf/decisions/storage.md": concept(
        "Decision", "Storage engine", "We store blobs in sqlite for caching speed.",
        "Now only [x](../notes/a/x.md).\n", scope="project", okf_id=ID_A, tags="[storage, perf]",
        name="storage-engine")})
    after = json.loads(okfgit("links", "storage", "--json", cwd=kb).out)
    assert [(o["target"], o["status"]) for o in after["outgoing"]] == [("../notes/a/x.md", "ok")]
    policy = json.loads(okfgit("links", "cache-policy", "--json", cwd=kb).out)
    assert all(b["citation"].split("@")[0] != "project:decisions/storage.md" for b in policy["backlinks"])
    x = json.loads(okfgit("links", "project:notes/a/x.md", "--json", cwd=kb).out)
    assert [b["citation"].split("@")[0] for b in x["backlinks"]] == ["project:decisions/storage.md"]


def test_search_filters_and_ranking(kb: Path, okfgit: Runner, git: Runner) -> None:
    def cites(*args: str) -> list[str]:
        return [h["path"] for h in json.loads(okfgit("search", *args, "--json", cwd=kb).out)]

    assert cites("--type", "decision") == ["decisions/cache-policy.md", "decisions/storage.md"]
    assert cites("--tag", "perf") == ["decisions/cache-policy.md", "decisions/storage.md"]
    assert cites("--tag", "perf", "--tag", "storage") == ["decisions/storage.md"]
    assert cites("--tag", "nope") == []
    commit_files(git, kb, {".okf/zz/caching.md": concept("Note", "Caching layer", "How responses are kept.")})
    # Title hits first (by path), then description-only hits (by path).
    assert cites("CACH") == ["decisions/cache-policy.md", "zz/caching.md", "decisions/storage.md", "tabs.md"]
    assert cites("cach", "respons") == ["decisions/cache-policy.md", "zz/caching.md"]
    assert cites("cach", "sqlite") == ["decisions/storage.md"]
    assert cites("body") == []  # no full-text search
    assert cites("x") == ["notes/a/x.md", "notes/b/x.md"]
    text = okfgit("search", "storage", cwd=kb)
    assert text.out == (f"project:decisions/storage.md@{oid7(git, kb, '.okf/decisions/storage.md')}  "
                        "[Decision] Storage engine \u2014 We store blobs in sqlite for caching speed.\n")
    none = okfgit("search", "zebra", cwd=kb)
    assert none.out == "" and none.err == "no matching concepts\n"
    assert cites("CACH", "--limit", "2") == ["decisions/cache-policy.md", "zz/caching.md"]
    assert cites("CACH", "--limit", "0") == cites("CACH")
    cut = okfgit("search", "cach", "--limit", "3", cwd=kb)
    assert len(cut.out.splitlines()) == 3
    assert cut.err == "1 more matching concept not shown: add words, a type or a tag to narrow, or a limit of 0 for all\n"
    assert okfgit("search", "cach", "--limit", "-1", cwd=kb, expect=2).code == 2


def test_search_shows_twenty_hits_unless_told(kb: Path, okfgit: Runner, git: Runner) -> None:
    commit_files(git, kb, {f".okf/many/m{n:02}.md": concept("Note", f"Many {n}", "One of many.") for n in range(25)})
    hits = json.loads(okfgit("search", "many", "--json", cwd=kb).out)
    assert [h["path"] for h in hits] == [f"many/m{n:02}.md" for n in range(20)]
    assert len(json.loads(okfgit("search", "many", "--limit", "0", "--json", cwd=kb).out)) == 25


def test_reads_come_from_head_not_the_working_tree(kb: Path, okfgit: Runner, git: Runner) -> None:
    committed = git("show", "HEAD:.okf/decisions/storage.md", cwd=kb).out
    (kb / ".okf" / "decisions" / "storage.md").write_text(committed.replace("Storage engine", "Unsaved title"))
    (kb / ".okf" / "draft.md").write_text(concept("Note", "Draft", "Not committed yet."))
    git("add", ".okf/draft.md", cwd=kb)  # staged is still not committed
    assert okfgit("cat", "storage", cwd=kb).out == committed
    assert "Unsaved" not in okfgit("search", "unsaved", cwd=kb).out
    assert okfgit("cat", "draft", cwd=kb, expect=2).code == 2
    assert "draft" not in okfgit("ls", cwd=kb).out


def test_unparseable_concept_listed_and_cat_by_path(kb: Path, okfgit: Runner, git: Runner) -> None:
    commit_files(git, kb, {".okf/notes/bad.md": "---\ntype: [unclosed\n---\nbody\n"})
    listing = okfgit("ls", "notes", cwd=kb).out
    assert f"project:notes/bad.md@{oid7(git, kb, '.okf/notes/bad.md')}  unreadable: project:notes/bad.md: invalid YAML" \
        in listing
    shown = okfgit("cat", "notes/bad.md", cwd=kb)
    assert shown.out == "---\ntype: [unclosed\n---\nbody\n"
    assert "okfgit: warning: project:notes/bad.md@" in shown.err
    assert "is unreadable as a concept: project:notes/bad.md: invalid YAML frontmatter" in shown.err
    assert "invalid YAML" in okfgit("links", "notes/bad.md", cwd=kb, expect=2).err


def test_job_tier_wins_and_run_option(kb: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "job", "--run", "r1", cwd=kb)
    job = kb / "runstate" / "r1" / "okf"
    commit_files(git, job, {"shared.md": concept("Note", "Shared rule", "The job wording.", "Job body.\n",
                                                 scope="job", okf_id=ID_SHARED)})
    shown = okfgit("cat", ID_SHARED, "--run", "r1", cwd=kb)
    assert "Job body." in shown.out
    assert shown.err.splitlines()[0].startswith("citation: job/r1:shared.md@")
    assert [line.split("@")[0] for line in shown.err.splitlines()[1:]] == ["shadows: project:shared.md",
                                                                           "shadows: global:shared.md"]
    assert "Project body." in okfgit("cat", ID_SHARED, cwd=kb).out  # no run: no job tier
    assert "Job body." in okfgit("cat", "job:shared", "--run", "r1", cwd=kb).out


def test_the_cache_follows_head_and_is_only_a_cache(kb: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    common = kb / ".git"
    first = okfgit("search", "storage", "--json", cwd=kb).out
    assert ("cards", "project") in kinds(common) and ("cards", "global") in kinds(global_repo(home) / ".git")
    committed = git("show", "HEAD:.okf/decisions/storage.md", cwd=kb).out
    commit_files(git, kb, {".okf/decisions/storage.md": committed.replace("Storage engine", "Storage layer")})
    assert [h["title"] for h in json.loads(okfgit("search", "storage", "--json", cwd=kb).out)] == ["Storage layer"]
    git("reset", "-q", "--hard", "HEAD~1", cwd=kb)
    assert okfgit("search", "storage", "--json", cwd=kb).out == first
    damage_facts(common, "cards")
    assert okfgit("search", "storage", "--json", cwd=kb).out == first
    conn = sqlite3.connect(common / "okf" / "state.db")
    conn.execute("UPDATE catalogs SET tree = ? WHERE kind = 'cards'", ("1" * 40,))  # a tree git does not have
    conn.commit()
    conn.close()
    assert okfgit("search", "storage", "--json", cwd=kb).out == first
    forget_facts(common)
    assert okfgit("links", "cache-policy", cwd=kb).out.count("project:decisions/storage.md@") == 3


def test_a_warm_cache_reads_only_the_files_a_commit_changed(kb: Path, okfgit: Runner, git: Runner) -> None:
    from okfgit.knowledge.cards import TierCards
    from okfgit.knowledge.tiers import Tier

    tier = Tier("project", kb, ".okf")
    assert TierCards(tier).catalog.reread > 0  # the first read builds the cache
    assert TierCards(tier).catalog.reread == 0
    commit_files(git, kb, {".okf/notes/a/x.md": concept("Note", "X in a", "Changed.")})
    cards = TierCards(tier)
    assert cards.catalog.reread == 1
    assert cards.cards["notes/a/x.md"].description == "Changed."


@pytest.mark.parametrize("argv", [("cat", "storage-engine"), ("search", "storage")])
def test_a_warm_read_parses_no_yaml_so_imports_none(argv: tuple[str, ...], kb: Path, okfgit: Runner,
                                                    okfgit_proc: Runner) -> None:
    okfgit(*argv, cwd=kb)  # builds the cards cache
    result = okfgit_proc(*argv, cwd=kb, extra_env={"PYTHONPROFILEIMPORTTIME": "1"})
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.err.splitlines() if "|" in line}
    assert "okfgit.knowledge.cards" in imported
    assert not {"yaml", "frontmatter"} & imported


# What the read verbs are asked in the comparison below: every REF rule, folders, words long
# and short, filters, links of every kind.
QUESTIONS = [
    *[("cat", ref) for ref in ("storage", "storage-engine", ID_A, ID_SHARED, "global:" + ID_SHARED, "shared",
                               "global:shared", "decisions/storage.md", "notes/a", "notes/", "x", "STRASSE",
                               "straße", "cach", "stor", "global:tab", "bad", "notes/bad.md", "cache-polcy",
                               "weird name", "percent")],
    *[("ls", path) for path in ("", "decisions", "notes", "notes/a", "project:notes", "global:", "decisions/storage.md",
                                "decisons")],
    *[("search", *words) for words in (("cache",), ("CACH", "day"), ("x",), ("ca",), ("aße",), ("stor", "sqlite"),
                                       ("shared",), ("wording",), ("zebra",), ("--type", "decision"),
                                       ("--tag", "perf", "cach"), ("e", "--limit", "0"), ("caching", "--limit", "1"),
                                       ("cach", "--no-deprecated"))],
    *[("links", ref) for ref in ("cache-policy", "storage", "shared", "x in a", "percent", "notes/b/x.md")],
]


def _answers(okfgit: Runner, kb: Path, before: Callable[[], None] = lambda: None) -> list[tuple[Any, ...]]:
    out = []
    for argv in QUESTIONS:
        before()
        result = okfgit(*argv, "--json", cwd=kb, expect=None)
        out.append((argv, result.code, result.out, result.err))
    return out


def test_the_stores_lookup_answers_what_reading_every_card_answers(kb: Path, okfgit: Runner, git: Runner,
                                                                    home: Path) -> None:
    """cat, ls, search and links through the store's lookup and full-text index give what
    they give from every card: with the lookup, without it (dropped before each question),
    without FTS5 (its table gone) and with one unreadable row."""
    commit_files(git, kb, {
        ".okf/notes/bad.md": "---\ntype: [unclosed\n---\nbody\n",
        ".okf/shared.needs-merge.md": concept("Note", "Shared rule", "An agent's wording.", scope="project",
                                              okf_id=ID_SHARED),
        ".okf/street.md": concept("Note", "Straße", "Where the cache lives.", "[[weird name]] and [p](perc%65nt.md)\n"),
        ".okf/weird.md": concept("Note", "Weird", "A name with a space.", name="weird name"),
        ".okf/percent.md": concept("Note", "Percent", "Linked by an encoded name.", "[[storage-engine]]\n"),
        ".okf/old-cache.md": concept("Decision", "Caching by the hour", "Caching we dropped.", status="deprecated",
                                     tags="[Perf]"),
    })
    common = kb / ".git"
    okfgit("links", "storage", cwd=kb)  # the first reader writes the lookup and the links
    assert {("cards", "project"), ("lookup", "project"), ("links", "project")} <= set(kinds(common))
    with_lookup = _answers(okfgit, kb)
    assert kinds(common)[("lookup", "project")] == git("rev-parse", "HEAD:.okf", cwd=kb).out.strip()

    def drop_lookup() -> None:
        for where in (common, global_repo(home) / ".git"):
            forget_facts(where, "lookup")
    assert _answers(okfgit, kb, drop_lookup) == with_lookup
    okfgit("search", "cache", cwd=kb)  # the lookup again
    conn = sqlite3.connect(common / "okf" / "state.db")
    conn.execute("DROP TABLE lookup_words")
    conn.commit()
    conn.close()
    assert _answers(okfgit, kb) == with_lookup
    conn = sqlite3.connect(common / "okf" / "state.db")
    conn.execute("UPDATE facts SET value = '[{damaged' WHERE kind = 'cards' AND path = 'decisions/storage.md'")
    conn.commit()
    conn.close()
    assert _answers(okfgit, kb) == with_lookup


def test_a_kept_reader_asks_the_store_it_wrote(kb: Path, okfgit: Runner) -> None:
    """A reader that had to read every card (a cold store) writes the lookup and then asks
    it, as an MCP server kept warm does for its next call, with the same answers."""
    from okfgit.knowledge.cards import TierCards
    from okfgit.knowledge.tiers import Tier

    forget_facts(kb / ".git")
    tier = TierCards(Tier("project", kb, ".okf"))
    first = tier.matching(["cach"])
    assert "catalog" in tier.__dict__ and tier._store is not None
    assert tier.matching(["cach"]) == first
    assert [c.path for c in first] == ["decisions/cache-policy.md", "decisions/storage.md"]


def test_a_lookup_an_earlier_okfgit_wrote_is_made_again(kb: Path, okfgit: Runner, git: Runner) -> None:
    """A lookup without what search ranks by (its shape before it had status, type and tags),
    described by other code, is dropped and written whole again by the next reader."""
    expected = okfgit("search", "cach", "--json", cwd=kb).out
    db = kb / ".git" / "okf" / "state.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "DROP TABLE lookup_words; DROP TABLE lookup;"
        "CREATE TABLE lookup (id INTEGER PRIMARY KEY, tier TEXT NOT NULL, path TEXT NOT NULL, okf_id TEXT,"
        " stem TEXT NOT NULL, name TEXT NOT NULL, title TEXT NOT NULL, words TEXT NOT NULL, UNIQUE (tier, path));"
        "CREATE VIRTUAL TABLE lookup_words USING fts5(words, content='lookup', content_rowid='id',"
        " tokenize='trigram', detail=none);"
        "INSERT INTO lookup (tier, path, stem, name, title, words) VALUES ('project', 'gone.md', 'gone', '', 'x', 'x');"
        "UPDATE catalogs SET code = 'okfgit 0.0.1' WHERE kind = 'lookup';")
    conn.close()
    assert okfgit("search", "cach", "--json", cwd=kb).out == expected
    conn = sqlite3.connect(db)
    assert "tags" in {row[1] for row in conn.execute("PRAGMA table_info(lookup)")}
    assert conn.execute("SELECT count(*) FROM lookup WHERE path = 'gone.md'").fetchone() == (0,)
    conn.close()
    assert kinds(kb / ".git")[("lookup", "project")] == git("rev-parse", "HEAD:.okf", cwd=kb).out.strip()
    assert okfgit("search", "cach", "--json", cwd=kb).out == expected  # now from the lookup


def test_a_warm_reader_asks_the_lookup_and_reads_no_other_card(kb: Path, okfgit: Runner, git: Runner) -> None:
    from okfgit.knowledge.cards import TierCards
    from okfgit.knowledge.tiers import Tier

    okfgit("links", "storage", cwd=kb)  # writes the lookup and the links
    tier = TierCards(Tier("project", kb, ".okf"))
    assert [c.path for c in tier.named("storage-engine")] == ["decisions/storage.md"]
    assert [c.path for c in tier.answering(ID_SHARED)] == ["shared.md"]
    assert [c.path for c in tier.matching(["cach", "day"])] == ["decisions/cache-policy.md"]
    assert [c.path for c in tier.under("notes/")] == ["notes/a/x.md", "notes/b/x.md"]
    assert [c.path for c in tier.linking(["cache-policy"])] == ["decisions/storage.md"]
    assert "catalog" not in tier.__dict__  # no card but these was read
    from okfgit.knowledge.merged import Merged
    from okfgit.verbs import nav

    found = nav.search(Merged([tier]), ["cach"], limit=1)  # the matches ranked, the card of the one shown read
    assert ([c.path for c in found.hits], found.more) == (["decisions/cache-policy.md"], 1)  # the title holds it
    assert "catalog" not in tier.__dict__
    # a commit later, a reader brings the store to it by a tree diff, and still reads no other card
    commit_files(git, kb, {".okf/notes/a/x.md": concept("Note", "X in a", "Now about caching.", "[[storage]]\n")})
    tier = TierCards(Tier("project", kb, ".okf"))
    assert [c.path for c in tier.matching(["cach"])] == ["decisions/cache-policy.md", "decisions/storage.md",
                                                         "notes/a/x.md"]
    assert [c.path for c in tier.linking(["storage"])] == ["notes/a/x.md"]
    assert "catalog" not in tier.__dict__ and tier.catalog.reread == 0  # the store was at HEAD: nothing to read
