from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from okfgit.format import index_md as index
from tests.conftest import FIXTURES, Runner, examples, fsck, trailers_by_git

DASH = "\u2014"


def kb_repo(repo: Path, git: Runner, source: Path | None = None, files: dict[str, str] | None = None) -> Path:
    kb = repo / ".okf"
    if source is not None:
        shutil.copytree(source, kb)
    for path, text in (files or {}).items():
        (kb / path).parent.mkdir(parents=True, exist_ok=True)
        (kb / path).write_text(text)
    git("add", "-A", ".okf", cwd=repo)
    git("commit", "-q", "-m", "knowledge", cwd=repo)
    return kb


def note(title: str, description: str) -> str:
    return f"---\ntype: Note\ntitle: {title}\ndescription: {description}\n---\n\n{description}\n"


def head(git: Runner, cwd: Path) -> str:
    return git("rev-parse", "HEAD", cwd=cwd).out.strip()


def test_check_exit_codes_and_writes_nothing(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, FIXTURES / "kb-clean")
    assert okfgit("index", "--check", cwd=repo, expect=0).out.startswith(
        f"project: every index is up to date ({repo / '.okf'})\n")
    git("rm", "-q", "-r", ".okf", cwd=repo)
    git("commit", "-q", "-m", "gone", cwd=repo)
    kb_repo(repo, git, FIXTURES / "kb-broken-index-omission")
    before = head(git, repo)
    result = okfgit("index", "--check", "--scope", "project", cwd=repo, expect=2)
    assert result.out == "project: stale .okf/decisions/index.md\n"
    assert head(git, repo) == before
    assert git("status", "--porcelain", cwd=repo).out == ""
    report = json.loads(okfgit("index", "--check", "--json", "--scope", "project", cwd=repo, expect=2).out)
    assert report["tiers"] == [{"tier": "project", "base": before, "stale": ["decisions/index.md"], "commit": None}]
    assert report["stale"] == 1


def test_check_with_every_index_summarised_still_sees_each_change(repo: Path, okfgit: Runner, git: Runner) -> None:
    """``index --check`` skips an index its cached summary says is current: a title changed, a
    subfolder's intro changed, a folder added, an index edited are each still found."""
    kb = kb_repo(repo, git, FIXTURES / "kb-clean")
    okfgit("index", "--check", "--scope", "project", cwd=repo, expect=0)  # every summary cached

    def stale() -> list[str]:
        report = json.loads(okfgit("index", "--check", "--json", "--scope", "project", cwd=repo, expect=None).out)
        return report["tiers"][0]["stale"]

    def commit(message: str) -> None:
        git("add", "-A", ".okf", cwd=repo)
        git("commit", "-q", "-m", message, cwd=repo)

    policy = kb / "decisions" / "retry-policy.md"
    policy.write_text(policy.read_text().replace("title: Retry failed charges with backoff", "title: Retry later", 1))
    commit("retitle")
    assert stale() == ["decisions/index.md"]
    git("reset", "-q", "--hard", "HEAD~1", cwd=repo)
    deploys = kb / "runbooks" / "deploys" / "index.md"
    deploys.write_text(deploys.read_text().replace("Releasing and rolling back the billing service.",
                                                   "How releases go out.", 1))
    commit("new intro")
    assert stale() == []  # the runbooks index keeps the words its entry has
    runbooks = kb / "runbooks" / "index.md"
    runbooks.write_text(runbooks.read_text().replace("Releasing and rolling back the billing service.",
                                                     "Concepts under deploys/.", 1))
    commit("stock sentence")
    assert stale() == ["runbooks/index.md"]  # a stock sentence takes the subfolder's intro
    git("reset", "-q", "--hard", "HEAD~2", cwd=repo)
    (kb / "more").mkdir()
    (kb / "more" / "x.md").write_text(note("X", "An extra."))
    commit("a folder")
    assert stale() == ["index.md", "more/index.md"]
    git("reset", "-q", "--hard", "HEAD~1", cwd=repo)
    decisions = kb / "decisions" / "index.md"
    decisions.write_text(decisions.read_text() + "\n")
    commit("a blank line")
    assert stale() == ["decisions/index.md"]


def test_index_commits_once_and_restores_the_clean_bytes(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, FIXTURES / "kb-broken-index-omission")
    before = head(git, repo)
    out = okfgit("index", "--scope", "project", cwd=repo).out
    assert out.startswith(f"project: regenerated 1 index file in {kb} (")
    assert git("rev-parse", "HEAD~1", cwd=repo).out.strip() == before
    assert git("show", "--name-only", "--format=", "HEAD", cwd=repo).out.split() == [".okf/decisions/index.md"]
    assert (kb / "decisions" / "index.md").read_bytes() == (FIXTURES / "kb-clean" / "decisions" / "index.md").read_bytes()
    assert git("show", "HEAD:.okf/decisions/index.md", cwd=repo).out == (kb / "decisions" / "index.md").read_text()
    trailers = trailers_by_git(git, repo)
    assert trailers[:2] == [("Okf-Operation", "index"), ("Okf-Tool", "okfgit 0.1.0")]
    assert git("log", "-1", "--format=%s", cwd=repo).out.strip() == "okf: regenerate 1 index file"
    assert git("status", "--porcelain", cwd=repo).out == ""
    fsck(git, repo)
    again = okfgit("index", "--scope", "project", cwd=repo).out
    assert again.startswith("project: every index is up to date")
    assert git("rev-parse", "HEAD~1", cwd=repo).out.strip() == before
    okfgit("doctor", cwd=repo, expect=0)


def test_intro_survives_and_output_is_deterministic(tmp_path: Path, git: Runner, okfgit: Runner) -> None:
    intro = "# Decisions\n\nWhy things are the way they are.\n\n* Hand-written bullets stay.\n"
    files = {
        "decisions/zeta.md": note("Zeta", "The last one."),
        "decisions/alpha.md": note("Alpha [draft]", "The first one."),
        "decisions/index.md": intro + "\n- [Zeta](zeta.md) \u2014 Old words.\n- [Gone](gone.md)\n",
        "decisions/storage/db.md": note("Database", "We use one database."),
        "decisions/storage/index.md": "# Storage\n\nWhere the data lives.\n",
        "index.md": "# Our knowledge\n\nStart here.\n",
    }
    outputs = []
    for name in ("one", "two"):
        repo = tmp_path / name
        repo.mkdir()
        git("init", "-q", "-b", "main", cwd=repo)
        kb_repo(repo, git, files=files)
        okfgit("index", cwd=repo)
        outputs.append(git("rev-parse", "HEAD:.okf", cwd=repo).out)
        fsck(git, repo)
    assert outputs[0] == outputs[1]  # same tree, byte for byte
    kb = tmp_path / "one" / ".okf"
    assert (kb / "decisions" / "index.md").read_text() == (
        intro + "\n"
        f"- [Alpha (draft)](alpha.md) {DASH} The first one.\n"
        f"- [Zeta](zeta.md) {DASH} The last one.\n"
        f"- [storage](storage/index.md) {DASH} Where the data lives.\n"
    )
    assert (kb / "index.md").read_text() == (
        '---\nokf_version: "0.2"\n---\n\n# Our knowledge\n\nStart here.\n\n'
        f"- [decisions](decisions/index.md) {DASH} Why things are the way they are.\n"
    )


def test_subfolder_descriptions_are_kept(repo: Path, okfgit: Runner, git: Runner) -> None:
    # OKF's own entry form (OKF section 8, the reference implementation): kept as written.
    root = "# Subdirectories\n\n* [tables](tables/index.md) - Every table of the dataset, one per file.\n"
    tables = "# BigQuery Table\n\n* [Orders](orders.md) - One row per order.\n"
    kb = kb_repo(repo, git, files={"index.md": root, "tables/orders.md": note("Orders", "One row per order."),
                                   "tables/index.md": tables})
    before = head(git, repo)
    okfgit("index", "--check", cwd=repo, expect=0)
    okfgit("index", cwd=repo)
    assert head(git, repo) == before
    assert (kb / "index.md").read_text() == root
    assert (kb / "tables" / "index.md").read_text() == tables


def test_needs_merge_siblings_and_symlinks_are_not_listed(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, files={
        "a.md": note("A", "The master."),
        "a.needs-merge.md": note("A", "The agent's variant."),
        "index.md": "# Knowledge\n",
    })
    (kb / "link.md").symlink_to("a.md")
    git("add", ".okf/link.md", cwd=repo)
    git("commit", "-q", "-m", "link", cwd=repo)
    okfgit("index", cwd=repo)
    text = (kb / "index.md").read_text()
    assert f"- [A](a.md) {DASH} The master.\n" in text
    assert "needs-merge" not in text and "link.md" not in text


def test_a_name_no_link_can_hold_as_written_is_listed_once_percent_encoded(repo: Path, okfgit: Runner,
                                                                            git: Runner) -> None:
    """A space, a parenthesis, an angle bracket or a line break would end or break the link, and
    ``%``, ``#``, ``?`` or a scheme-like ``a:`` would be read as something else: the entry was
    not read back as a link, and each `okfgit index` added it again."""
    names = {"my file": "my%20file", "a(b)": "a%28b%29", "x>y": "x%3Ey", "new\nline": "new%0Aline",
             "p%20q": "p%2520q", "c#": "c%23", "why?": "why%3F", "note:x": "./note:x"}
    kb_repo(repo, git, files={f"{name}.md": note(name.replace("\n", " "), "Named oddly.") for name in names})
    okfgit("index", cwd=repo)
    okfgit("index", cwd=repo)  # nothing left to add
    entries = [line for line in (repo / ".okf" / "index.md").read_text().splitlines() if line.startswith("- [")]
    assert sorted(entries) == sorted(f"- [{name.replace(chr(10), ' ')}]({target}.md) {DASH} Named oddly."
                                     for name, target in names.items())
    okfgit("index", "--check", cwd=repo, expect=0)
    doctor = okfgit("doctor", "--scope", "project", cwd=repo, expect=None).out
    assert "index-omission" not in doctor and "index-entry-not-link" not in doctor and "dangling" not in doctor


def test_dry_run_shows_the_diff_and_writes_nothing(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, FIXTURES / "kb-broken-index-omission")
    before = head(git, repo)
    out = okfgit("index", "--dry-run", cwd=repo).out
    assert "# commit in project (" in out
    assert "#   okf: regenerate 1 index file" in out
    assert f"+- [Retry failed charges with backoff](retry-policy.md) {DASH} A failed card charge" in out
    assert head(git, repo) == before
    assert git("status", "--porcelain", cwd=repo).out == ""


def test_one_commit_per_tier(repo: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    kb_repo(repo, git, FIXTURES / "kb-broken-index-omission")
    okfgit("init", "--scope", "global", cwd=repo)
    gdir = home / ".local" / "share" / "okf"
    (gdir / "tabs.md").write_text(note("Tabs", "Indent with tabs."))
    git("add", "tabs.md", cwd=gdir)
    git("commit", "-q", "-m", "by hand", cwd=gdir)
    out = okfgit("index", cwd=repo).out.splitlines()
    assert out[0].startswith("project: regenerated 1 index file")
    assert out[1].startswith("global: regenerated 1 index file")
    for where in (repo, gdir):
        assert trailers_by_git(git, where)[0] == ("Okf-Operation", "index")
        fsck(git, where)
    assert f"- [Tabs](tabs.md) {DASH} Indent with tabs." in (gdir / "index.md").read_text()


def test_refuses_to_overwrite_an_uncommitted_index_edit(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, FIXTURES / "kb-broken-index-omission")
    page = kb / "decisions" / "index.md"
    page.write_text(page.read_text() + "\nmy unsaved words\n")
    before = head(git, repo)
    err = okfgit("index", cwd=repo, expect=3).err
    assert "uncommitted edits in .okf/decisions/index.md" in err
    assert page.read_text().endswith("my unsaved words\n")
    assert head(git, repo) == before


def test_tier_without_a_kb_is_skipped(repo: Path, okfgit: Runner) -> None:
    out = okfgit("index", cwd=repo).out
    assert f"note: project tier skipped: no knowledge base at HEAD in {repo / '.okf'}" in out
    assert okfgit("index", "--check", cwd=repo, expect=0).code == 0


# -- the outro: hand-written lines below the entry list ------------------------------------

OUTRO = (
    "- [Docs](https://example.com) \u2014 external docs\n"
    "\n"
    "## Notes\n"
    "\n"
    "Ask the on-call person before changing anything here.\n"
)


def index_findings(okfgit: Runner, repo: Path) -> list[str]:
    """Doctor's findings about index files (the concepts of these tests lack profile keys)."""
    report = json.loads(okfgit("doctor", "--json", cwd=repo, expect=2).out)
    return [f"{f['file']}: {f['code']}" for t in report["tiers"] for g in ("okf", "profile")
            for f in t[g]["findings"] if f["code"].startswith(("index-", "orphan", "link-"))]


def test_new_keeps_the_lines_below_the_entry_list(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, files={
        "a.md": note("A", "The first."),
        "index.md": f'---\nokf_version: "0.2"\n---\n\n# Knowledge\n\n- [A](a.md) {DASH} The first.\n' + OUTRO,
    })
    okfgit("new", "n1", "--description", "N.", "--no-edit", cwd=repo)
    assert (kb / "index.md").read_text() == (
        f'---\nokf_version: "0.2"\n---\n\n# Knowledge\n\n- [A](a.md) {DASH} The first.\n'
        f"- [N1](n1.md) {DASH} N.\n" + OUTRO
    )
    assert okfgit("index", "--check", cwd=repo, expect=0).out.startswith("project: every index is up to date")
    assert index_findings(okfgit, repo) == []


def test_a_persons_index_keeps_its_words_drops_what_is_gone_and_gains_what_is_missing(
        repo: Path, okfgit: Runner, git: Runner) -> None:
    # It lists a concept of another folder: a person's index, not okfgit's own list.
    page = (
        "# Decisions\n\nWhy.\n\n"
        f"- [Zeta](zeta.md) {DASH} Old words.\n"
        "- [Handbook](https://example.com/handbook) - the company handbook\n"
        f"- [Gone](gone.md) {DASH} A concept deleted long ago.\n"
        "* [Schema](schema.sql) - the DDL, kept next to the concepts\n"
        "\n"
        "## See also\n"
        "\n"
        f"- [Other](../other/o.md) {DASH} listed in its own folder.\n"
        "\n"
        "Prose that links [Zeta](zeta.md) stays, as does [the root](../index.md).\n"
        "\n"
        "```\n- [Code](zeta.md) in a fence is not an entry\n```\n"
    )
    kb = kb_repo(repo, git, files={
        "decisions/zeta.md": note("Zeta", "The last one."),
        "decisions/alpha.md": note("Alpha", "The first one."),
        "decisions/schema.sql": "create table t (id int);\n",
        "decisions/index.md": page,
        "other/o.md": note("Other", "Elsewhere."),
        "index.md": "# Knowledge\n",
    })
    okfgit("index", cwd=repo)
    assert (kb / "decisions" / "index.md").read_text() == (
        "# Decisions\n\nWhy.\n\n"
        f"- [Alpha](alpha.md) {DASH} The first one.\n"
        f"- [Zeta](zeta.md) {DASH} Old words.\n"
        "- [Handbook](https://example.com/handbook) - the company handbook\n"
        "* [Schema](schema.sql) - the DDL, kept next to the concepts\n"
        "\n"
        "## See also\n"
        "\n"
        f"- [Other](../other/o.md) {DASH} listed in its own folder.\n"
        "\n"
        "Prose that links [Zeta](zeta.md) stays, as does [the root](../index.md).\n"
        "\n"
        "```\n- [Code](zeta.md) in a fence is not an entry\n```\n"
    )
    before = head(git, repo)
    assert okfgit("index", cwd=repo).out.startswith("project: every index is up to date")
    assert head(git, repo) == before
    okfgit("index", "--check", cwd=repo, expect=0)
    assert index_findings(okfgit, repo) == []


def test_an_index_in_another_form_keeps_it_and_gains_missing_entries(repo: Path, okfgit: Runner,
                                                                     git: Runner) -> None:
    # The shape OKF's reference generator writes: one heading per type, "* [T](p) - d", then
    # "Subdirectories". okfgit keeps the form and the grouping, fixes what is stale, drops
    # what is gone and adds what is missing in that form, under the heading of its type.
    kb = kb_repo(repo, git, files={
        "refs/a.md": note("A", "One."),
        "refs/c.md": note("C", "Three."),
        "refs/t.md": "---\ntype: BigQuery Table\ntitle: T\ndescription: A table.\n---\nBody.\n",
        "refs/sub/b.md": note("B", "Two."),
        "refs/sub/index.md": "# Sub\n\nThe sub folder.\n",
        "refs/more/d.md": note("D", "Four."),
        "refs/index.md": ("# Note\n\n* [A](a.md) - Old words.\n* [Gone](gone.md) - Deleted.\n\n"
                          "# Subdirectories\n\n* [sub](sub/index.md) - Below.\n\nA closing remark.\n"),
        "index.md": "# Knowledge\n",
    })
    okfgit("index", cwd=repo)
    assert (kb / "refs" / "index.md").read_text() == (  # the entry's own words are the bundle's: kept
        "# Note\n\n* [A](a.md) - Old words.\n* [C](c.md) - Three.\n\n"
        "# Subdirectories\n\n* [more](more/index.md) - Concepts under more/.\n* [sub](sub/index.md) - Below.\n\n"
        "A closing remark.\n\n# BigQuery Table\n\n* [T](t.md) - A table.\n")
    assert (kb / "refs" / "more" / "index.md").read_text().startswith("# More\n\n- [D](d.md) \u2014 Four.")
    okfgit("index", "--check", cwd=repo, expect=0)


def test_an_ungrouped_list_in_another_form_gains_entries_after_its_last(repo: Path, okfgit: Runner,
                                                                       git: Runner) -> None:
    kb = kb_repo(repo, git, files={
        "a.md": note("A", "One."), "b.md": note("B", "Two."), "z.md": note("Z", "Last."),
        "index.md": "# Start\n\nRead these first.\n\n* [Z](z.md) - Last.\n* [B](b.md) - Two.\n\nThe end.\n",
    })
    okfgit("index", cwd=repo)
    assert (kb / "index.md").read_text() == ("# Start\n\nRead these first.\n\n* [Z](z.md) - Last.\n"
                                             "* [B](b.md) - Two.\n* [A](a.md) - One.\n\nThe end.\n")


def test_crlf_intro_and_outro_keep_their_bytes(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, files={"a.md": note("A", "The first."), "b.md": note("B", "The second.")})
    crlf = (b"# Knowledge\r\n\r\nStart here.\r\n\r\n- [A](a.md) \xe2\x80\x94 The first.\r\n"
            b"\r\n## Notes\r\n\r\nKept.\r\n")
    (kb / "index.md").write_bytes(crlf)
    git("add", ".okf/index.md", cwd=repo)
    git("commit", "-q", "-m", "crlf", cwd=repo)
    okfgit("index", cwd=repo)
    assert (kb / "index.md").read_bytes() == (
        b'---\r\nokf_version: "0.2"\r\n---\r\n\r\n# Knowledge\r\n\r\nStart here.\r\n\r\n'
        b"- [A](a.md) \xe2\x80\x94 The first.\r\n- [B](b.md) \xe2\x80\x94 The second.\r\n"
        b"\r\n## Notes\r\n\r\nKept.\r\n")
    before = head(git, repo)
    okfgit("index", "--check", cwd=repo, expect=0)
    okfgit("index", cwd=repo)
    assert head(git, repo) == before


def test_capture_keeps_the_outro_of_the_indexes_it_refreshes(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str], home: Path) -> None:
    from tests.test_capture import CURRENT, memory, write_memory

    kb = project / ".okf"
    root = (kb / "index.md").read_text().rstrip("\n") + "\n\n" + OUTRO
    (kb / "index.md").write_text(root)
    git("add", ".okf/index.md", cwd=project)
    git("commit", "-q", "-m", "notes", cwd=project)
    mem = memory(project, env, home)
    write_memory(mem, "feedback_testing.md", CURRENT)
    okfgit("sync", cwd=project)
    text = (kb / "index.md").read_text()
    assert text.endswith(f"- [memory](memory/index.md) {DASH} Concepts under memory/.\n" + OUTRO), text


def test_promote_keeps_the_outro_of_an_emptied_folder(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "global", cwd=project)
    okfgit("new", "tabs", "--dir", "style", "--description", "D.", "--no-edit", cwd=project)
    page = project / ".okf" / "style" / "index.md"
    page.write_text(f"# Style\n\n- [Tabs](tabs.md) {DASH} D.\n" + OUTRO)
    git("commit", "-q", "-am", "outro", cwd=project)
    okfgit("promote", "tabs", "--from", "project", "--to", "global", cwd=project)
    assert page.read_text() == "# Style\n\n" + OUTRO


def test_index_removes_the_index_of_a_folder_with_no_concept_left(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "cache", "--dir", "decisions", "--description", "Caches live in Redis.", "--no-edit", cwd=project)
    okfgit("new", "tabs", "--description", "Tabs, not spaces.", "--no-edit", cwd=project)
    git("rm", "-q", ".okf/decisions/cache.md", cwd=project)
    git("commit", "-q", "-m", "the last decision goes", cwd=project)
    assert "decisions/index.md:3: error: index-entry-dangling: " in okfgit("doctor", cwd=project, expect=2).out
    assert okfgit("index", "--check", cwd=project, expect=2).out.startswith(
        "project: stale .okf/decisions/index.md\nproject: stale .okf/index.md\n")
    okfgit("index", cwd=project)
    assert not (project / ".okf" / "decisions").exists()
    assert "- .okf/decisions/index.md (removed: its folder has no concept left)" not in git(
        "log", "-1", "--format=%B", cwd=project).out
    assert "- decisions/index.md (removed: its folder has no concept left)" in git("log", "-1", "--format=%B",
                                                                                    cwd=project).out
    okfgit("doctor", cwd=project)
    assert "every index is up to date" in okfgit("index", "--check", cwd=project).out


def test_an_orphaned_index_of_an_emptied_folder_is_removed_too(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "cache", "--dir", "decisions", "--description", "Caches live in Redis.", "--no-edit", cwd=project)
    git("rm", "-q", ".okf/decisions/cache.md", cwd=project)
    git("commit", "-q", "-m", "the last decision goes", cwd=project)
    okfgit("new", "tabs", "--description", "Tabs, not spaces.", "--no-edit", cwd=project)  # its index drops decisions/
    doctor = okfgit("doctor", cwd=project, expect=2).out
    assert "decisions/index.md: error: orphan: not reachable from the root index: index.md has no entry for " \
           "decisions/ (its folder has no concept left: run `okfgit index`, which removes it)" in doctor
    okfgit("index", cwd=project)
    assert not (project / ".okf" / "decisions").exists()
    okfgit("doctor", cwd=project)


def test_an_emptied_folders_index_with_a_persons_words_keeps_them(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "cache", "--dir", "decisions", "--description", "Caches live in Redis.", "--no-edit", cwd=project)
    page = project / ".okf" / "decisions" / "index.md"
    page.write_text(page.read_text().replace("# Decisions\n", "# Decisions\n\nAsk the architects first.\n"))
    git("commit", "-q", "-am", "words", cwd=project)
    git("rm", "-q", ".okf/decisions/cache.md", cwd=project)
    git("commit", "-q", "-m", "the last decision goes", cwd=project)
    okfgit("index", cwd=project)
    assert page.read_text() == "# Decisions\n\nAsk the architects first.\n"
    doctor = okfgit("doctor", cwd=project, expect=2).out
    assert "index-entry-dangling" not in doctor
    assert "decisions/ (its folder has no concept left and it holds a person's words: move what is worth keeping " \
           "elsewhere, then delete it)" in doctor


_LINES = ["# T", "## Notes", "", "  ", "Prose.", f"- [A](a.md) {DASH} x", "* [B](b.md) - y",
          f"- [Docs](https://e.com) {DASH} d", "- [S](sub/index.md)", "- [L](log.md)", "- plain bullet", "```",
          "~~~", "1. [N](n.md)", "  - [nested](a.md)", "- [[wiki]]", "- [X](../x.md)", "---", "text\r"]


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(_LINES), max_size=12), st.sampled_from(["\n", "\r\n"]), st.sampled_from(["", "f"]))
def test_regeneration_is_stable_and_keeps_every_line_it_does_not_own(lines: list[str], newline: str,
                                                                      folder: str) -> None:
    text = newline.join(lines) + newline
    source = index.index_path(folder)
    items = {"a.md": index.Item("A", "x"), "z.md": index.Item("Z", "")}
    page = index.read_page(text.encode(), source, {"sub"})
    once = index.rebuild(folder, page, items, {"sub": "s"})
    twice = index.rebuild(folder, index.read_page(once, source, {"sub"}), items, {"sub": "s"})
    assert once == twice
    owned = {line.number - 1 for line in page.entries}
    kept = [line for n, line in enumerate(text.split(newline)) if n not in owned and line.strip()
            and not line.startswith("#")]  # a heading goes only with a section of owned entries
    written = iter(once.decode().split(newline))
    assert all(any(line == out for out in written) for line in kept), (text, once)


def test_the_root_index_frontmatter_is_read_by_the_one_fence_rule() -> None:
    """A closing fence with a trailing space (okf.fences): the heading goes after the
    frontmatter, which keeps its bytes, and no second frontmatter is added."""
    text = b'---\r\nokf_version: "0.2"\r\n--- \r\n\r\nIntro.\r\n'
    once = index.rebuild("", index.read_page(text, "index.md", set()), {"a.md": index.Item("A", "x")}, {})
    assert once == f'---\r\nokf_version: "0.2"\r\n--- \r\n\r\n# Knowledge base\r\n\r\nIntro.\r\n\r\n' \
                   f"- [A](a.md) {DASH} x\r\n".encode()


def test_an_unclosed_fence_is_code_to_the_end_and_regeneration_closes_it() -> None:
    """Every reader takes a fence never closed as code to the end (CommonMark): the list after
    it is not an entry list. Regeneration closes the fence after the intro, so the entries it
    writes are a list, and a second run finds them."""
    text = f"# Notes\n\n````sh\nmake\n\n- [A](a.md) {DASH} x\n"
    page = index.read_page(text.encode(), "index.md", set())
    assert page.entries == [] and index.entry_lines(text) == []
    items = {"a.md": index.Item("A", "x")}
    once = index.rebuild("", page, items, {})
    assert once.decode().endswith(f"````sh\nmake\n\n- [A](a.md) {DASH} x\n````\n\n- [A](a.md) {DASH} x\n")
    again = index.read_page(once, "index.md", set())
    assert [line.target for line in again.entries] == ["a.md"]
    assert index.rebuild("", again, items, {}) == once


def test_doctor_and_index_agree_on_an_unclosed_fence(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, files={
        "a.md": note("A", "The first."),
        "index.md": f'---\nokf_version: "0.2"\n---\n\n# Knowledge\n\n```\nan example\n\n- [A](a.md) {DASH} The first.\n',
    })
    assert index_findings(okfgit, repo) == ["index.md: index-omission"]  # the list is inside the fence
    okfgit("index", "--check", cwd=repo, expect=2)
    okfgit("index", cwd=repo)
    assert okfgit("index", "--check", cwd=repo, expect=0).out.startswith("project: every index is up to date")
    assert index_findings(okfgit, repo) == []


class _Blob:
    is_link = False


class _Tree:
    """A KB in memory: what ``index.regenerate`` reads."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.entries = {path: _Blob() for path in files}

    def blob(self, path: str) -> bytes:
        return self.files[path]


_FOLDERS = ["", "sub", "sub/deep", "other"]
_TITLES = ["A", "B [x]", "C"]


@st.composite
def _kbs(draw: st.DrawFn) -> dict[str, bytes]:
    """A few concepts in a few folders, each folder's index absent, current, current with an
    edit (a line added, a title changed, a line dropped), or made of arbitrary lines."""
    files: dict[str, bytes] = {}
    for n, folder in enumerate(_FOLDERS):
        for name in draw(st.lists(st.sampled_from(["a.md", "b.md", "c.md"]), max_size=2, unique=True)):
            title = draw(st.sampled_from(_TITLES))
            path = f"{folder}/{name}" if folder else name
            files[path] = f"---\ntype: Note\ntitle: {title}\ndescription: D{n}.\n---\nbody\n".encode()
    current = index.regenerate(_Tree(files))
    for folder in _FOLDERS:
        path = index.index_path(folder)
        kind = draw(st.sampled_from(["absent", "current", "edited", "lines"]))
        if kind == "lines":
            files[path] = ("\n".join(draw(st.lists(st.sampled_from(_LINES + ["- [sub](sub)", "Intro."]), max_size=8)))
                           + "\n").encode()
        elif kind != "absent" and path in current:
            text = current[path].decode()
            if kind == "edited":
                lines = text.split("\n")
                at = draw(st.integers(0, len(lines)))
                edit = draw(st.sampled_from(["add", "drop", "retitle"]))
                if edit == "add":
                    lines.insert(at, draw(st.sampled_from(_LINES + ["- [sub](sub)"])))
                elif edit == "drop" and at < len(lines):
                    del lines[at]
                else:
                    lines = [line.replace("[A]", "[Z]", 1) for line in lines]
                text = "\n".join(lines)
            files[path] = text.encode()
    return files


@settings(max_examples=examples(300), deadline=None)
@given(_kbs())
def test_summaries_never_change_what_regeneration_writes(files: dict[str, bytes]) -> None:
    """An index whose summary (a function of its blob) says it is what regeneration writes is
    skipped: with every index summarised, regeneration writes exactly what it writes reading
    every index, whatever the indexes and concepts hold."""
    tree = _Tree(files)
    plain = index.regenerate(tree)
    summarised = index.regenerate(tree, summaries=lambda path: index.summarize(tree.blob(path), path))
    assert summarised == plain
    after = _Tree({**files, **plain})  # mostly current indexes: most are skipped
    assert index.regenerate(after, summaries=lambda path: index.summarize(after.blob(path), path)) == \
        index.regenerate(after)
