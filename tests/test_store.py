from __future__ import annotations

from pathlib import Path

import pytest

from okfgit.format import concept as okf
from tests.conftest import Runner, fsck, trailers_by_git


def test_init_project_commits_root_index(repo: Path, okfgit: Runner, git: Runner) -> None:
    result = okfgit("init", "--scope", "project", cwd=repo)
    assert "initialised the project tier" in result.out
    assert git("show", "HEAD:.okf/index.md", cwd=repo).out.startswith('---\nokf_version: "0.2"\n---\n\n# Project')
    assert trailers_by_git(git, repo)[:1] == [("Okf-Operation", "init")]
    again = okfgit("init", "--scope", "project", cwd=repo)
    assert "already initialised" in again.out
    fsck(git, repo)


def test_new_is_one_commit_with_trailers_and_index(project: Path, okfgit: Runner, git: Runner) -> None:
    before = git("rev-parse", "HEAD", cwd=project).out.strip()
    result = okfgit("new", "cache-policy", "--type", "Decision", "--description", "We cache for a day.",
                    "--tag", "perf", "--dir", "decisions", "--no-edit", cwd=project)
    assert result.out.startswith("created project:decisions/cache-policy.md@")
    assert git("rev-parse", "HEAD~1", cwd=project).out.strip() == before
    changed = git("show", "--name-only", "--format=", "HEAD", cwd=project).out.split()
    assert sorted(changed) == [".okf/decisions/cache-policy.md", ".okf/decisions/index.md", ".okf/index.md"]
    trailers = trailers_by_git(git, project)
    assert trailers[0] == ("Okf-Operation", "new")
    assert trailers[1] == ("Okf-Tool", "okfgit 0.1.0")
    assert trailers[2] == ("Okf-Actor", "human:author@example.com")
    assert trailers[3][0] == "Okf-Id" and okf.is_valid_okf_id(trailers[3][1])
    index = git("show", "HEAD:.okf/decisions/index.md", cwd=project).out
    assert "- [Cache Policy](cache-policy.md) \u2014 We cache for a day.\n" in index
    assert git("status", "--porcelain", cwd=project).out == ""
    fsck(git, project)


def test_new_leaves_other_staged_work_staged(project: Path, okfgit: Runner, git: Runner) -> None:
    (project / "app.py").write_text("print(1)\n")
    git("add", "app.py", cwd=project)
    okfgit("new", "x", "--description", "X.", "--no-edit", cwd=project)
    assert git("diff", "--cached", "--name-only", cwd=project).out.split() == ["app.py"]
    assert "app.py" not in git("show", "--name-only", "--format=", "HEAD", cwd=project).out


def test_new_refuses_existing_slug_and_bad_names(project: Path, okfgit: Runner) -> None:
    okfgit("new", "x", "--description", "D.", "--no-edit", cwd=project)
    assert "already exists" in okfgit("new", "x", "--description", "D.", "--no-edit", cwd=project, expect=2).err
    assert "not a path" in okfgit("new", "../evil", "--no-edit", cwd=project, expect=2).err
    assert "inside the knowledge base" in okfgit("new", "y", "--dir", "../up", "--no-edit", cwd=project, expect=2).err
    assert "must be relative" in okfgit("new", "y", "--dir", "/abs", "--no-edit", cwd=project, expect=2).err
    assert "reserved" in okfgit("new", "index", "--no-edit", cwd=project, expect=2).err
    assert okfgit("new", "y", "--scope", "nope", "--no-edit", cwd=project, expect=2).code == 2


def test_new_refuses_mid_merge_and_uncommitted_edit(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "x", "--description", "D.", "--no-edit", cwd=project)
    (project / ".okf" / "index.md").write_text("# my unsaved words\n")
    head = git("rev-parse", "HEAD", cwd=project).out
    err = okfgit("new", "y", "--description", "D.", "--no-edit", cwd=project, expect=3).err
    assert "uncommitted edits in .okf/index.md" in err
    assert (project / ".okf" / "index.md").read_text() == "# my unsaved words\n"
    assert git("rev-parse", "HEAD", cwd=project).out == head
    git("checkout", "--", ".okf/index.md", cwd=project)
    (project / ".git" / "MERGE_HEAD").write_text(head)
    assert "middle of a merge" in okfgit("new", "y", "--description", "D.", "--no-edit", cwd=project, expect=3).err
    (project / ".git" / "MERGE_HEAD").unlink()
    git("checkout", "-q", "--detach", cwd=project)
    assert "detached" in okfgit("new", "y", "--description", "D.", "--no-edit", cwd=project, expect=3).err


def test_global_tier_created_on_first_use(repo: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    okfgit("new", "tabs", "--scope", "global", "--description", "Use tabs.", "--no-edit", cwd=repo)
    root = home / ".local" / "share" / "okf"
    assert (root / ".git").is_dir()
    assert git("ls-tree", "-r", "--name-only", "HEAD", cwd=root).out.split() == ["index.md", "tabs.md"]
    fsck(git, root)


def test_new_needs_a_description(project: Path, okfgit: Runner, git: Runner) -> None:
    head = git("rev-parse", "HEAD", cwd=project).out
    err = okfgit("new", "bare", "--no-edit", cwd=project, expect=2).err
    assert "needs --description" in err
    assert git("rev-parse", "HEAD", cwd=project).out == head


def _editor(tmp_path: Path, script: str) -> str:
    path = tmp_path / "editor.py"
    path.write_text("import sys\np = sys.argv[1]\ntext = open(p).read()\n" + script)
    return f"python3 {path}"


def test_new_with_editor_commits_what_was_typed(project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    editor = _editor(tmp_path, "text = text.replace('title: Edited', 'title: Edited\\ndescription: Typed in the editor.')\n"
                               "open(p, 'w').write(text + 'More words.\\n')\n")
    okfgit("new", "edited", "--edit", cwd=project, extra_env={"EDITOR": editor})
    data = git("show", "HEAD:.okf/edited.md", cwd=project).out
    assert "description: Typed in the editor.\n" in data and data.endswith("More words.\n")


def test_a_commit_made_while_the_person_types_is_built_on(project: Path, okfgit: Runner, git: Runner,
                                                          tmp_path: Path) -> None:
    # The editor commits the person's other work while they type: the branch moves under okfgit.
    editor = _editor(tmp_path, "import subprocess\n"
                               "open('work.txt', 'w').write('other work\\n')\n"
                               "subprocess.run(['git', 'add', 'work.txt'], check=True)\n"
                               "subprocess.run(['git', 'commit', '-qm', 'other work'], check=True)\n"
                               "open(p, 'w').write(text + 'Typed while committing.\\n')\n")
    okfgit("new", "typed", "--description", "Typed.", "--edit", cwd=project, extra_env={"EDITOR": editor})
    assert git("log", "--format=%s", "-2", cwd=project).out == "okf: add typed.md\nother work\n"
    assert git("show", "HEAD:.okf/typed.md", cwd=project).out.endswith("Typed while committing.\n")
    assert "[Typed](typed.md)" in git("show", "HEAD:.okf/index.md", cwd=project).out
    assert not (project / ".git" / "okf" / "drafts").exists()


def test_new_keeps_the_typed_text_when_it_is_invalid(project: Path, okfgit: Runner, git: Runner,
                                                     tmp_path: Path) -> None:
    editor = _editor(tmp_path, "open(p, 'w').write(text.replace('title: Oops', 'title: [oops') + 'my words\\n')\n")
    head = git("rev-parse", "HEAD", cwd=project).out
    err = okfgit("new", "oops", "--edit", cwd=project, extra_env={"EDITOR": editor}, expect=2).err
    assert "invalid YAML frontmatter" in err and "your text is kept in " in err
    kept = Path(err.split("your text is kept in ")[1].strip())
    assert kept.read_text().endswith("my words\n")
    assert kept.is_relative_to(project / ".git" / "okf" / "drafts")
    assert git("rev-parse", "HEAD", cwd=project).out == head


@pytest.mark.parametrize("editor", ["false", "no-such-editor-okfgit"])
def test_every_editor_failure_is_a_usage_error_and_writes_nothing(editor: str, project: Path, okfgit: Runner,
                                                                  git: Runner) -> None:
    before = git("rev-parse", "HEAD", cwd=project).out
    result = okfgit("new", "x", "--edit", cwd=project, extra_env={"EDITOR": editor, "VISUAL": editor}, expect=2)
    assert "the editor failed" in result.err and "nothing was written" in result.err
    assert git("rev-parse", "HEAD", cwd=project).out == before
    assert not (project / ".okf" / "x.md").exists()
    assert git("status", "--porcelain", cwd=project).out == ""
