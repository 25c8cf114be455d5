"""The review's markdown as a pull request comment: bounded, escaped, and showing what is accepted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from okfgit.format.findings import ERROR, WARNING, Finding
from okfgit.render.review import as_markdown
from okfgit.verbs.review import ConceptChange, Review
from tests.conftest import Runner

LIMIT = 60_000


def _concept(folder: int, n: int, body: str, okf_id: str | None = None) -> str:
    okf_id = okf_id or f"{folder:08x}-0000-4000-8000-{n:012x}"
    return (f"---\ntype: Lesson\ntitle: Lesson {folder}-{n}\ndescription: What lesson {folder}-{n} teaches, in a "
            f"sentence long enough to look like a real one.\nscope: project\nokf_id: {okf_id}\nokf_source: authored\n"
            f"---\n\n# Lesson {folder}-{n}\n\n{body}\n")


def _write(repo: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        full = repo / ".okf" / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)


def _big_kb(repo: Path, git: Runner, okfgit: Runner, changed: int) -> None:
    """main: ``changed // 2`` concepts in 20 folders; feature: each of them modified, as many added."""
    half = changed // 2
    okfgit("init", "--scope", "project", cwd=repo)
    _write(repo, {f"area-{i % 20}/old-{i}.md": _concept(i % 20, i, "Line one.\n\nLine two.") for i in range(half)})
    git("add", "-A", ".okf", cwd=repo)
    git("commit", "-q", "-m", "a big knowledge base", cwd=repo)
    okfgit("index", cwd=repo)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    files = {f"area-{i % 20}/old-{i}.md": _concept(i % 20, i, "Line one, changed.\n\nLine two.") for i in range(half)}
    files.update({f"area-{i % 20}/new-{i}.md": _concept(i % 20, 100_000 + i, "A new lesson.\n\n" + "Detail. " * 40)
                  for i in range(half)})
    _write(repo, files)
    git("add", "-A", ".okf", cwd=repo)
    git("commit", "-q", "-m", "a thousand changes", cwd=repo)
    okfgit("index", cwd=repo)


def _block(markdown: str) -> dict:
    assert markdown.endswith("\n```\n")
    return json.loads(markdown.rsplit("```okf-review\n", 1)[1][: -len("```\n")])


def test_a_thousand_changes_fit_one_comment(repo: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    _big_kb(repo, git, okfgit, 1000)
    full_file = tmp_path / "full.md"
    result = okfgit("review", "--format", "markdown", "--output", str(full_file), cwd=repo)
    out = result.out
    assert len(out) < LIMIT, len(out)
    assert out.startswith("## okfgit review: merge\n")
    assert "shortened to stay within GitHub's size limit" in out and "okfgit review --full" in out
    block = _block(out)
    assert block["verdict"] == "merge" and block["findings"] == []
    assert block["counts"] == {"added": 500, "modified": 500, "removed": 0, "renamed": 0}
    assert len(block["concepts"]) + block["omitted"]["concepts"] == 1000
    # as many concepts as fit are named, one line each, and the comment says how to see the rest
    named = int(re.search(r"^(\d+) of 1000 concepts, those with findings first:$", out, re.M).group(1))
    assert named >= 300 and out.count("\n- added `") + out.count("\n- modified `") == named
    assert f"… and {1000 - named} more concepts: `okfgit review --full`" in out
    # the unbounded report, for the artifact: every concept's detail and the whole block
    full = full_file.read_text()
    assert len(full) > LIMIT and full == okfgit("review", "--format", "markdown", "--full", cwd=repo).out
    assert full.count("\n#### ") == 1000 and len(_block(full)["concepts"]) == 1000
    assert "omitted" not in _block(full)


def test_many_findings_still_fit_with_a_complete_block(repo: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "project", cwd=repo)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    # 800 concepts no index lists, each with a dangling link: two errors apiece
    _write(repo, {f"area-{i % 8}/c-{i}.md": _concept(i % 8, i, f"See [the missing page](missing-{i}.md).")
                  for i in range(800)})
    git("add", "-A", ".okf", cwd=repo)
    git("commit", "-q", "-m", "unindexed and dangling", cwd=repo)
    out = okfgit("review", "--format", "markdown", cwd=repo, expect=2).out
    assert len(out) < LIMIT
    block = _block(out)
    assert block["verdict"] == "request-changes"
    everything = json.loads(okfgit("review", "--format", "json", cwd=repo, expect=2).out)["findings"]
    assert len(everything) > 800
    assert len(block["findings"]) + block["omitted"]["findings"] == len(everything)
    assert block["findings"] == everything[: len(block["findings"])]
    assert "more findings" in out


def test_concept_text_is_escaped(project: Path, okfgit: Runner, git: Runner) -> None:
    git("checkout", "-q", "-b", "feature", cwd=project)
    okfgit("new", "pinging", "--title", "Ask @octocat <b>now</b>", "--no-edit",
           "--description", "Ping @octocat and @org/team; mail me@example.com. <img src=x onerror=alert(1)>",
           cwd=project)
    out = okfgit("review", "--format", "markdown", cwd=project).out
    prose = out.rsplit("```okf-review\n", 1)[0]
    # fenced code shows text as it is (no mention, no HTML there); everywhere else it is escaped
    outside = re.sub(r"\n(`{3,})markdown\n.*?\n\1\n", "\n", prose, flags=re.S)
    assert "```markdown\n" in prose and "@octocat" not in outside.replace("`@octocat", "")
    assert "Ask @&#8203;octocat &lt;b&gt;now&lt;/b&gt;" in prose
    assert "@&#8203;org/team" in prose and "me@example.com" in prose
    assert "<img" not in outside and "&lt;img src=x onerror=alert(1)&gt;" in outside


def test_added_bodies_and_backlinks_are_shown(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "target", "--description", "The target.", "--no-edit", cwd=project)
    okfgit("new", "fan", "--description", "Links to the target.", "--no-edit", cwd=project)
    fan = project / ".okf" / "fan.md"
    fan.write_text(fan.read_text() + "\nSee [target](target.md).\n")
    git("commit", "-q", "-am", "link", cwd=project)
    git("checkout", "-q", "-b", "feature", cwd=project)
    target = project / ".okf" / "target.md"
    target.write_text(target.read_text() + "\nA new paragraph with ```` four ticks.\n")
    git("commit", "-q", "-am", "edit the target", cwd=project)
    okfgit("new", "fresh", "--description", "A fresh lesson.", "--no-edit", cwd=project)
    fresh = project / ".okf" / "fresh.md"
    fresh.write_text(fresh.read_text() + "\nThe body of the fresh lesson, <details>not rendered</details>.\n")
    git("commit", "-q", "-am", "fill it", cwd=project)
    data = json.loads(okfgit("review", "--format", "json", cwd=project).out)
    by_path = {c["path"]: c for c in data["concepts"]}
    assert "The body of the fresh lesson" in by_path["fresh.md"]["body"]
    assert by_path["target.md"]["linked_from"] == ["fan.md"]
    md = okfgit("review", "--format", "markdown", cwd=project).out
    assert "<details><summary>content</summary>\n\n```markdown\n" in md
    assert "Linked from: `fan.md`." in md
    assert "`````diff\n" in md  # the fence outlasts the four backticks in the diff
    text = okfgit("review", cwd=project).out
    assert "The body of the fresh lesson" not in text and "linked from: fan.md" in text
    assert "The body of the fresh lesson" in okfgit("review", "--verbose", cwd=project).out


def test_an_output_file_that_cannot_be_written_is_exit_3_and_nothing_else_changes(
        repo: Path, okfgit: Runner, git: Runner) -> None:
    _big_kb(repo, git, okfgit, 2)
    blocker = repo / "README.md"
    result = okfgit("review", "--output", str(blocker / "full.md"), cwd=repo, expect=3)
    assert f"cannot write {blocker / 'full.md'}" in result.err
    assert blocker.read_text() == "# proj\n"


def _harvest_of(project: Path, okfgit: Runner, git: Runner, n: int) -> list[tuple[str, str, str]]:
    """A run with ``n`` notes (one commit), promoted with --branch okf/harvest: (path, title, description) each."""
    okfgit("run", "start", "r1", cwd=project)
    job = project / "runstate" / "r1" / "okf"
    notes = []
    for i in range(n):
        title = f"Warm the build cache before timing run {i:04d}"
        claim = f"Timing run {i:04d} varied threefold until its build cache was warmed by one untimed pass first."
        path = f"notes/warm-cache-{i:04d}.md"
        (job / path).write_text(
            f"---\ntype: Lesson\ntitle: {title}\ndescription: {claim}\nscope: job\n"
            f"okf_id: 00000000-0000-4000-8000-{i:012d}\nokf_source: authored\ngeneralizes: 'yes'\n"
            f"---\n\n# {title}\n\n{claim}\n\n## Why\n\n" + "Cold caches read every page from disk. " * 20 + "\n")
        notes.append((path, title, claim))
    git("add", "-A", cwd=job)
    git("commit", "-q", "-m", "many notes", cwd=job)
    okfgit("index", "--scope", "job", cwd=project)
    okfgit("promote", *[p for p, _, _ in notes], "--branch", "okf/harvest", cwd=project)
    git("checkout", "-q", "okf/harvest", cwd=project)
    return notes


def test_a_300_concept_harvest_names_every_concept(project: Path, okfgit: Runner, git: Runner) -> None:
    notes = _harvest_of(project, okfgit, git, 300)
    out = okfgit("review", "--format", "markdown", cwd=project).out
    assert len(out) <= LIMIT, len(out)
    assert "one line per concept" in out
    # every concept a reviewer must approve is there: its path, type, title and claim
    for path, title, claim in notes:
        assert f"- added `{path}` · Lesson: **{title}** — {claim}" in out
    block = _block(out)  # last, and complete JSON
    assert block["verdict"] == "merge" and block["head"] == git("rev-parse", "HEAD", cwd=project).out.strip()
    assert block["counts"] == {"added": 300, "modified": 0, "removed": 0, "renamed": 0}
    assert len(block["concepts"]) + block.get("omitted", {}).get("concepts", 0) == 300
    assert block["concepts"][:2] == ["00000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000001"]


@pytest.mark.parametrize(("concepts", "severity"), [(800, ERROR), (3000, WARNING)])
def test_a_comment_never_passes_the_limit(concepts: int, severity: str) -> None:
    """However many concepts and findings, the comment stays within LIMIT and ends with the
    complete block: the concept lines that fit are counted with what surrounds them (800
    concepts with an error each once came to 60,012 characters)."""
    paths = [f"area-{i % 8}/c-{i}.md" for i in range(concepts)]
    review = Review("a" * 40, "b" * 40, "main...HEAD", findings=[
        Finding("dangling-link", severity, paths[i % concepts], f"links to missing-{i}.md, which does not exist", 9,
                "profile") for i in range(2047)])
    review.concepts = [ConceptChange("added", path, None, f"{i:08x}-0000-4000-8000-{i:012x}", "Lesson", f"Lesson {i} ",
                                     f"What lesson {i} teaches, in a sentence long enough to look like a real one.",
                                     "c" * 40, None) for i, path in enumerate(paths)]
    out = as_markdown(review)
    assert len(out) <= LIMIT, len(out)
    block = _block(out)
    assert len(block["concepts"]) + block["omitted"]["concepts"] == concepts
    assert len(block["findings"]) + block["omitted"]["findings"] == 2047
