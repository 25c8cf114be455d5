"""The global tier through a git remote: init --remote, the remote verb, and sync's exchange.

Two machines are two sandbox homes (HOME, XDG_*, CLAUDE_CONFIG_DIR, CODEX_HOME) sharing
one bare repository on disk as the remote; everything runs real git.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from okfgit.targets.claude_home import memory_dir
from tests.conftest import Result, Runner, _git_env, _run_in_process, _run_process, _runner, fsck, trailers_by_git


@dataclass
class Machine:
    home: Path
    env: dict[str, str]
    okfgit: Runner
    proc: Runner
    proj: Path

    @property
    def tier(self) -> Path:
        return self.home / ".local" / "share" / "okf"

    @property
    def memory(self) -> Path:
        return memory_dir(self.proj.resolve(), self.env, self.home).path

    def git(self, *args: str, cwd: Path | None = None, expect: int | None = 0) -> Result:
        proc = subprocess.run(["git", *args], cwd=cwd or self.tier, env=self.env, capture_output=True, text=True,
                              timeout=120)
        result = Result(proc.returncode, proc.stdout, proc.stderr)
        if expect is not None:
            assert proc.returncode == expect, result
        return result

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").out.strip()

    def new(self, slug: str, description: str) -> None:
        self.okfgit("new", slug, "--scope", "global", "--description", description, cwd=self.proj)

    def edit(self, path: str, old: str, new: str) -> None:
        """A person edits a global concept and commits it with plain git."""
        file = self.tier / path
        file.write_text(file.read_text().replace(old, new))
        self.git("commit", "-q", "-am", f"edit {path}")


def machine(tmp_path: Path, name: str) -> Machine:
    home = tmp_path / name
    home.mkdir()
    for agent in (".claude", ".codex"):  # a machine where Claude Code and Codex have run
        (home / agent).mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[user]\n\tname = Test Author\n"
                                     "\temail = author@example.com\n")
    env = _git_env(home)
    proj = home / "proj"
    proj.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=proj, env=env, check=True, capture_output=True)
    return Machine(home, env, _runner(env, _run_in_process), _runner(env, _run_process), proj)


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True, capture_output=True)
    return path


@pytest.fixture
def a(tmp_path: Path) -> Machine:
    return machine(tmp_path, "a")


@pytest.fixture
def b(tmp_path: Path) -> Machine:
    return machine(tmp_path, "b")


def exchange_record(m: Machine) -> bool:
    """The global tier's store holds a record of exchanges with a remote (local/exchange.py)."""
    from okfgit.local import exchange
    from okfgit.local.store import Store

    return Store(m.tier / ".git").record(exchange.NAME) is not None


def remote_log(bare: Path) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%H", "main"], cwd=bare, capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else []


# -- init --remote and the remote verb ----------------------------------------------------------


def test_init_with_an_empty_remote_pushes_the_local_tier(a: Machine, bare: Path) -> None:
    result = a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.home)  # no project needed
    assert "the remote was empty; pushed the local tier" in result.out
    assert remote_log(bare) == [a.head()]
    assert a.git("config", "branch.main.remote").out.strip() == "origin"
    again = a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    assert "the remote had nothing new" in again.out and remote_log(bare) == [a.head()]


def test_init_from_a_remote_with_history_clones_it(a: Machine, b: Machine, bare: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.new("use-uv", "Python projects use uv for environments.")
    a.okfgit("sync", cwd=a.proj)
    assert remote_log(bare)[0] == a.head()
    result = b.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=b.proj)
    assert "took the remote's history" in result.out
    assert b.head() == a.head()
    assert (b.tier / "use-uv.md").read_bytes() == (a.tier / "use-uv.md").read_bytes()
    assert b.git("status", "--porcelain").out == ""
    b.okfgit("sync", cwd=b.proj)
    assert any("uv for environments" in f.read_text() for f in b.memory.glob("*.md"))


def test_init_merges_an_existing_local_tier_by_concept(a: Machine, b: Machine, bare: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.new("from-a", "A fact machine A learned.")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    b.okfgit("init", "--scope", "global", cwd=b.proj)
    b.new("from-b", "A fact machine B learned.")
    mine = b.head()
    result = b.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=b.proj)
    assert "merged the remote's history by concept" in result.out
    assert (b.tier / "from-a.md").exists() and (b.tier / "from-b.md").exists()
    parents = b.git("log", "-1", "--format=%P").out.split()
    assert mine in parents and a.head() in parents
    message = b.git("log", "-1", "--format=%B").out
    assert "Okf-Operation: merge" in message and f"Okf-Source: {bare}" in message
    index = (b.tier / "index.md").read_text()
    assert "from-a.md" in index and "from-b.md" in index
    assert remote_log(bare)[0] == b.head()
    b.okfgit("doctor", "--scope", "global", cwd=b.proj)


def test_a_url_with_a_password_is_refused(a: Machine) -> None:
    result = a.okfgit("init", "--scope", "global", "--remote", "https://me:s3cret@example.com/kb.git",
                      cwd=a.proj, expect=2)
    assert "password" in result.err and "s3cret" not in result.err + result.out
    a.okfgit("init", "--scope", "global", cwd=a.proj)
    assert "s3cret" not in a.okfgit("remote", "set", "https://me:s3cret@example.com/kb.git", cwd=a.proj,
                                    expect=2).err
    assert "origin" not in a.git("remote").out


def test_remote_show_set_remove_and_a_plain_git_remote(a: Machine, bare: Path, tmp_path: Path) -> None:
    a.okfgit("init", "--scope", "global", cwd=a.proj)
    assert "global remote: none" in a.okfgit("remote", cwd=a.proj).out
    a.git("remote", "add", "origin", str(bare))  # a plain git remote is respected
    a.new("x", "A fact.")
    result = a.okfgit("sync", cwd=a.proj)
    assert "pushed the global tier" in result.out
    assert remote_log(bare)[0] == a.head()
    shown = json.loads(a.okfgit("remote", "show", "--json", cwd=a.proj).out)
    assert shown["url"] == str(bare) and shown["ahead"] == 0 and shown["behind"] == 0
    assert shown["last_exchange"] is not None
    other = tmp_path / "other.git"
    subprocess.run(["git", "init", "-q", "--bare", str(other)], check=True)
    moved = a.okfgit("remote", "set", str(other), cwd=a.proj).out
    assert str(other) in moved and "last exchange: never" in moved
    assert a.git("remote", "get-url", "origin").out.strip() == str(other)
    assert "removed" in a.okfgit("remote", "remove", cwd=a.proj).out
    assert a.git("remote").out == "" and not exchange_record(a)
    assert "global remote: none" in a.okfgit("remote", "show", cwd=a.proj).out


def test_init_with_an_unreachable_remote_changes_nothing(a: Machine, tmp_path: Path) -> None:
    result = a.okfgit("init", "--scope", "global", "--remote", str(tmp_path / "nowhere.git"), cwd=a.proj, expect=3)
    assert "cannot fetch" in result.err
    assert a.git("remote").out == ""


# -- the exchange inside sync ------------------------------------------------------------------


def two_machines(a: Machine, b: Machine, bare: Path) -> None:
    """A starts the remote with one concept; B takes it."""
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.new("editor", "The person edits with a modal editor.")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    b.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=b.proj)
    assert b.head() == a.head()


def test_both_edit_one_concept_apart_each_ends_with_master_and_sibling(a: Machine, b: Machine, bare: Path) -> None:
    two_machines(a, b, bare)
    a.edit("editor.md", "modal editor", "modal editor (vim)")
    b.edit("editor.md", "modal editor", "modal editor (helix)")
    assert "pushed the global tier" in a.okfgit("sync", "--fetch", cwd=a.proj).out
    result = b.okfgit("sync", "--fetch", cwd=b.proj)
    assert "merged the global remote (1 need a merge)" in result.out and "pushed the global tier" in result.out
    assert "editor.md: the concept changed both here and on the global remote" in result.err
    assert "global:editor.needs-merge.md" in result.err
    assert "global tier updated from its remote" in a.okfgit("sync", "--fetch", cwd=a.proj).out
    for m in (a, b):
        assert m.head() == remote_log(bare)[0]
        assert "(helix)" in (m.tier / "editor.md").read_text()
        assert "(vim)" in (m.tier / "editor.needs-merge.md").read_text()
        assert m.git("status", "--porcelain").out == ""
        doctor = m.okfgit("doctor", "--scope", "global", cwd=m.proj, expect=2)
        assert "needs-merge" in doctor.out + doctor.err and "editor.needs-merge.md" in doctor.out + doctor.err
        assert "editor.needs-merge.md" not in (m.tier / "index.md").read_text()
    merge = b.git("log", "-1", "--format=%B", "--merges").out
    assert "Okf-Operation: merge" in merge and f"Okf-Source: {bare}" in merge
    assert "- conflict: editor.md -> editor.needs-merge.md" in merge
    fsck(lambda *x, **k: b.git(*x), b.tier)  # type: ignore[arg-type]


def test_both_change_other_keys_of_one_concept_and_it_merges_by_key(a: Machine, b: Machine, bare: Path) -> None:
    two_machines(a, b, bare)
    a.edit("editor.md", "title: Editor\n", "title: Text editor\n")
    b.edit("editor.md", "okf_source: authored\n", "okf_source: authored\nstatus: stable\n")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    result = b.okfgit("sync", "--fetch", cwd=b.proj)
    assert "merged the global remote" in result.out and "need a merge" not in result.out
    text = (b.tier / "editor.md").read_text()
    assert "title: Text editor\n" in text and "status: stable\n" in text
    assert not (b.tier / "editor.needs-merge.md").exists()
    assert "- merged: editor.md (each side changed other frontmatter keys)" in b.git("log", "-1", "--format=%B").out
    assert "[Text editor](editor.md)" in (b.tier / "index.md").read_text()
    b.okfgit("doctor", "--scope", "global", cwd=b.proj)


def test_a_concept_deleted_on_one_side_and_changed_on_the_other_is_kept(a: Machine, b: Machine,
                                                                        bare: Path) -> None:
    two_machines(a, b, bare)
    a.edit("editor.md", "modal editor", "modal editor (vim)")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    b.git("rm", "-q", "editor.md")
    b.git("commit", "-qm", "drop editor")
    result = b.okfgit("sync", "--fetch", cwd=b.proj)
    assert "editor.md: deleted on one side and changed on the other; kept the changed version" in result.err
    assert "(vim)" in (b.tier / "editor.md").read_text()
    assert "editor.md" in (b.tier / "index.md").read_text()
    a.okfgit("sync", "--fetch", cwd=a.proj)
    assert (a.tier / "editor.md").exists() and a.head() == b.head() == remote_log(bare)[0]


def test_a_change_on_one_side_only_is_taken_and_indexes_follow(a: Machine, b: Machine, bare: Path) -> None:
    two_machines(a, b, bare)
    a.new("shell", "The person's shell is zsh.")
    b.new("pager", "The person's pager is less.")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    result = b.okfgit("sync", "--fetch", cwd=b.proj)
    assert "merged the global remote" in result.out and "need a merge" not in result.out
    index = (b.tier / "index.md").read_text()
    assert "shell.md" in index and "pager.md" in index
    b.okfgit("index", "--scope", "global", "--check", cwd=b.proj)
    b.okfgit("doctor", "--scope", "global", cwd=b.proj)
    assert any("zsh" in f.read_text() for f in b.memory.glob("*.md"))


def test_an_unreachable_remote_warns_once_and_the_commit_is_pushed_later(a: Machine, bare: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    before = remote_log(bare)
    away = bare.with_name("away.git")
    bare.rename(away)
    a.new("offline", "A fact learned without network.")
    result = a.okfgit("sync", "--fetch", cwd=a.proj)
    assert (result.out + result.err).count("global remote unreachable, will retry") == 1, result
    assert any("offline" in f.name for f in a.memory.glob("*.md"))  # projected all the same
    # within the interval, no sync touches the network again (and none warns again)
    a.new("offline-2", "Another fact learned without network.")
    quiet = a.okfgit("sync", cwd=a.proj)
    assert "unreachable" not in quiet.out + quiet.err
    assert "last attempt failed" in a.okfgit("status", cwd=a.proj).out
    away.rename(bare)
    assert remote_log(bare) == before
    assert "pushed the global tier" in a.okfgit("sync", "--fetch", cwd=a.proj).out
    assert remote_log(bare)[0] == a.head()


def test_a_push_rejected_because_the_remote_moved_is_retried_once(a: Machine, b: Machine, bare: Path) -> None:
    two_machines(a, b, bare)
    b.okfgit("sync", "--fetch", cwd=b.proj)  # B's last fetch is now: the next sync will not fetch first
    a.new("from-a", "A fact machine A learned.")
    a.okfgit("sync", cwd=a.proj)
    b.new("from-b", "A fact machine B learned.")
    result = b.okfgit("sync", cwd=b.proj)
    assert "merged the global remote" in result.out and "pushed the global tier" in result.out
    assert remote_log(bare)[0] == b.head()
    assert (b.tier / "from-a.md").exists() and (b.tier / "from-b.md").exists()


def test_status_shows_the_remote_ahead_behind_and_last_exchange(a: Machine, b: Machine, bare: Path) -> None:
    two_machines(a, b, bare)
    a.new("late", "A fact not yet sent.")
    text = a.okfgit("status", cwd=a.proj).out
    assert f"global remote: {bare} (origin, main -> main)" in text
    assert "1 ahead, 0 behind" in text and "last exchange: never" not in text
    data = json.loads(a.okfgit("status", "--json", cwd=a.proj).out)["global_remote"]
    assert data["ahead"] == 1 and data["behind"] == 0 and data["url"] == str(bare)


def test_a_hook_no_op_with_an_unreachable_remote_does_no_network(a: Machine, bare: Path, tmp_path: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.okfgit("sync", cwd=a.proj)
    a.git("remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    a.git("config", "okf.fetchInterval", "0")
    a.okfgit("sync", cwd=a.proj)  # due: tries, warns, records the failure
    a.git("config", "--unset", "okf.fetchInterval")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "okfgit", "sync", "--hook", "post-merge", "--",
                           "0"], cwd=a.proj, env=a.env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "" and "unreachable" not in proc.stderr, proc
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "okfgit.local.fastpath" in imported  # it ran the no-op check ...
    assert not imported & {"okfgit.transport", "okfgit.flows.exchange", "okfgit.local.exchange", "pygit2"}


@pytest.mark.slow
def test_syncs_on_two_machines_at_once_converge_and_lose_nothing(a: Machine, b: Machine, bare: Path) -> None:
    two_machines(a, b, bare)
    made: list[str] = []
    for n in range(20):
        for m, name in ((a, "a"), (b, "b")):
            m.new(f"{name}-{n}", f"Fact {n} from machine {name}.")
            made.append(m.head())
        if n % 5 == 0:  # and a concept both change while apart
            a.edit("editor.md", "editor", f"editor a{n}")
            b.edit("editor.md", "editor", f"editor b{n}")
            made += [a.head(), b.head()]
        procs = [subprocess.Popen([sys.executable, "-m", "okfgit", "sync", "--fetch"], cwd=m.proj, env=m.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for m in (a, b)]
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, (out, err)
    for m in (a, b, a):
        m.okfgit("sync", "--fetch", cwd=m.proj)
    top = remote_log(bare)[0]
    assert a.head() == b.head() == top
    for commit in made:
        subprocess.run(["git", "merge-base", "--is-ancestor", commit, top], cwd=bare, check=True)
    for m in (a, b):
        names = {p.name for p in m.tier.glob("*.md")}
        assert {f"{x}-{n}.md" for x in "ab" for n in range(20)} <= names
        fsck(lambda *x, **k: m.git(*x), m.tier)  # type: ignore[arg-type]
        assert m.git("status", "--porcelain").out == ""
    subprocess.run(["git", "fsck", "--strict", "--no-progress"], cwd=bare, check=True, capture_output=True)


def test_the_same_new_path_on_both_sides_keeps_both(a: Machine, b: Machine, bare: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.new("shell", "The person's shell is zsh.")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    b.okfgit("init", "--scope", "global", cwd=b.proj)
    b.new("shell", "The person's shell is fish.")
    result = b.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=b.proj)
    assert "global:shell.needs-merge.md" in result.err
    assert "fish" in (b.tier / "shell.md").read_text() and "zsh" in (b.tier / "shell.needs-merge.md").read_text()


def test_uncommitted_edits_in_the_global_tier_defer_the_exchange(a: Machine, b: Machine, bare: Path) -> None:
    two_machines(a, b, bare)
    a.edit("editor.md", "modal editor", "modal editor (vim)")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    (b.tier / "editor.md").write_text((b.tier / "editor.md").read_text() + "\nA person typing.\n")
    before = b.head()
    result = b.okfgit("sync", "--fetch", cwd=b.proj)
    assert "global exchange deferred (global tier busy)" in result.out
    assert "uncommitted edits in editor.md" in result.err
    assert b.head() == before and "A person typing." in (b.tier / "editor.md").read_text()


def test_a_hook_sync_pushes_but_fetches_at_most_once_per_interval(a: Machine, bare: Path) -> None:
    from okfgit.local import exchange as record
    from okfgit.local.store import Store

    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.okfgit("sync", "--fetch", cwd=a.proj)
    fetched = record.load(Store(a.tier / ".git")).last_attempt
    a.new("hooked", "A fact written between two commits.")
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "work"], cwd=a.proj, env=a.env, check=True)
    result = a.proc("sync", "--repo", str(a.proj), "--hook", "post-commit", cwd=a.proj)
    assert result.out == "" and "pushed the global tier" in result.err and len(result.err.splitlines()) == 1
    assert remote_log(bare)[0] == a.head()
    assert record.load(Store(a.tier / ".git")).last_attempt == fetched  # pushed without fetching again


def test_a_remote_removed_with_plain_git_is_forgotten(a: Machine, bare: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.git("remote", "remove", "origin")
    a.git("config", "okf.fetchInterval", "0")
    assert "global" not in a.okfgit("sync", cwd=a.proj).out
    assert not exchange_record(a)
    assert a.okfgit("sync", cwd=a.proj).out == "okfgit sync: up to date\n"


def test_a_hook_says_unreachable_in_its_one_line(a: Machine, bare: Path, tmp_path: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    a.git("remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    a.git("config", "okf.fetchInterval", "0")
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "work"], cwd=a.proj, env=a.env, check=True)
    result = a.proc("sync", "--repo", str(a.proj), "--hook", "post-commit", cwd=a.proj)
    assert result.out == "" and len(result.err.splitlines()) == 1
    assert "global remote unreachable, will retry" in result.err


def test_a_remote_that_never_answers_is_cut_off_at_the_deadline(a: Machine, bare: Path, tmp_path: Path) -> None:
    a.okfgit("init", "--scope", "global", "--remote", str(bare), cwd=a.proj)
    hang = tmp_path / "hang.sh"
    hang.write_text("#!/bin/sh\nsleep 120\n")
    hang.chmod(0o755)
    a.git("config", "core.sshCommand", str(hang))
    a.git("config", "okf.fetchTimeout", "1")
    a.git("remote", "set-url", "origin", "ssh://git.example.invalid/me/okf.git")
    result = a.okfgit("sync", "--fetch", cwd=a.proj)
    assert "global remote unreachable, will retry" in result.out
    assert "global remote ssh://git.example.invalid/me/okf.git: no answer within 1 s" in result.err


def test_user_memories_stay_on_the_machine_unless_the_person_shares_them(a: Machine, bare: Path) -> None:
    from tests.test_capture_routing import PROJECT_FACT, USER_FACT

    a.okfgit("init", "--scope", "global", cwd=a.proj)
    a.okfgit("init", "--scope", "project", cwd=a.proj)
    a.memory.mkdir(parents=True, exist_ok=True)
    (a.memory / "user_tabs.md").write_bytes(USER_FACT)
    # a project's fact whose frontmatter says scope: global (an agent's text, or an injection)
    (a.memory / "port.md").write_bytes(PROJECT_FACT.replace(b"metadata:", b"scope: global\nmetadata:"))
    a.okfgit("sync", cwd=a.proj)  # no remote yet: the fact about the person is captured, locally
    assert "memory/prefers-tabs.md" in a.git("ls-tree", "-r", "--name-only", "HEAD").out

    # a remote that would receive it: nothing is pushed, and the person is told why
    result = a.okfgit("remote", "set", str(bare), cwd=a.proj)
    synced = a.okfgit("sync", "--fetch", cwd=a.proj)
    assert "not pushed: 1 user memory stays on this machine" in synced.out, (result.out, synced)
    assert "config okf.pushUserMemories true" in synced.err
    assert remote_log(bare) == []
    # a new user memory is now held rather than put where it would travel
    (a.memory / "user_vim.md").write_bytes(USER_FACT.replace(b"prefers-tabs", b"uses-vim")  # another fact
                                           .replace(b"prefers tabs over spaces", b"edits code in vim")
                                           .replace(b"Use tabs when writing code", b"Show vim key bindings"))
    held = a.okfgit("status", cwd=a.proj, expect=2)
    assert "user_vim.md: a user memory (about you, not the project) goes to the global tier, which is pushed" in held.out

    # the person opts in: then the remote receives exactly the tier
    a.git("config", "okf.pushUserMemories", "true")
    a.okfgit("sync", "--fetch", cwd=a.proj)
    assert remote_log(bare) and remote_log(bare)[0] == a.head()
    arrived = a.git("ls-tree", "-r", "--name-only", "main", cwd=bare).out.split()
    assert arrived == ["index.md", "memory/index.md", "memory/prefers-tabs.md", "memory/uses-vim.md"]
    assert ".okf/memory/dev-server-port.md" in a.git("ls-files", cwd=a.proj).out  # the project's stays there


@pytest.mark.parametrize("rounds", [3, pytest.param(20, marks=pytest.mark.slow)])
def test_two_machines_editing_one_concept_round_after_round_keep_one_sibling(a: Machine, b: Machine, bare: Path,
                                                                               rounds: int) -> None:
    two_machines(a, b, bare)
    for n in range(rounds):
        for m, who in ((a, "A"), (b, "B")):
            file = m.tier / "editor.md"
            file.write_text(file.read_text() + f"\n{who} learned thing {n}.\n")
            m.git("commit", "-qam", f"{who} {n}")
        a.okfgit("sync", "--fetch", cwd=a.proj)
        b.okfgit("sync", "--fetch", cwd=b.proj)
        a.okfgit("sync", "--fetch", cwd=a.proj)
    for m in (a, b):
        assert sorted(p.name for p in m.tier.glob("*.md")) == ["editor.md", "editor.needs-merge.md", "index.md"]
        assert m.head() == remote_log(bare)[0]
    words = (b.tier / "editor.md").read_text() + (b.tier / "editor.needs-merge.md").read_text()
    for n in range(rounds):  # every word either machine wrote is in the master or its sibling
        assert f"A learned thing {n}." in words and f"B learned thing {n}." in words
    status = b.okfgit("status", cwd=b.proj, expect=2).out
    assert f"  global:editor.md: {rounds} variants in editor.needs-merge.md; merge what matters into editor.md" \
        in status
    assert status.endswith("needs a person: 1 concept with needs-merge variants to merge\n")
    doctor = b.okfgit("doctor", "--scope", "global", cwd=b.proj, expect=2).out
    assert "\n1 error, " in doctor  # the one sibling (and past 4 KB, a warning)
    fsck(lambda *x, **k: b.git(*x), b.tier)  # type: ignore[arg-type]


def test_a_persons_verification_is_never_merged_onto_an_agents_words(a: Machine, b: Machine, bare: Path) -> None:
    """On A, alice verifies a concept; on B, before B fetched it, Claude rewrote the concept's
    memory file and B's capture took the edit. B's push meets A's verification: the merge keeps
    alice's version whole as the concept (her name stays on the words she read) and the
    agent's beside it, for a person; it does not put her verification on the agent's words."""
    two_machines(a, b, bare)
    b.okfgit("init", "--scope", "project", cwd=b.proj)
    b.okfgit("sync", cwd=b.proj)  # global:editor.md projected into B's Claude memory
    verified = "okf_source: authored\nverified:\n- by: human:alice@example.com\n  at: '2026-01-05T10:00:00Z'\n"
    a.edit("editor.md", "okf_source: authored\n", verified)
    a.okfgit("sync", "--fetch", cwd=a.proj)
    alices = a.git("show", "HEAD:editor.md").out
    [memory] = [p for p in b.memory.glob("*.md") if p.name != "MEMORY.md"]
    memory.write_text(memory.read_text().replace("a modal editor.", "a modal editor, vim."))

    result = b.okfgit("sync", cwd=b.proj)  # no fetch due: the capture lands first, the push meets A's commit

    assert "merged the global remote (1 need a merge)" in result.out, result
    assert ("editor.md: the concept changed both here and on the global remote; the remote's version is verified by "
            "human:alice@example.com, so it stays the concept; added this machine's to global:editor.needs-merge.md"
            in result.err)
    assert b.git("show", "HEAD:editor.md").out == alices
    sibling = b.git("show", "HEAD:editor.needs-merge.md").out
    assert "modal editor, vim." in sibling and "human:alice" not in sibling
    assert "global tier updated from its remote" in a.okfgit("sync", "--fetch", cwd=a.proj).out
    assert a.git("show", "HEAD:editor.md").out == alices
