from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import FIXTURES, Runner, fsck, trailers_by_git

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
    kb = kb_repo(repo, git, files={
        "index.md": "# Subdirectories\n\n* [tables](tables/index.md) - Every table of the dataset, one per file.\n",
        "tables/orders.md": note("Orders", "One row per order."),
        "tables/index.md": "# BigQuery Table\n\n* [Orders](orders.md) - One row per order.\n",
    })
    okfgit("index", cwd=repo)
    assert (kb / "index.md").read_text() == (
        '---\nokf_version: "0.2"\n---\n\n# Subdirectories\n\n'
        f"- [tables](tables/index.md) {DASH} Every table of the dataset, one per file.\n"
    )
    assert (kb / "tables" / "index.md").read_text() == f"# BigQuery Table\n\n- [Orders](orders.md) {DASH} One row per order.\n"


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
