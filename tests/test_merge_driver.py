"""okfgit's merge driver inside real git: merge, rebase, cherry-pick and pull of a team's
knowledge branches, and what a clone without the driver gets.

git finds the driver the way a user's git does: `.okf/.gitattributes` (committed by `okfgit
init --scope project`) names it, `okfgit hooks install` writes `merge.okfgit.driver` into the
clone's config, and git runs `okfgit` from PATH (this interpreter's bin folder, put first).
The git hooks that install also puts in place are switched off (OKFGIT_SKIP=1): these tests
are about the merges, and each hook would start a process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from okfgit.format import concept as okf
from tests.conftest import Runner, built_once, fsck, make_project

BIN = os.path.dirname(sys.executable)


@pytest.fixture
def path_env(env: dict[str, str]) -> dict[str, str]:
    """okfgit on PATH for git (the driver), the git hooks skipped."""
    if not os.access(os.path.join(BIN, "okfgit"), os.X_OK):
        pytest.skip(f"no okfgit script next to {sys.executable}")
    return {"PATH": BIN + os.pathsep + env.get("PATH", os.defpath), "OKFGIT_SKIP": "1"}


@pytest.fixture
def team(project: Path, okfgit: Runner, git: Runner) -> Path:
    """A project tier with two concepts in `d/`, its indexes current, the driver set up."""
    add(git, okfgit, project, {}, ["d/base-a", "d/base-z"], "two concepts")
    okfgit("hooks", "install", cwd=project)
    return project


def concept_bytes(path: str, description: str = "") -> bytes:
    stem = path.rsplit("/", 1)[-1]
    meta = {"type": "Note", "title": stem.replace("-", " ").title(), "description": description or f"About {stem}.",
            "scope": "project", "okf_id": okf.new_okf_id(), "okf_source": "authored"}
    return okf.serialize(meta, f"\n# {meta['title']}\n".encode())


def add(git: Runner, okfgit: Runner, repo: Path, env: dict[str, str], paths: list[str], message: str) -> None:
    """Commit concepts as a person does (files, git add, git commit), then `okfgit index` commits the indexes."""
    for path in paths:
        file = repo / ".okf" / f"{path}.md"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(concept_bytes(path))
    git("add", ".okf", cwd=repo, extra_env=env)
    git("commit", "-q", "-m", message, cwd=repo, extra_env=env)
    okfgit("index", cwd=repo, extra_env=env)


def two_branches(git: Runner, okfgit: Runner, repo: Path, env: dict[str, str], n: int = 50) -> None:
    """Branches `c` and `e` from main each add `n` concepts to `d/`, in two commits of each
    kind; their names alternate in sort order, so every new entry has the other branch's as
    its neighbour: what git's line merge cannot take apart."""
    for branch, mark in (("c", "c"), ("e", "e")):
        git("checkout", "-q", "-b", branch, "main", cwd=repo, extra_env=env)
        names = [f"d/item-{i:03d}-{mark}" for i in range(n)]
        half = n // 2
        add(git, okfgit, repo, env, names[:half], f"{branch}: first half")
        add(git, okfgit, repo, env, names[half:], f"{branch}: second half")
    git("checkout", "-q", "main", cwd=repo, extra_env=env)


def index_is_regenerated(okfgit: Runner, git: Runner, repo: Path) -> None:
    """The merged indexes are exactly what `okfgit index` writes, nothing is left unmerged."""
    assert "every index is up to date" in okfgit("index", "--check", cwd=repo).out
    assert git("status", "--porcelain", "--", ".okf", cwd=repo).out == ""
    assert b"<<<<<<<" not in (repo / ".okf" / "d" / "index.md").read_bytes()
    fsck(git, repo)


def _make_branched(path: Path, git: Runner, okfgit: Runner) -> None:
    make_project(path, git, okfgit)
    add(git, okfgit, path, {}, ["d/base-a", "d/base-z"], "two concepts")  # what ``team`` makes
    okfgit("hooks", "install", cwd=path)
    two_branches(git, okfgit, path, {"OKFGIT_SKIP": "1"})


@pytest.fixture
def branched(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``team`` after ``two_branches``: built once in the session (its four ways of merging
    each start from the same commits) and written out for each test."""
    return built_once("merge-driver-branched", _make_branched, tmp_path / "proj", tmp_path_factory)


@pytest.mark.parametrize("how", ["merge", "rebase", "cherry-pick", "pull"])
def test_two_branches_adding_fifty_concepts_each_to_one_folder_merge_cleanly(
        how: str, branched: Path, okfgit: Runner, git: Runner, path_env: dict[str, str]) -> None:
    team = branched
    if how == "merge":
        git("checkout", "-q", "e", cwd=team, extra_env=path_env)
        git("merge", "-q", "--no-edit", "c", cwd=team, extra_env=path_env)
    elif how == "rebase":
        git("checkout", "-q", "e", cwd=team, extra_env=path_env)
        git("rebase", "-q", "c", cwd=team, extra_env=path_env)
    elif how == "cherry-pick":
        git("checkout", "-q", "c", cwd=team, extra_env=path_env)
        git("cherry-pick", "main..e", cwd=team, extra_env=path_env)
    else:
        git("checkout", "-q", "e", cwd=team, extra_env=path_env)
        git("pull", "-q", "--no-rebase", "--no-edit", ".", "c", cwd=team, extra_env=path_env)
    entries = [line for line in (team / ".okf" / "d" / "index.md").read_text().splitlines() if line.startswith("- [")]
    assert len(entries) == 102
    index_is_regenerated(okfgit, git, team)


def test_the_same_entry_changed_two_ways_leaves_one_conflicted_line(team: Path, okfgit: Runner, git: Runner,
                                                                     path_env: dict[str, str]) -> None:
    for branch, words in (("c", "Said one way."), ("e", "Said another way.")):
        git("checkout", "-q", "-b", branch, "main", cwd=team, extra_env=path_env)
        file = team / ".okf" / "d" / "base-a.md"
        file.write_bytes(file.read_bytes().replace(b"description: About base-a.", f"description: {words}".encode()))
        add(git, okfgit, team, path_env, [f"d/new-{branch}"], f"{branch}: reword base-a")
    result = git("merge", "--no-edit", "c", cwd=team, extra_env=path_env, expect=1)
    assert "CONFLICT (content): Merge conflict in .okf/d/index.md" in result.out
    index = (team / ".okf" / "d" / "index.md").read_text()
    assert index.count("<<<<<<<") == 1 and index.split("<<<<<<< ours\n")[1].split(">>>>>>> theirs\n")[0] == (
        "- [Base A](base-a.md) \u2014 Said another way.\n=======\n- [Base A](base-a.md) \u2014 Said one way.\n")
    assert "- [New C](new-c.md)" in index and "- [New E](new-e.md)" in index  # the rest merged
    # the concept itself: a conflict on the key both changed, named by it
    text = (team / ".okf" / "d" / "base-a.md").read_text()
    assert "<<<<<<< ours (description)\ndescription: Said another way.\n=======\n" in text
    assert text.count("<<<<<<<") == 1
    assert "okfgit: .okf/d/base-a.md: frontmatter key 'description' changed two ways" in result.err
    # every verb says something true of the merge under way, and none advises a reset
    doctor = okfgit("doctor", cwd=team, expect=2)
    assert "d/index.md: error: merge-conflict: not merged yet: resolve the conflict in .okf/d/index.md and " \
           "`git add` it" in doctor.out
    status = okfgit("status", cwd=team, expect=2)
    assert "  unmerged .okf/d/index.md: resolve the conflict in .okf/d/index.md and `git add` it\n" in status.out
    index = okfgit("index", cwd=team, expect=3)
    assert "is in the middle of a merge: finish it" in index.err and "(nothing was changed)" in index.err
    sync = okfgit("sync", cwd=team)
    assert sync.out.startswith("okfgit sync: merge in progress: finish it, then okfgit sync")
    assert "git reset" not in doctor.out + doctor.err + status.out + index.err + sync.out + sync.err


def test_the_same_path_added_with_two_okf_ids_keeps_both_concepts_whole(team: Path, okfgit: Runner, git: Runner,
                                                                        path_env: dict[str, str]) -> None:
    sides = {}
    for branch in ("c", "e"):
        git("checkout", "-q", "-b", branch, "main", cwd=team, extra_env=path_env)
        sides[branch] = concept_bytes("d/same", f"Said on {branch}.")
        (team / ".okf" / "d" / "same.md").write_bytes(sides[branch])
        git("add", ".okf", cwd=team, extra_env=path_env)
        git("commit", "-q", "-m", f"{branch}: d/same", cwd=team, extra_env=path_env)
    result = git("merge", "--no-edit", "c", cwd=team, extra_env=path_env, expect=1)
    assert "CONFLICT (add/add): Merge conflict in .okf/d/same.md" in result.out
    assert (team / ".okf" / "d" / "same.md").read_bytes() == (b"<<<<<<< ours (two concepts)\n" + sides["e"]
                                                             + b"=======\n" + sides["c"]
                                                             + b">>>>>>> theirs (two concepts)\n")
    ids = [okf.split(sides[b], "x.md").meta["okf_id"] for b in ("e", "c")]
    assert f"okfgit: .okf/d/same.md: two concepts were added at d/same.md (okf_id {ids[0]} and {ids[1]}): keep " \
           "one here, move the other to a new name" in result.err


def test_a_clone_without_the_driver_gets_gits_conflict_and_doctor_names_the_fix(
        team: Path, okfgit: Runner, git: Runner, path_env: dict[str, str], tmp_path: Path) -> None:
    two_branches(git, okfgit, team, path_env, n=2)
    project = tmp_path / "clone"  # the attribute comes with the clone, the driver's config does not
    git("clone", "-q", str(team), str(project), cwd=tmp_path, extra_env=path_env)
    git("checkout", "-q", "c", cwd=project, extra_env=path_env)
    git("checkout", "-q", "e", cwd=project, extra_env=path_env)
    result = git("merge", "--no-edit", "c", cwd=project, extra_env=path_env, expect=1)
    assert "CONFLICT (content): Merge conflict in .okf/d/index.md" in result.out
    assert "<<<<<<< HEAD\n" in (project / ".okf" / "d" / "index.md").read_text()  # git's own text merge
    doctor = okfgit("doctor", cwd=project, expect=2)
    assert "git reset" not in doctor.out + doctor.err
    assert ("d/index.md: error: merge-conflict: not merged yet: okfgit's merge driver merges it: run `okfgit hooks "
            "install`, then `git checkout -m -- .okf/d/index.md` merges it again, and `git add` it") in doctor.out
    assert "warning: merge-in-progress: " in doctor.out
    status = okfgit("status", cwd=project, expect=2)
    assert "merge in progress: finish it, then okfgit sync\n" in status.out
    # the fix doctor names works
    okfgit("hooks", "install", cwd=project)
    git("checkout", "-m", "--", ".okf/d/index.md", cwd=project, extra_env=path_env)
    git("add", ".okf/d/index.md", cwd=project)
    git("commit", "-q", "--no-edit", cwd=project, extra_env=path_env)
    index_is_regenerated(okfgit, git, project)


def test_log_md_merges_keep_every_entry_by_date(team: Path, okfgit: Runner, git: Runner,
                                               path_env: dict[str, str]) -> None:
    log = team / ".okf" / "log.md"
    log.write_text("# Knowledge log\n\n## 2025-11-20\n- Added base-a.\n\n## 2025-11-02\n- Started.\n")
    git("add", ".okf", cwd=team)
    git("commit", "-q", "-m", "a log", cwd=team, extra_env=path_env)
    for branch, day, words in (("c", "2025-12-01", "C"), ("e", "2025-12-02", "E")):
        git("checkout", "-q", "-b", branch, "main", cwd=team, extra_env=path_env)
        text = log.read_text()
        text = text.replace("## 2025-11-20\n", f"## 2025-11-20\n- {words} on the same day.\n")
        text = text.replace("# Knowledge log\n\n", f"# Knowledge log\n\n## {day}\n- {words} on its own day.\n\n")
        log.write_text(text)
        git("commit", "-q", "-am", f"{branch}: log", cwd=team, extra_env=path_env)
    git("merge", "-q", "--no-edit", "c", cwd=team, extra_env=path_env)
    assert log.read_text() == ("# Knowledge log\n\n## 2025-12-02\n- E on its own day.\n\n## 2025-12-01\n"
                               "- C on its own day.\n\n## 2025-11-20\n- E on the same day.\n- C on the same day.\n"
                               "- Added base-a.\n\n## 2025-11-02\n- Started.\n")
    okfgit("doctor", cwd=team)


def test_two_branches_changing_other_keys_of_one_concept_merge_by_key(team: Path, okfgit: Runner, git: Runner,
                                                                     path_env: dict[str, str]) -> None:
    file = team / ".okf" / "d" / "base-z.md"
    for branch, old, new in (("c", b"title: Base Z\n", b"title: Base Zed\n"),
                             ("e", b"okf_source: authored\n", b"okf_source: authored\nstatus: stable\n")):
        git("checkout", "-q", "-b", branch, "main", cwd=team, extra_env=path_env)
        file.write_bytes(file.read_bytes().replace(old, new))
        git("commit", "-q", "-am", f"{branch}: edit base-z", cwd=team, extra_env=path_env)
    git("merge", "-q", "--no-edit", "c", cwd=team, extra_env=path_env)
    text = file.read_text()
    assert "title: Base Zed\n" in text and "status: stable\n" in text and "<<<<<<<" not in text


def git_merge_file(repo: Path, path: str) -> bytes:
    """What `git merge-file` makes of the three stages git left for ``path`` (okfgit's labels)."""
    stages = []
    for n in (2, 1, 3):
        stage = repo / f".stage{n}"
        stage.write_bytes(subprocess.run(["git", "show", f":{n}:{path}"], cwd=repo, capture_output=True,
                                         check=True).stdout)
        stages.append(str(stage))
    merged = subprocess.run(["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", *stages],
                            cwd=repo, capture_output=True).stdout
    for stage in stages:
        os.unlink(stage)
    return merged


def test_a_crash_of_the_driver_leaves_gits_normal_conflict(team: Path, okfgit: Runner, git: Runner,
                                                           path_env: dict[str, str], tmp_path: Path) -> None:
    # A test build: the merge raises whatever it is given (sitecustomize runs in the driver's process).
    build = tmp_path / "crashing-build"
    build.mkdir()
    (build / "sitecustomize.py").write_text(
        "import okfgit.format.merge as merge\n\n"
        "def crash(*args, **kwargs):\n    raise RuntimeError('this build of the merge crashes')\n\n"
        "merge.merge_file = crash\n")
    two_branches(git, okfgit, team, path_env, n=2)
    git("checkout", "-q", "e", cwd=team, extra_env=path_env)
    env = {**path_env, "PYTHONPATH": str(build)}
    result = git("merge", "--no-edit", "c", cwd=team, extra_env=env, expect=1)
    assert "CONFLICT (content): Merge conflict in .okf/d/index.md" in result.out
    assert "okfgit: .okf/d/index.md: merged as text by git merge-file (RuntimeError: this build of the merge " \
           "crashes)" in result.err
    assert (team / ".okf" / "d" / "index.md").read_bytes() == git_merge_file(team, ".okf/d/index.md")


def test_an_index_that_is_not_utf8_is_merged_by_git_as_text(team: Path, okfgit: Runner, git: Runner,
                                                            path_env: dict[str, str]) -> None:
    index = team / ".okf" / "d" / "index.md"
    for branch, line in (("c", b"- [Caf\xe9](cafe.md)\n"), ("e", b"- [Eclair](eclair.md)\n")):
        git("checkout", "-q", "-b", branch, "main", cwd=team, extra_env=path_env)
        index.write_bytes(index.read_bytes() + line)
        git("commit", "-q", "-am", f"{branch}: a line", cwd=team, extra_env=path_env)
    result = git("merge", "--no-edit", "c", cwd=team, extra_env=path_env, expect=1)
    assert "merged as text by git merge-file (ValidationError: " in result.err
    assert index.read_bytes() == git_merge_file(team, ".okf/d/index.md")


def test_okfgit_missing_from_gits_path_falls_back_to_gits_text_merge(team: Path, okfgit: Runner, git: Runner,
                                                                     path_env: dict[str, str]) -> None:
    two_branches(git, okfgit, team, path_env, n=2)
    git("checkout", "-q", "e", cwd=team, extra_env=path_env)
    no_okfgit = {"OKFGIT_SKIP": "1", "PATH": os.pathsep.join(p for p in os.defpath.split(os.pathsep) if p != BIN)}
    git("merge", "--no-edit", "c", cwd=team, extra_env=no_okfgit, expect=1)
    assert (team / ".okf" / "d" / "index.md").read_bytes() == git_merge_file(team, ".okf/d/index.md")


# -- set up: init commits the attributes, hooks install configures the driver -------------------


def test_init_commits_the_attributes_once_and_an_older_tier_gets_them(repo: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "project", cwd=repo)
    attributes = (repo / ".okf" / ".gitattributes").read_text()
    assert attributes.endswith("\n*.md merge=okfgit\n")
    assert git("check-attr", "merge", "--", ".okf/a/b/index.md", cwd=repo).out == ".okf/a/b/index.md: merge: okfgit\n"
    head = git("rev-parse", "HEAD", cwd=repo).out
    okfgit("init", "--scope", "project", cwd=repo)
    assert git("rev-parse", "HEAD", cwd=repo).out == head
    git("rm", "-q", ".okf/.gitattributes", cwd=repo)
    git("commit", "-q", "-m", "an older okfgit's tier", cwd=repo)
    result = okfgit("init", "--scope", "project", cwd=repo)
    assert "now sends its files to okfgit's merge driver" in result.out
    assert (repo / ".okf" / ".gitattributes").read_text() == attributes
    assert git("log", "-1", "--format=%s", cwd=repo).out == "okf: merge this tier's files with okfgit's merge driver\n"


def test_hooks_install_configures_the_driver_status_shows_it_uninstall_removes_it(
        project: Path, okfgit: Runner, git: Runner) -> None:
    assert "merge driver   absent (run `okfgit hooks install`" in okfgit("hooks", "status", cwd=project).out
    assert "merge-driver   install" in okfgit("hooks", "install", "--dry-run", cwd=project).out
    assert git("config", "--get", "merge.okfgit.driver", cwd=project, expect=1).out == ""
    okfgit("hooks", "install", cwd=project)
    driver = git("config", "--get", "merge.okfgit.driver", cwd=project).out
    assert driver.startswith("okfgit merge-driver %O %A %B %L %P || ")
    config = (project / ".git" / "config").read_bytes()
    assert "merge-driver   unchanged" in okfgit("hooks", "install", cwd=project).out
    assert (project / ".git" / "config").read_bytes() == config  # installing twice changes nothing
    assert "  merge driver   installed\n" in okfgit("hooks", "status", cwd=project).out
    assert okfgit("hooks", "status", "--json", cwd=project).out.count('"merge_driver": "installed"') == 1
    okfgit("hooks", "uninstall", cwd=project)
    assert git("config", "--get-regexp", "^merge\\.okfgit\\.", cwd=project, expect=1).out == ""


# -- every verb knows a merge is under way ---------------------------------------------


def test_during_a_merge_write_verbs_refuse_and_nothing_advises_a_reset(
        team: Path, okfgit: Runner, git: Runner, path_env: dict[str, str]) -> None:
    git("checkout", "-q", "-b", "c", "main", cwd=team, extra_env=path_env)
    (team / "README.md").write_text("# proj\n\nOne way.\n")
    git("commit", "-q", "-am", "c: README", cwd=team, extra_env=path_env)
    add(git, okfgit, team, path_env, ["d/from-c"], "c: a concept")
    git("checkout", "-q", "-b", "e", "main", cwd=team, extra_env=path_env)
    (team / "README.md").write_text("# proj\n\nAnother way.\n")
    git("commit", "-q", "-am", "e: README", cwd=team, extra_env=path_env)
    git("merge", "--no-edit", "c", cwd=team, extra_env=path_env, expect=1)  # README conflicts; .okf merged, staged
    finish = "finish it (resolve the conflicts, `git add` them and `git commit`, or `git merge --abort`)"
    doctor = okfgit("doctor", cwd=team)  # okfgit's own paths staged by the merge: no index-behind, no reset
    assert "git reset" not in doctor.out + doctor.err and "index-behind" not in doctor.out
    assert f"index.md: warning: merge-in-progress: {team} is in the middle of a merge: {finish}, then run " \
           "`okfgit sync`; doctor checked HEAD, which does not hold the merge's result yet" in doctor.out
    new = okfgit("new", "late", "--description", "Too late.", "--no-edit", cwd=team, expect=3)
    assert "is in the middle of a merge; finish it first (resolve the conflicts" in new.err
    index = okfgit("index", cwd=team, expect=3)
    assert f"okfgit: error: {team} is in the middle of a merge: {finish}, then run `okfgit index` " \
           "(nothing was changed)" in index.err
    okfgit("index", "--check", cwd=team, expect=3)
    assert okfgit("sync", cwd=team).out.startswith("okfgit sync: merge in progress: finish it, then okfgit sync")
    status = okfgit("status", cwd=team, expect=2)
    assert status.out.splitlines()[1:3] == ["merge in progress: finish it, then okfgit sync",
                                            f"  {team}: resolve the conflicts, `git add` them and `git commit`, "
                                            "or `git merge --abort`"]
    assert "git reset" not in status.out + status.err
    git("checkout", "--theirs", "README.md", cwd=team)
    git("add", "README.md", cwd=team)
    git("commit", "-q", "--no-edit", cwd=team, extra_env=path_env)
    index_is_regenerated(okfgit, git, team)
    assert "merge in progress" not in okfgit("status", cwd=team).out


def test_a_conflicted_rebase_is_named_as_one(team: Path, okfgit: Runner, git: Runner,
                                             path_env: dict[str, str]) -> None:
    for branch, words in (("c", "One way."), ("e", "Another way.")):
        git("checkout", "-q", "-b", branch, "main", cwd=team, extra_env=path_env)
        (team / "README.md").write_text(f"# proj\n\n{words}\n")
        git("commit", "-q", "-am", f"{branch}: README", cwd=team, extra_env=path_env)
    git("rebase", "c", cwd=team, extra_env=path_env, expect=1)
    status = okfgit("status", cwd=team, expect=2)
    assert "rebase in progress: finish it, then okfgit sync\n" in status.out
    assert "`git rebase --continue`, or `git rebase --abort`" in status.out
    git("rebase", "--abort", cwd=team, extra_env=path_env)


def test_a_symlink_handed_to_the_driver_is_never_written_through(tmp_path: Path, okfgit: Runner) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_bytes(b"a person's file\n")
    base, ours, theirs = tmp_path / "base", tmp_path / "ours", tmp_path / "theirs"
    base.write_bytes(b"# Index\n")
    theirs.write_bytes(b"# Index\n\n- [B](b.md)\n")
    ours.symlink_to(target)
    result = okfgit("merge-driver", str(base), str(ours), str(theirs), "7", ".okf/index.md", cwd=tmp_path, expect=1)
    assert "not git's scratch files" in result.err
    assert target.read_bytes() == b"a person's file\n" and ours.is_symlink()
