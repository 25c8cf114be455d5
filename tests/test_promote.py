from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from okfgit.format import concept as okf
from tests import fake_gh
from tests.conftest import Runner, fsck, trailers_by_git

NOTE = "notes/warm-the-cache.md"


def _job(repo: Path, run: str = "r1") -> Path:
    return repo / "runstate" / run / "okf"


def _head(git: Runner, where: Path, rev: str = "HEAD") -> str:
    return git("rev-parse", rev, cwd=where).out.strip()


def _run_with_notes(project: Path, okfgit: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    okfgit("note", "--type", "Lesson", "Warm the cache", "--claim", "Benchmarks warm the cache first.",
           "--why", "Cold runs vary threefold.", "--generalizes", "yes", cwd=project)
    okfgit("note", "--type", "Blocker", "Runner lacks redis", "--generalizes", "no", cwd=project)


def _harvest(text: str) -> dict:
    return json.loads(text.split("```okf-harvest\n", 1)[1].split("\n```", 1)[0])


def test_promote_job_to_project_end_to_end(project: Path, okfgit: Runner, git: Runner) -> None:
    _run_with_notes(project, okfgit)
    job = _job(project)
    source_head = _head(git, job)
    job_blob = (job / NOTE).read_bytes()
    okf_id = okf.split(job_blob, NOTE).meta["okf_id"]
    out = okfgit("promote", "warm", cwd=project).out
    assert out.split("\n")[0] == f"promoted job/r1:{NOTE} -> project:{NOTE}"

    dest = trailers_by_git(git, project)
    assert dest == [("Okf-Operation", "promote"), ("Okf-Tool", "okfgit 0.1.0"),
                    ("Okf-Actor", "human:author@example.com"), ("Okf-Id", okf_id),
                    ("Okf-Promoted-From", f"job/r1@{source_head}:{NOTE}")]
    src = trailers_by_git(git, job)
    assert src == [("Okf-Operation", "promote"), ("Okf-Tool", "okfgit 0.1.0"),
                   ("Okf-Actor", "human:author@example.com"), ("Okf-Id", okf_id),
                   ("Okf-Promoted-To", f"project@{_head(git, project)}:{NOTE}")]

    promoted = (project / ".okf" / NOTE).read_bytes()
    assert okf.split(promoted, NOTE).meta["okf_id"] == okf_id
    # only the scope line changed
    assert sorted(set(job_blob.split(b"\n")) ^ set(promoted.split(b"\n"))) == [b"scope: job", b"scope: project"]
    assert sorted(git("show", "--name-only", "--format=", "HEAD", cwd=project).out.split()) == [
        ".okf/index.md", ".okf/notes/index.md", f".okf/{NOTE}"]
    assert "- [Warm the cache](warm-the-cache.md) \u2014 Benchmarks warm the cache first.\n" in \
        (project / ".okf" / "notes" / "index.md").read_text()
    assert not (job / NOTE).exists()
    assert "warm-the-cache" not in (job / "notes" / "index.md").read_text()
    assert "- **Promotion**: notes/warm-the-cache.md to project (" in (job / "log.md").read_text()
    assert git("status", "--porcelain", cwd=project).out == ""
    assert git("status", "--porcelain", cwd=job).out == ""
    assert okfgit("doctor", "--scope", "all", cwd=project).code == 0
    assert okfgit("index", "--check", "--scope", "all", cwd=project).code == 0
    fsck(git, project)
    fsck(git, job)
    status = json.loads(okfgit("run", "status", "--json", cwd=project).out)
    assert status["promoted"] == [{"okf_id": okf_id, "to": f"project@{_head(git, project)}:{NOTE}",
                                   "commit": _head(git, job)}]
    assert "nothing left to promote" in okfgit("run", "end", cwd=project).out


def test_promote_on_a_branch_leaves_the_checkout_alone(project: Path, okfgit: Runner, git: Runner,
                                                       tmp_path: Path) -> None:
    _run_with_notes(project, okfgit)
    (project / "app.py").write_text("print(1)\n")
    git("add", "app.py", cwd=project)
    head, branch = _head(git, project), git("symbolic-ref", "HEAD", cwd=project).out
    status = git("status", "--porcelain", cwd=project).out
    result = okfgit("promote", NOTE, "--branch", "okf/harvest-r1", cwd=project)
    assert _head(git, project) == head and git("symbolic-ref", "HEAD", cwd=project).out == branch
    assert git("status", "--porcelain", cwd=project).out == status == "A  app.py\n"
    assert not (project / ".okf" / "notes").exists()
    tip = _head(git, project, "okf/harvest-r1")
    assert _head(git, project, "okf/harvest-r1~1") == head
    job_trailers = trailers_by_git(git, _job(project))
    assert ("Okf-Promoted-To", f"project@{tip}:{NOTE}") in job_trailers
    assert job_trailers[-1] == ("Okf-Promoted-Branch", "okf/harvest-r1")

    assert "\nPR title: okf-harvest: r1\n" in result.out
    body = result.out.split("PR body:\n\n", 1)[1]
    harvest = _harvest(body)
    assert harvest["version"] == 2 and harvest["run"] == "r1" and harvest["tool"] == "okfgit 0.1.0"
    assert harvest["source"] == {"tier": "job", "run": "r1", "commit": harvest["source"]["commit"]}
    assert harvest["destination"] == {"tier": "project", "branch": "okf/harvest-r1", "commit": tip}
    [concept] = harvest["concepts"]
    assert concept["oid"] == _head(git, project, f"okf/harvest-r1:.okf/{NOTE}")
    assert concept["path"] == NOTE

    # the reviewer's side: the branch reviews clean and the PR body's claims hold
    (tmp_path / "body.md").write_text(body)
    git("checkout", "-q", "okf/harvest-r1", cwd=project)
    review = okfgit("review", "main...okf/harvest-r1", "--format", "markdown", "--pr-body",
                    str(tmp_path / "body.md"), cwd=project)
    assert review.out.startswith("## okfgit review: merge\n")
    assert "1 concept claimed; every claim matches the head tree" in review.out
    fsck(git, project)


def test_branch_json_and_dry_run(project: Path, okfgit: Runner, git: Runner) -> None:
    _run_with_notes(project, okfgit)
    heads = (_head(git, project), _head(git, _job(project)))
    shown = okfgit("promote", "warm", "--branch", "harvest", "--dry-run", cwd=project).out
    assert "# commit in project (" in shown and ") on branch harvest:" in shown
    assert "Okf-Promoted-To: project@<destination commit>:notes/warm-the-cache.md" in shown
    assert (_head(git, project), _head(git, _job(project))) == heads
    assert git("branch", "--list", "harvest", cwd=project).out == ""
    data = json.loads(okfgit("promote", "warm", "--branch", "harvest", "--json", cwd=project).out)
    assert data["destination"]["branch"] == "harvest"
    assert data["pr"]["title"] == "okf-harvest: r1"
    assert _harvest(data["pr"]["body"]) == data["pr"]["harvest"]


def _nothing_changed(git: Runner, project: Path, heads: tuple[str, str]) -> None:
    assert (_head(git, project), _head(git, _job(project))) == heads
    assert git("status", "--porcelain", cwd=project).out == ""


def test_bad_references(project: Path, okfgit: Runner, git: Runner) -> None:
    _run_with_notes(project, okfgit)
    okfgit("note", "--type", "Lesson", "Warm the disks", cwd=project)
    heads = (_head(git, project), _head(git, _job(project)))
    err = okfgit("promote", "nothing-like-it", cwd=project, expect=2).err
    assert err == "okfgit: error: no concept or file matches 'nothing-like-it' in the tiers in view (job/r1)\n"
    err = okfgit("promote", "warm", cwd=project, expect=2).err
    ids = [okf.split((_job(project) / p).read_bytes(), "x").meta["okf_id"]
           for p in (NOTE, "notes/warm-the-disks.md")]
    oids = [_head(git, _job(project), f"HEAD:{p}")[:7] for p in (NOTE, "notes/warm-the-disks.md")]
    assert err == ("okfgit: error: 'warm' is ambiguous: 2 matches; name one by tier:path or okf_id:\n"
                   f"  job/r1:{NOTE}@{oids[0]}  okf_id {ids[0]}\n"
                   f"  job/r1:notes/warm-the-disks.md@{oids[1]}  okf_id {ids[1]}\n")
    err = okfgit("promote", "warm-the-cahce", cwd=project, expect=2).err
    assert f"; did you mean: warm-the-cache (job/r1:{NOTE}@{oids[0]})" in err
    assert "says `generalizes: no`" in okfgit("promote", "runner-lacks-redis", cwd=project, expect=2).err
    assert "is the run's state" in okfgit("promote", "STATE.md", cwd=project, expect=2).err
    assert "cannot promote job -> global" in okfgit("promote", "warm-the-cache", "--to", "global", cwd=project,
                                                    expect=2).err
    _nothing_changed(git, project, heads)


def test_destination_already_has_the_okf_id(project: Path, okfgit: Runner, git: Runner) -> None:
    _run_with_notes(project, okfgit)
    twin = project / ".okf" / "lessons" / "twin.md"
    twin.parent.mkdir()
    twin.write_bytes((_job(project) / NOTE).read_bytes().replace(b"scope: job", b"scope: project"))
    git("add", ".okf", cwd=project)
    git("commit", "-q", "-m", "a twin", cwd=project)
    heads = (_head(git, project), _head(git, _job(project)))
    err = okfgit("promote", NOTE, cwd=project, expect=2).err
    assert "the project tier already has okf_id" in err and "project:lessons/twin.md@" in err
    assert err.endswith("nothing was written\n")
    _nothing_changed(git, project, heads)


def test_existing_branch_and_dangling_links_write_nothing(project: Path, okfgit: Runner, git: Runner) -> None:
    _run_with_notes(project, okfgit)
    git("branch", "taken", cwd=project)
    okfgit("note", "--type", "Discovery", "Linked", "--evidence", "See [the blocker](runner-lacks-redis.md) and "
           "[[warm-the-cache]] and [docs](https://example.com).", cwd=project)
    heads = (_head(git, project), _head(git, _job(project)))
    err = okfgit("promote", "warm-the-cache", "--branch", "taken", cwd=project, expect=2).err
    assert err == f"okfgit: error: branch 'taken' already exists in {project}; pick a new name (nothing was written)\n"
    assert "not a valid branch name" in okfgit("promote", "warm-the-cache", "--branch", "a..b", cwd=project,
                                               expect=2).err
    err = okfgit("promote", "linked", cwd=project, expect=2).err
    assert err == ("okfgit: error: links that would not exist in the project tier (promote their targets too, or "
                   "fix the links first; nothing was written):\n"
                   "  notes/linked.md line 24: (runner-lacks-redis.md)\n"
                   "  notes/linked.md line 24: [[warm-the-cache]]\n")
    _nothing_changed(git, project, heads)
    # promoting the wiki-link target together clears that one; the blocker is still missing
    err = okfgit("promote", "linked", "warm-the-cache", cwd=project, expect=2).err
    assert "[[warm-the-cache]]" not in err and "(runner-lacks-redis.md)" in err


def test_uncommitted_edits_in_either_repo_stop_it(project: Path, okfgit: Runner, git: Runner) -> None:
    _run_with_notes(project, okfgit)
    (project / ".okf" / "index.md").write_text("# my words\n")
    heads = (_head(git, project), _head(git, _job(project)))
    err = okfgit("promote", "warm-the-cache", cwd=project, expect=3).err
    assert "uncommitted edits in .okf/index.md" in err
    assert (project / ".okf" / "index.md").read_text() == "# my words\n"
    git("checkout", "--", ".okf/index.md", cwd=project)
    (_job(project) / "log.md").write_text("# mine\n")
    assert "uncommitted edits in log.md" in okfgit("promote", "warm-the-cache", cwd=project, expect=3).err
    assert (_head(git, project), _head(git, _job(project))) == heads
    assert (_job(project) / NOTE).exists()


def test_promote_project_to_global(project: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    okfgit("new", "tabs", "--type", "Convention", "--description", "Indent with tabs.", "--dir", "style", "--no-edit",
           cwd=project)
    okf_id = okf.split((project / ".okf" / "style" / "tabs.md").read_bytes(), "x").meta["okf_id"]
    source_head = _head(git, project)
    okfgit("promote", "tabs", "--from", "project", "--to", "global", cwd=project)
    root = home / ".local" / "share" / "okf"
    assert git("ls-tree", "-r", "--name-only", "HEAD", cwd=root).out.split() == [
        "index.md", "style/index.md", "style/tabs.md"]
    assert okf.split((root / "style" / "tabs.md").read_bytes(), "x").meta["scope"] == "global"
    assert trailers_by_git(git, root)[4] == ("Okf-Promoted-From", f"project@{source_head}:style/tabs.md")
    assert trailers_by_git(git, project)[4] == ("Okf-Promoted-To", f"global@{_head(git, root)}:style/tabs.md")
    assert trailers_by_git(git, project)[3] == ("Okf-Id", okf_id)
    assert not (project / ".okf" / "style" / "tabs.md").exists()
    assert okfgit("doctor", "--scope", "all", cwd=project).code == 0
    fsck(git, root)


def _origin(git: Runner, project: Path, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    git("remote", "add", "origin", str(remote), cwd=project)
    return remote


def _path_with(tools: Path) -> dict[str, str]:
    return {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}


def test_open_pr_without_gh_prints_the_commands(project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    _run_with_notes(project, okfgit)
    _origin(git, project, tmp_path)
    bare = tmp_path / "nogh"
    bare.mkdir()
    (bare / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    out = okfgit("promote", "warm-the-cache", "--branch", "harvest", "--open-pr", cwd=project,
                 extra_env={"PATH": str(bare)}).out
    body_file = project / ".git" / "okf" / "pr-bodies" / "harvest.md"
    assert out.count("```okf-harvest\n") == 1  # the body, printed once
    assert body_file.read_text() == out.split("PR body:\n\n", 1)[1].split("\ngh is not on PATH", 1)[0]
    tail = out.split(f"to open the pull request, run in {project}:\n", 1)[1]
    assert tail.split("\n")[:3] == [
        "git push --set-upstream origin harvest",
        "gh label create okf-harvest --force --color 0E8A16 --description 'Knowledge promoted by okfgit'",
        f"gh pr create --head harvest --base main --title 'okf-harvest: r1' --body-file {body_file} "
        "--label okf-harvest"]
    assert "--open-pr needs --branch" in okfgit("promote", "x", "--open-pr", cwd=project, expect=2).err


def test_open_pr_without_a_remote_promotes_and_prints_what_to_run(project: Path, okfgit: Runner, git: Runner,
                                                                   tmp_path: Path) -> None:
    """As the README says: a new repository without a remote gets the promotion on its branch
    and the commands that open the pull request once it has one."""
    _run_with_notes(project, okfgit)
    top = _head(git, project)
    result = okfgit("promote", "warm-the-cache", "--branch", "harvest", "--open-pr", cwd=project)
    body_file = project / ".git" / "okf" / "pr-bodies" / "harvest.md"
    tail = result.out.split(f"{project} has no remote yet (add one, then push); the body is kept in {body_file}; "
                            f"to open the pull request, run in {project}:\n", 1)[1]
    assert tail.split("\n")[:2] == ["git remote add origin '<url>'", "git push --set-upstream origin harvest"]
    assert _head(git, project) == top and git("branch", "--list", "harvest", cwd=project).out.strip() == "harvest"
    assert body_file.is_file()


def test_open_pr_to_a_remote_the_repository_lacks_writes_nothing(project: Path, okfgit: Runner, git: Runner,
                                                                 tmp_path: Path) -> None:
    _run_with_notes(project, okfgit)
    _origin(git, project, tmp_path)
    heads = _head(git, project), _head(git, _job(project))
    result = okfgit("promote", "warm-the-cache", "--branch", "harvest", "--open-pr", "--remote", "orgin",
                    cwd=project, expect=2)
    assert "(it has: origin)" in result.err and "nothing was written" in result.err
    assert result.out == "" and "git push" not in result.err
    assert (_head(git, project), _head(git, _job(project))) == heads
    assert not git("branch", "--list", "harvest", cwd=project).out


def test_open_pr_with_gh_pushes_and_creates(project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    _run_with_notes(project, okfgit)
    remote = _origin(git, project, tmp_path)
    tools = fake_gh.install(tmp_path / "bin", [{"prefix": ["pr", "create"], "stdout": "https://example.com/pull/7\n"}])
    out = okfgit("promote", "warm-the-cache", "--branch", "harvest", "--open-pr", cwd=project,
                 extra_env=_path_with(tools)).out
    assert out.rstrip().endswith("opened the pull request: https://example.com/pull/7")
    assert git("ls-remote", "--heads", str(remote), cwd=tmp_path).out.split() == [
        _head(git, project, "harvest"), "refs/heads/harvest"]
    label, create = fake_gh.calls(tools)
    assert label["args"][:4] == ["label", "create", "okf-harvest", "--force"]
    body_file = str(project / ".git" / "okf" / "pr-bodies" / "harvest.md")
    assert create["args"] == ["pr", "create", "--head", "harvest", "--base", "main", "--title", "okf-harvest: r1",
                              "--body-file", body_file, "--label", "okf-harvest"]
    assert "```okf-harvest\n" in create["body"] and out.count("```okf-harvest\n") == 1
    # review on the pushed branch compares it with main, not with its own upstream
    git("checkout", "-q", "harvest", cwd=project)
    assert git("rev-parse", "--abbrev-ref", "@{upstream}", cwd=project).out.strip() == "origin/harvest"
    data = json.loads(okfgit("review", "--format", "json", "--pr-body", body_file, cwd=project).out)
    assert data["range"] == "main...HEAD" and data["verdict"] == "merge"
    assert [c["path"] for c in data["concepts"]] == [NOTE]


def test_open_pr_without_the_label_permission(project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    _run_with_notes(project, okfgit)
    _origin(git, project, tmp_path)
    tools = fake_gh.install(tmp_path / "bin", [{"prefix": ["label"], "code": 1, "stderr": "HTTP 403\n"}])
    result = okfgit("promote", "warm-the-cache", "--branch", "harvest", "--open-pr", cwd=project,
                    extra_env=_path_with(tools))
    assert "opening the pull request without it" in result.err
    assert "--label" not in fake_gh.calls(tools)[-1]["args"]


def test_a_failing_gh_loses_nothing(project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    _run_with_notes(project, okfgit)
    _origin(git, project, tmp_path)
    tools = fake_gh.install(tmp_path / "bin", [{"prefix": ["pr", "create"], "code": 1,
                                                "stderr": "GraphQL: body is too long\n"}])
    result = okfgit("promote", "warm-the-cache", "--branch", "harvest", "--open-pr", cwd=project,
                    extra_env=_path_with(tools), expect=3)
    body_file = project / ".git" / "okf" / "pr-bodies" / "harvest.md"
    assert result.out.startswith(f"promoted job/r1:{NOTE} -> project:{NOTE}\n")
    assert "PR title: okf-harvest: r1" in result.out and result.out.count("```okf-harvest\n") == 1
    assert "`gh pr create` failed (GraphQL: body is too long)" in result.err
    assert "The branch harvest was pushed to origin" in result.err and "no pull request was opened" in result.err
    assert "committed locally" not in result.err
    assert f"--body-file {body_file}" in result.err and "```okf-harvest\n" in body_file.read_text()
    # a push that fails says nothing was pushed
    okfgit("note", "--type", "Lesson", "Second lesson", cwd=project)
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=project)
    result = okfgit("promote", "second-lesson", "--branch", "harvest-2", "--open-pr", cwd=project,
                    extra_env=_path_with(tools), expect=3)
    assert "nothing was pushed. Both commits are made locally" in result.err
    assert "gh pr create --head harvest-2" in result.err


def _many_notes(project: Path, okfgit: Runner, git: Runner, n: int) -> list[str]:
    """``n`` promotable notes in run r1, written as one commit (not n CLI calls)."""
    okfgit("run", "start", "r1", cwd=project)
    job = _job(project)
    paths = []
    for i in range(n):
        path = f"notes/lesson-{i:04d}.md"
        (job / path).write_text(
            f"---\ntype: Lesson\ntitle: Lesson number {i}\ndescription: What run r1 learned, item {i}.\n"
            f"scope: job\nokf_id: 00000000-0000-4000-8000-{i:012d}\nokf_source: authored\ngeneralizes: 'yes'\n"
            f"---\n\n# Lesson number {i}\n\nWhat run r1 learned, item {i}.\n")
        paths.append(path)
    git("add", "-A", cwd=job)
    git("commit", "-q", "-m", "many notes", cwd=job)
    okfgit("index", "--scope", "job", cwd=project)
    return paths


def test_a_500_note_promotion_opens_its_pull_request(project: Path, okfgit: Runner, git: Runner,
                                                     tmp_path: Path) -> None:
    paths = _many_notes(project, okfgit, git, 500)
    _origin(git, project, tmp_path)
    tools = fake_gh.install(tmp_path / "bin", [{"prefix": ["pr", "create"], "stdout": "https://example.com/pull/8\n"}])
    result = okfgit("promote", *paths, "--branch", "okf/big", "--open-pr", cwd=project, extra_env=_path_with(tools))
    assert result.out.rstrip().endswith("opened the pull request: https://example.com/pull/8")
    calls = fake_gh.calls(tools)
    [create] = [c for c in calls if c["args"][:2] == ["pr", "create"]]
    assert "--body-file" in create["args"] and "--body" not in create["args"]
    comments = [c for c in calls if c["args"][:3] == ["pr", "comment", "okf/big"]]
    # GitHub takes at most 65,536 characters per body or comment: the claims continue in comments
    assert comments and all(len(c["body"]) < 60_000 for c in [create, *comments])
    assert _harvest(create["body"])["continued"]["parts"] == len(comments)
    assert (project / ".git" / "okf" / "pr-bodies" / "okf-big.full.md").read_text().count("| Lesson number") == 500
    # review reads the body with its continuation comments: every claim checked, every concept claimed
    pr_text = tmp_path / "pr.md"
    pr_text.write_text("\n\n".join(c["body"] for c in [create, *comments]))
    git("checkout", "-q", "okf/big", cwd=project)
    data = json.loads(okfgit("review", "--format", "json", "--pr-body", str(pr_text), cwd=project).out)
    assert data["verdict"] == "merge" and len(data["harvest"]["concepts"]) == 500
    pr_text.write_text(create["body"])  # without the comments
    data = json.loads(okfgit("review", "--format", "json", "--pr-body", str(pr_text), cwd=project, expect=2).out)
    assert "part 1" in data["findings"][0]["message"] and "is missing" in data["findings"][0]["message"]


def test_emptied_folders(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    okfgit("note", "--type", "Lesson", "Only one", cwd=project)
    result = okfgit("promote", "only-one", cwd=project)
    assert result.err == ""  # notes/ keeps its intro and stays linked from the run's root index
    job = _job(project)
    assert (job / "notes" / "index.md").read_text().startswith("# Notes\n\nWhat this run learned")
    assert "(notes/index.md)" in (job / "index.md").read_text()
    # a folder whose index is only okfgit's heading goes with its last concept
    okfgit("promote", "only-one", "--from", "project", "--to", "global", cwd=project)
    assert not (project / ".okf" / "notes").exists()
    assert "notes/" not in (project / ".okf" / "index.md").read_text()
    # one with a person's intro stays, with a warning
    okfgit("new", "tabs", "--dir", "style", "--description", "D.", "--no-edit", cwd=project)
    (project / ".okf" / "style" / "index.md").write_text("# Style\n\nHow we write code.\n\n- [Tabs](tabs.md)\n")
    git("commit", "-q", "-am", "intro", cwd=project)
    result = okfgit("promote", "tabs", "--from", "project", "--to", "global", cwd=project)
    assert "project:style/ has no concepts left; its index.md keeps a hand-written intro" in result.err
    assert (project / ".okf" / "style" / "index.md").read_text() == "# Style\n\nHow we write code.\n"


def test_a_contradiction_is_proposed_as_a_supersession_and_flagged(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "use-postgres", "--type", "Decision", "--dir", "decisions", "--title", "Use Postgres",
           "--description", "All state in one Postgres cluster.", "--no-edit", cwd=project)
    decision_id = okf.split((project / ".okf" / "decisions" / "use-postgres.md").read_bytes(), "x").meta["okf_id"]
    okfgit("run", "start", "r1", cwd=project)
    okfgit("note", "--type", "Discovery", "Postgres cannot hold the event log", "--slug", "event-log",
           "--cites", decision_id, "--relation", "contradicts", "--generalizes", "yes", cwd=project)
    okfgit("note", "--type", "Lesson", "Vacuum nightly", "--cites", "project:decisions/use-postgres.md",
           "--relation", "refines", "--generalizes", "yes", cwd=project)
    result = okfgit("promote", "event-log", "vacuum-nightly", "--branch", "okf/r1", cwd=project)
    assert "proposed supersession: notes/event-log.md contradicts project:decisions/use-postgres.md" in result.err
    body = result.out.split("PR body:\n\n", 1)[1]
    assert "**Contradictions to resolve**" in body and f"`supersedes: {decision_id}`" in body
    claims = {c["path"]: c for c in _harvest(body)["concepts"]}
    assert claims["notes/event-log.md"]["cites"][0]["relation"] == "contradicts"
    assert claims["notes/vacuum-nightly.md"]["cites"][0]["okf_id"] == decision_id
    pr_body = project.parent / "body.md"
    pr_body.write_text(body)
    git("checkout", "-q", "okf/r1", cwd=project)
    data = json.loads(okfgit("review", "--format", "json", "--pr-body", str(pr_body), cwd=project, expect=2).out)
    assert [(f["severity"], f["code"], f["file"]) for f in data["findings"]] == [
        ("needs-human", "contradiction", "notes/event-log.md")]
    # the supersession, done on the branch, resolves it (the new concept is then claimed by no block)
    note = project / ".okf" / "notes" / "event-log.md"
    note_id = okf.split(note.read_bytes(), "x").meta["okf_id"]
    note.write_text(note.read_text().replace("okf_source: authored\n",
                                             f"okf_source: authored\nsupersedes: {decision_id}\n"))
    old = project / ".okf" / "decisions" / "use-postgres.md"
    old.write_text(old.read_text().replace("okf_source: authored\n",
                                           f"okf_source: authored\nstatus: deprecated\nsuperseded_by: {note_id}\n"))
    git("commit", "-q", "-am", "supersede", cwd=project)
    data = json.loads(okfgit("review", "--format", "json", cwd=project).out)
    assert data["verdict"] == "merge", data["findings"]


def test_the_harvest_block_says_what_was_read_for_which_work_by_whom(project: Path, okfgit: Runner, git: Runner,
                                                                     tmp_path: Path) -> None:
    okfgit("new", "use-redis", "--title", "Use Redis", "--type", "Decision", "--description", "The cache is Redis.",
           "--no-edit", cwd=project)
    cited = okfgit("ls", "--json", cwd=project).out
    okfgit("run", "start", "r1", "--task", "Fix the flaky deploys of acme/web#42 (https://ci.example.com/runs/9).",
           cwd=project)
    okfgit("note", "--type", "Lesson", "Warm the cache", "--claim", "Benchmarks warm the cache first.",
           "--evidence", "Timings in #57.", "--cites", "use-redis", "--relation", "refines", cwd=project)
    result = okfgit("promote", NOTE, "--branch", "okf/harvest-r1", cwd=project)
    body = result.out.split("PR body:\n\n", 1)[1]
    harvest = _harvest(body)
    source = _head(git, _job(project), "HEAD~1")  # the run as the promotion read it
    [decision] = [c for c in json.loads(cited)["concepts"] if c["title"] == "Use Redis"]
    assert harvest["input"] == [
        {"kind": "run", "run": "r1", "commit": source},
        {"kind": "citation", "ref": decision["citation"], "okf_id": decision["okf_id"], "relation": "refines",
         "by": NOTE},
    ]
    assert harvest["tasks"] == {"provider": "mixed", "refs": ["acme/web#42", "https://ci.example.com/runs/9", "#57"]}
    assert harvest["harvester"] == {"instance": "human:author@example.com", "alias": "Test Author"}
    assert "For: acme/web#42, https://ci.example.com/runs/9, #57." in body
    # review checks the new fields' shapes, and still takes a block an earlier okfgit wrote (version 1)
    git("checkout", "-q", "okf/harvest-r1", cwd=project)
    (tmp_path / "body.md").write_text(body)
    okfgit("review", "--pr-body", str(tmp_path / "body.md"), cwd=project)
    old = {k: v for k, v in harvest.items() if k not in ("input", "tasks", "harvester")}
    (tmp_path / "old.md").write_text("```okf-harvest\n" + json.dumps({**old, "version": 1}) + "\n```\n")
    okfgit("review", "--pr-body", str(tmp_path / "old.md"), cwd=project)
    (tmp_path / "bad.md").write_text("```okf-harvest\n" + json.dumps({**harvest, "tasks": ["#42"]}) + "\n```\n")
    bad = json.loads(okfgit("review", "--format", "json", "--pr-body", str(tmp_path / "bad.md"), cwd=project,
                            expect=2).out)
    assert [(f["code"], f["message"]) for f in bad["findings"]] == [
        ("harvest-block", "okf-harvest tasks must be an object with a provider (a string or null) and a refs list "
                          "of strings")]
