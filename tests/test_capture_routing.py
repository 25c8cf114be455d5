"""Where captured facts land (by what a memory is about), and what capture refuses to commit.

A project's facts must never leave the project (through the global tier they would reach
every other repository Claude Code is used in), a person's facts (`user` memories) must
never be pushed with a project, and nothing doctor would reject is ever committed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.test_capture import blob, head, memory, split, write_memory

PROJECT_FACT = (
    b"---\n"
    b"name: dev-server-port\n"
    b"description: nookf dev server listens on 8443\n"
    b"metadata:\n"
    b"  type: project\n"
    b"---\n"
    b"The dev server listens on 8443.\n"
)
USER_FACT = (
    b"---\n"
    b"name: prefers-tabs\n"
    b"description: The user prefers tabs over spaces\n"
    b"metadata:\n"
    b"  type: user\n"
    b"  node_type: memory\n"
    b"---\n"
    b"Use tabs when writing code for this person.\n"
)


def new_repo(tmp_path: Path, git: Runner, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    git("init", "-q", "-b", "main", cwd=path)
    (path / "README.md").write_text(f"# {name}\n")
    git("add", "README.md", cwd=path)
    git("commit", "-q", "-m", "initial", cwd=path)
    return path


def mem_of(repo: Path, env: dict[str, str], home: Path) -> Path:
    folder = memory(repo, env, home)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def global_dir(home: Path) -> Path:
    return home / ".local" / "share" / "okf"


def tree(git: Runner, repo: Path, where: str = "") -> list[str]:
    args = ["ls-tree", "-r", "--name-only", "HEAD"] + ([where] if where else [])
    return git(*args, cwd=repo).out.split()


def test_a_repository_without_a_project_tier_leaks_nothing_into_other_projects(
        tmp_path: Path, env: dict[str, str], home: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "global", cwd=tmp_path)
    plain = new_repo(tmp_path, git, "nookf")
    other = new_repo(tmp_path, git, "other")
    okfgit("init", "--scope", "project", cwd=other)
    global_head = head(git, global_dir(home))
    plain_mem = mem_of(plain, env, home)
    fact = write_memory(plain_mem, "project_port.md", PROJECT_FACT)

    result = okfgit("sync", cwd=plain)
    assert head(git, global_dir(home)) == global_head  # nothing captured into the global tier
    assert head(git, plain) == git("rev-parse", "HEAD", cwd=plain).out.strip()
    assert tree(git, plain) == ["README.md"]
    assert fact.read_bytes() == PROJECT_FACT  # the agent's file as it was
    assert "capture off" in result.out
    # projection still writes what the global tier holds
    assert "okf:begin id=global" in (home / ".claude" / "CLAUDE.md").read_text()

    status = okfgit("status", cwd=plain, expect=None)
    assert "no project tier" in status.out and "okfgit init --scope project" in status.out
    assert "tiers: global\n" in status.out  # not "project, global": there is no .okf/ here

    okfgit("sync", cwd=other)
    other_mem = mem_of(other, env, home)
    assert "8443" not in "".join(p.read_text() for p in other_mem.rglob("*.md"))
    assert head(git, global_dir(home)) == global_head


def test_capture_to_global_is_refused_without_a_project_tier(
        tmp_path: Path, env: dict[str, str], home: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "global", cwd=tmp_path)
    plain = new_repo(tmp_path, git, "nookf")
    write_memory(mem_of(plain, env, home), "me.md", USER_FACT)
    global_head = head(git, global_dir(home))
    result = okfgit("capture", "--to", "global", cwd=plain)
    assert "no project tier" in result.out
    assert head(git, global_dir(home)) == global_head


def test_a_user_memory_lands_in_the_global_tier_and_never_in_the_project(
        tmp_path: Path, project: Path, env: dict[str, str], home: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "global", cwd=tmp_path)
    mem = mem_of(project, env, home)
    write_memory(mem, "user_tabs.md", USER_FACT)
    write_memory(mem, "project_port.md", PROJECT_FACT)
    okfgit("sync", cwd=project)

    assert tree(git, project, ".okf") == [".okf/.gitattributes", ".okf/index.md", ".okf/memory/dev-server-port.md",
                                          ".okf/memory/index.md"]
    assert "prefers" not in git("log", "-p", "--all", cwd=project).out
    meta, _ = split(blob(git, global_dir(home), "HEAD:memory/prefers-tabs.md"))
    assert meta["scope"] == "global" and meta["okf_origin"] == "user_tabs.md"
    # projected back to the same file in this project ...
    assert (mem / "user_tabs.md").read_bytes() == blob(git, global_dir(home), "HEAD:memory/prefers-tabs.md")
    # ... and, a fact about the person, into every other project's memory too
    other = new_repo(tmp_path, git, "other")
    okfgit("init", "--scope", "project", cwd=other)
    okfgit("sync", cwd=other)
    other_mem = mem_of(other, env, home)
    assert "prefers tabs" in (other_mem / "MEMORY.md").read_text().lower()
    assert "8443" not in "".join(p.read_text() for p in other_mem.rglob("*.md"))


def test_a_user_memory_waits_untouched_when_there_is_no_global_tier(
        project: Path, env: dict[str, str], home: Path, okfgit: Runner, git: Runner) -> None:
    mem = mem_of(project, env, home)
    fact = write_memory(mem, "user_tabs.md", USER_FACT)
    before = head(git, project)
    result = okfgit("sync", cwd=project)
    assert head(git, project) == before
    assert fact.read_bytes() == USER_FACT
    assert not global_dir(home).exists()
    assert f"not captured {fact}: a user memory" in result.err
    status = okfgit("status", cwd=project, expect=2)
    assert "okfgit init --scope global" in status.out
    assert "user_tabs.md" in status.out
    data = json.loads(okfgit("status", "--json", cwd=project, expect=2).out)
    assert [h["origin"] for h in data["capture"]["held"]] == ["user_tabs.md"]


def test_the_project_can_take_user_memories(project: Path, env: dict[str, str], home: Path, okfgit: Runner,
                                            git: Runner) -> None:
    (project / ".okf" / "okfgit.toml").write_text('user_memories = "project"\n')
    git("add", ".okf/okfgit.toml", cwd=project)
    git("commit", "-q", "-m", "take user memories", cwd=project)
    write_memory(mem_of(project, env, home), "user_tabs.md", USER_FACT)
    okfgit("sync", cwd=project)
    assert ".okf/memory/prefers-tabs.md" in tree(git, project, ".okf")
    assert not global_dir(home).exists()


def test_a_memorys_own_scope_narrows_but_never_widens(tmp_path: Path, project: Path, env: dict[str, str],
                                                     home: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "global", cwd=tmp_path)
    mem = mem_of(project, env, home)
    # a project fact (or a prompt injection) saying scope: global stays in the project
    says_global = PROJECT_FACT.replace(b"name: dev-server-port\n", b"name: editor-font\nscope: global\n")
    write_memory(mem, "font.md", says_global)
    okfgit("sync", cwd=project)
    assert ".okf/memory/editor-font.md" in tree(git, project, ".okf")
    assert "memory/editor-font.md" not in tree(git, global_dir(home))
    # a user fact may narrow itself to this project
    write_memory(mem, "tabs.md", USER_FACT.replace(b"name: prefers-tabs\n", b"name: prefers-tabs\nscope: project\n"))
    okfgit("sync", cwd=project)
    assert ".okf/memory/prefers-tabs.md" in tree(git, project, ".okf")
    # during a run, a project fact saying scope: project stays in the run (widening is promote's)
    okfgit("run", "start", "r1", cwd=project)
    write_memory(mem, "size.md", PROJECT_FACT.replace(b"name: dev-server-port\n", b"name: editor-size\nscope: project\n")
                 .replace(b"dev server listens on 8443", b"editor font is 14 points"))  # another fact
    okfgit("sync", cwd=project)
    assert "memory/editor-size.md" in tree(git, project / "runstate" / "r1" / "okf")
    assert ".okf/memory/editor-size.md" not in tree(git, project, ".okf")


def test_an_active_run_takes_project_facts_but_not_user_facts(
        tmp_path: Path, project: Path, env: dict[str, str], home: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("init", "--scope", "global", cwd=tmp_path)
    okfgit("run", "start", "r1", cwd=project)
    mem = mem_of(project, env, home)
    write_memory(mem, "user_tabs.md", USER_FACT)
    write_memory(mem, "project_port.md", PROJECT_FACT)
    okfgit("sync", cwd=project)
    job = project / "runstate" / "r1" / "okf"
    assert "memory/dev-server-port.md" in tree(git, job)
    assert "memory/prefers-tabs.md" in tree(git, global_dir(home))
    assert "memory/prefers-tabs.md" not in tree(git, job)


# -- what capture refuses to commit ----------------------------------------------------------

INVALID = {
    "type_list.md": (b"---\nname: both\ndescription: d\ntype: [user, project]\n---\nbody\n", "type"),
    "meta_type_list.md": (b"---\nname: both2\ndescription: d\nmetadata:\n  type: [user, project]\n---\nbody\n",
                          "type"),
    "numeric_name.md": (b"---\nname: 42\ndescription: d\ntype: project\n---\nbody\n", "name"),
    "numeric_description.md": (b"---\nname: num-desc\ndescription: 3.5\ntype: project\n---\nbody\n", "description"),
    "list_title.md": (b"---\nname: t\ntitle: [a, b]\ndescription: d\ntype: project\n---\nbody\n", "title"),
    "empty_frontmatter.md": (b"---\n---\nJust a body.\n", "empty frontmatter"),
    "no_description.md": (b"---\nname: quiet\ntype: project\n---\nbody\n", "description"),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_a_memory_that_would_not_be_a_valid_concept_is_left_in_place(
        name: str, project: Path, env: dict[str, str], home: Path, okfgit: Runner, git: Runner) -> None:
    data, key = INVALID[name]
    mem = mem_of(project, env, home)
    bad = write_memory(mem, name, data)
    before = head(git, project)
    result = okfgit("sync", cwd=project)
    assert head(git, project) == before  # nothing committed
    assert bad.read_bytes() == data  # left as the agent wrote it
    warning = next(line for line in result.err.splitlines() if str(bad) in line)
    assert key in warning.split(str(bad), 1)[1]
    status = json.loads(okfgit("status", "--json", cwd=project, expect=2).out)
    assert name in [u["origin"] for u in status["capture"]["unreadable"]]
    assert okfgit("doctor", "--scope", "project", cwd=project).code == 0


def test_a_sync_that_left_a_memory_waiting_looks_again_and_a_clean_one_still_sees_an_edit(
        tmp_path: Path, project: Path, env: dict[str, str], home: Path, okfgit: Runner, git: Runner) -> None:
    """Sync skips reading the memory folder only when it is as the last sync left it and that
    sync left nothing waiting: a memory held for want of a global tier is taken once the tier
    exists, though no file changed; and after a clean sync an in-place edit is still captured."""
    mem = mem_of(project, env, home)
    write_memory(mem, "user_tabs.md", USER_FACT)
    assert "not captured" in okfgit("sync", cwd=project).err  # waiting: the folder is not vouched for
    okfgit("init", "--scope", "global", cwd=tmp_path)
    okfgit("sync", cwd=project)
    assert "memory/prefers-tabs.md" in git("ls-tree", "-r", "--name-only", "HEAD", cwd=global_dir(home)).out
    okfgit("sync", cwd=project)  # now clean: the next sync has the folder as this one left it
    write_memory(mem, "project_port.md", PROJECT_FACT)
    okfgit("sync", cwd=project)
    assert ".okf/memory/dev-server-port.md" in tree(git, project, ".okf")
    okfgit("sync", cwd=project)
    edited = (mem / "project_port.md").read_bytes().replace(b"8443", b"9443")
    (mem / "project_port.md").write_bytes(edited)  # in place: the folder's own time does not move
    okfgit("sync", cwd=project)
    assert b"9443" in blob(git, project, "HEAD:.okf/memory/dev-server-port.md")
