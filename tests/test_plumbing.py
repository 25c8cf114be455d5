"""plumbing.Plumbing (git's own plumbing) answers every Reader question exactly as git.Repo (libgit2) does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from okfgit.git import Repo
from okfgit.plumbing import Change, Plumbing, blob_oid
from tests.conftest import Runner


def _commit(git: Runner, repo: Path, message: str) -> str:
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo).out.strip()


@pytest.fixture
def history(repo: Path, git: Runner, tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository whose commits hold every kind of entry and change a reader meets."""
    kb = repo / ".okf"
    (kb / "a" / "b").mkdir(parents=True)
    (kb / "index.md").write_text("# KB\n")
    (kb / "a" / "x.md").write_text("---\ntype: Note\n---\nx\n")
    (kb / "a" / "b" / "deep.md").write_text("deep\n")
    (kb / "ünï cödé name.md").write_text("unicode\n")
    (kb / "run.sh").write_text("#!/bin/sh\n")
    (kb / "run.sh").chmod(0o755)
    os.symlink("a/x.md", kb / "link.md")
    (kb / "gone.md").write_text("soon gone\n")
    (kb / "becomes").write_text("a file that becomes a folder\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    git("init", "-q", "-b", "main", cwd=sub)
    git("commit", "-q", "--allow-empty", "-m", "sub", cwd=sub)
    sub_head = git("rev-parse", "HEAD", cwd=sub).out.strip()
    git("update-index", "--add", "--cacheinfo", f"160000,{sub_head},.okf/module", cwd=repo)
    first = _commit(git, repo, "everything")
    (kb / "a" / "x.md").write_text("---\ntype: Note\n---\nx changed\n")
    (kb / "gone.md").unlink()
    (kb / "becomes").unlink()
    (kb / "becomes").mkdir()
    (kb / "becomes" / "inside.md").write_text("now a folder\n")
    (kb / "run.sh").chmod(0o644)
    (kb / "new file.md").write_text("added\n")
    second = _commit(git, repo, "changes")
    return repo, [first, second]


def test_both_readers_answer_alike(history: tuple[Path, list[str]]) -> None:
    repo, (first, second) = history
    lib, pipe = Repo.open(repo), Plumbing.open(repo)
    assert (pipe.workdir, pipe.gitdir, pipe.common_dir, pipe.main_workdir) == (
        lib.workdir, lib.gitdir, lib.common_dir, lib.main_workdir)
    assert pipe.head_commit() == lib.head_commit() == second
    for rev in ("HEAD", "HEAD~1", "main", first[:10]):
        assert pipe.resolve(rev) == lib.resolve(rev)
    for commit in (first, second, None):
        for prefix in ("", ".okf", ".okf/a", ".okf/missing", ".okf/index.md"):
            assert pipe.tree_oid(commit, prefix) == lib.tree_oid(commit, prefix), (commit, prefix)
            assert pipe.tree_entries(commit, prefix) == lib.tree_entries(commit, prefix), (commit, prefix)
        for path in (".okf/a/x.md", ".okf/link.md", ".okf/module", ".okf/a", ".okf/run.sh", ".okf/nope.md",
                     ".okf/ünï cödé name.md", ".okf/becomes", "README.md", ""):
            assert pipe.entry_at(commit, path) == lib.entry_at(commit, path), (commit, path)
    trees = [lib.tree_oid(c, ".okf") for c in (first, second)]
    for tree in trees:
        assert tree is not None
        paths = ["a/x.md", "a/b/deep.md", "link.md", "nope.md", "missing/x.md", "becomes/inside.md", "module"]
        assert pipe.entries_in(tree, paths) == lib.entries_in(tree, paths)
        for folder in ("", "a", "a/b", "becomes", "nope"):
            assert pipe.listing(tree, folder) == lib.listing(tree, folder)
    for old, new in ((trees[0], trees[1]), (trees[1], trees[0]), (None, trees[0]), (trees[1], None),
                     (trees[0], trees[0])):
        assert _changes(pipe.diff_paths(old, new)) == _changes(lib.diff_paths(old, new)), (old, new)
    blobs = [e.oid for e in lib.tree_entries(second, ".okf").values()]
    assert pipe.read_blobs(blobs) == lib.read_blobs(blobs)
    assert list(pipe.iter_blobs(blobs)) == list(lib.iter_blobs(blobs)) == list(lib.read_blobs(blobs).items())
    assert all(blob_oid(pipe.read_blob(oid)) == oid for oid in blobs)
    with pytest.raises(KeyError):
        pipe.read_blob("0" * 40)
    with pytest.raises(KeyError):
        pipe.read_blob(trees[0])  # a tree is not a blob


def _changes(changes: list[Change]) -> set[tuple[str, str | None, str | None]]:
    """A diff as what changed where: a path's deletion and addition (libgit2 splits a change of
    kind into the two) read as one change of that path."""
    by_path: dict[str, list[Change]] = {}
    for c in changes:
        by_path.setdefault(c.path, []).append(c)
    out = set()
    for path, found in by_path.items():
        old = next((c.old for c in found if c.old), None)
        new = next((c.new for c in found if c.new), None)
        out.add((path, old, new))
    return out


def test_unborn_detached_and_linked_worktree(repo: Path, git: Runner, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    git("init", "-q", "-b", "main", str(empty), cwd=tmp_path)
    assert Plumbing.open(empty).head_commit() is None and Repo.open(empty).head_commit() is None
    assert Plumbing.open(empty).tree_entries(None) == {}
    head = git("rev-parse", "HEAD", cwd=repo).out.strip()
    git("worktree", "add", "-q", "--detach", str(tmp_path / "wt"), cwd=repo)
    wt_pipe, wt_lib = Plumbing.open(tmp_path / "wt"), Repo.open(tmp_path / "wt")
    assert wt_pipe.head_commit() == wt_lib.head_commit() == head
    assert (wt_pipe.gitdir, wt_pipe.common_dir, wt_pipe.main_workdir) == (
        wt_lib.gitdir, wt_lib.common_dir, wt_lib.main_workdir)
    found = Plumbing.discover(tmp_path / "wt")
    assert found is not None and found.workdir == wt_lib.workdir
    assert Plumbing.discover(tmp_path) is None or Plumbing.discover(tmp_path).workdir != wt_lib.workdir


def test_config_is_asked_of_git_only_when_a_file_could_set_it(repo: Path, git: Runner) -> None:
    pipe = Plumbing.open(repo)
    assert pipe.config_get("okf.run") is None
    git("config", "user.name", "okfgit person", cwd=repo)  # names "okf" but sets nothing of okf's
    assert pipe.config_get("okf.run") is None
    git("config", "okf.run", "r1", cwd=repo)
    assert pipe.config_get("okf.run") == "r1"
    git("config", "--unset", "okf.run", cwd=repo)
    included = repo.parent / "extra.gitconfig"
    included.write_text("[okf]\n\trun = from-include\n")
    git("config", "include.path", str(included), cwd=repo)
    assert pipe.config_get("okf.run") == "from-include"  # an include could set it: git is asked


def test_a_read_verb_never_loads_libgit2(project: Path, okfgit: Runner, env: dict[str, str]) -> None:
    okfgit("new", "cached-lookups", "--title", "Cached lookups", "--description", "Lookups are cached.", cwd=project)
    okfgit("sync", cwd=project)
    script = ("import sys\nfrom okfgit.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
              "print('LOADED' if 'pygit2' in sys.modules else 'FREE', file=sys.stderr)\n")
    for argv in (["cat", "cached-lookups"], ["search", "cached"], ["ls"], ["links", "cached-lookups"], ["status"],
                 ["project"], ["doctor"]):
        proc = subprocess.run([sys.executable, "-c", script, *argv], cwd=project, env=env, capture_output=True,
                              text=True)
        assert proc.stderr.rstrip().endswith("FREE"), (argv, proc.stderr)


def test_a_catalog_read_stopped_midway_leaves_the_reader_in_step(history: tuple[Path, list[str]]) -> None:
    """A full catalog read parses each blob as git answers; when a fact fails part way, the
    answers still in the pipe are read off, so the reader's next answer is its own."""
    from okfgit.knowledge import catalog
    from okfgit.knowledge.tiers import Tier

    repo, (_, second) = history
    pipe = Plumbing.open(repo)
    entries = pipe.tree_entries(second, ".okf")
    seen: list[str] = []

    def fact(label: str, path: str, entry: object, data: bytes) -> str:
        seen.append(path)
        if len(seen) == 2:
            raise RuntimeError("a fact that fails")
        return path

    kind = catalog.Kind("cards", fact, lambda value: value[0], lambda path: path.endswith(".md"))
    tier = Tier("project", repo, ".okf")
    tree = pipe.tree_oid(second, ".okf")
    assert tree is not None
    with pytest.raises(RuntimeError):
        catalog.build_kind(kind, pipe, tier, second, tree, None)
    x = entries["a/x.md"].oid
    assert pipe.read_blob(x) == Repo.open(repo).read_blob(x)


def test_readers_of_one_repository_share_one_cat_file_and_may_interleave(
        history: tuple[Path, list[str]], tmp_path: Path) -> None:
    """Every reader of a repository in a process asks one ``cat-file --batch``; a read in
    the middle of another's stream, a stream left unfinished and a missing object each get
    their own answers, and the next reads are still in step."""
    repo, (first, second) = history
    lib = Repo.open(repo)
    a, b = Plumbing.open(repo), Plumbing.open(repo)
    entries = {p: e.oid for p, e in a.tree_entries(second, ".okf").items() if e.is_file}
    oids = list(entries.values())
    assert len(oids) >= 5
    want = {oid: lib.read_blob(oid) for oid in oids}
    stream = a.iter_blobs(oids)
    got = [next(stream)]
    assert b.read_blob(oids[-1]) == want[oids[-1]]  # asked after the stream's answers, answered first
    inner = b.iter_blobs(reversed(oids))
    assert next(inner) == (oids[-1], want[oids[-1]])
    del inner  # abandoned with answers still in the pipe
    with pytest.raises(KeyError):
        b.read_blob("0" * 40)
    got += list(stream)
    assert got == [(oid, want[oid]) for oid in oids]
    for oid in oids:
        assert a.read_blob(oid) == b.read_blob(oid) == want[oid]
    assert a._objects() is b._objects()  # one process for both
    trace = tmp_path / "trace"
    script = ("import sys; from pathlib import Path; from okfgit.plumbing import Plumbing\n"
              "for _ in range(3):\n"
              "    r = Plumbing.open(Path(sys.argv[1])); r.read_blob(sys.argv[2])\n")
    subprocess.run([sys.executable, "-c", script, str(repo), oids[0]], check=True,
                   env={**os.environ, "GIT_TRACE": str(trace)})
    assert trace.read_text().count("cat-file --batch") == 1


def test_a_cat_file_that_died_fails_its_reader_clearly_and_the_next_reader_gets_a_new_one(
        history: tuple[Path, list[str]]) -> None:
    import signal

    from okfgit.errors import IntegrityError

    repo, (_, second) = history
    reader = Plumbing.open(repo)
    oid = reader.tree_entries(second, ".okf")["a/x.md"].oid
    want = reader.read_blob(oid)
    batch = reader._objects()
    os.kill(batch._pid, signal.SIGKILL)
    os.waitpid(batch._pid, 0)
    with pytest.raises(IntegrityError, match="cat-file"):
        reader.read_blob(oid)
    fresh = Plumbing.open(repo)
    assert fresh.read_blob(oid) == want and fresh._objects() is not batch
