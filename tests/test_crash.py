"""kill -9 at random points of sync, new, promote and adopt (spec/okf-writes.md).

A seeded loop: each round starts one verb as its own process and SIGKILLs it after a
random delay within its measured run time, then checks what a user would: the index and
working tree agree with HEAD for okfgit's paths (or the ref did not move, or the journal
holds the commit to finish); after the next okfgit command they agree in every case; no
fact is lost; ``git fsck`` is clean; the command after that changes nothing; no
duplicate ``needs-merge`` or ``-2`` sibling; no temp file left behind. Slow: CI runs it
(``pytest -m slow``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from okfgit.fsutil import is_temp_name
from okfgit.targets.claude_home import memory_dir
from tests.conftest import Runner

KILLS = int(os.environ.get("OKFGIT_CRASH_KILLS", "100"))
SEED = int(os.environ.get("OKFGIT_CRASH_SEED", "20261201"))
VERBS = ("sync", "new", "promote", "adopt")


@dataclass
class Tally:
    kills: int = 0
    ref_moved: int = 0
    half_written: int = 0
    lost: int = 0
    index_behind: int = 0
    duplicates: int = 0
    temp_files: int = 0
    fsck_errors: int = 0
    not_converged: int = 0
    by_verb: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"kill -9 x{self.kills} at random points: {self.half_written} half-written, {self.lost} lost, "
                f"{self.index_behind} index behind HEAD, {self.duplicates} duplicate siblings, "
                f"{self.temp_files} temp files after the next run")


def agrees(git: Runner, repo: Path, prefix: str) -> bool:
    staged = git("diff-index", "--cached", "--name-only", "HEAD", "--", prefix, cwd=repo).out
    files = git("diff-files", "--name-only", "--", prefix, cwd=repo).out
    return staged == "" and files == ""


def head(git: Runner, repo: Path) -> str:
    return git("rev-parse", "HEAD", cwd=repo).out.strip()


def tree(git: Runner, repo: Path, prefix: str = ".") -> list[str]:
    return git("ls-tree", "-r", "--name-only", "HEAD", "--", prefix, cwd=repo).out.split("\n")


def recoverable(repo: Path) -> bool:
    """A journal record whose commit is HEAD: the next okfgit command finishes it."""
    folder = repo / ".git" / "okf" / "journal"
    for file in folder.glob("*.json") if folder.is_dir() else []:
        try:
            intent = json.loads(file.read_text()).get("intent")
        except (OSError, ValueError):
            continue
        if intent:
            return True
    return False


def leftovers(*roots: Path) -> list[Path]:
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in files:
                if is_temp_name(name) or name.startswith("tmp_object_git2_") or name.startswith("okf-index.okftmp") \
                        or name == "index.lock":
                    found.append(Path(folder) / name)
    return found


def native_memory(n: int) -> bytes:
    return (f"---\nname: fact-{n}\ndescription: Fact number {n} from an agent.\nmetadata:\n  type: project\n---\n\n"
            f"The agent learned fact {n}.\n").encode()


@pytest.mark.slow
def test_kill_9_at_random_points(project: Path, okfgit_proc: Runner, git: Runner, env: dict[str, str],
                                 home: Path, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    mem = memory_dir(project.resolve(), env, home).path
    mem.mkdir(parents=True, exist_ok=True)
    okfgit_proc("run", "start", "r1", cwd=project)
    git("config", "--unset", "okf.run", cwd=project)  # captures go to the project tier
    job = project / "runstate" / "r1" / "okf"
    okfgit_proc("sync", cwd=project)
    expected: dict[str, tuple[str, int]] = {}  # what must exist after convergence
    t = Tally()
    durations: dict[str, float] = {}

    def command(verb: str, n: int) -> list[str]:
        if verb == "sync":
            (mem / f"fact_{n}.md").write_bytes(native_memory(n))
            return ["sync"]
        if verb == "new":
            return ["new", f"n-{n}", "--description", f"Concept {n}."]
        if verb == "adopt":
            src = tmp_path / "src" / str(n)
            src.mkdir(parents=True)
            (src / f"a-{n}.md").write_text(f"---\ntype: Note\ndescription: Adopted {n}.\n---\n\n# A {n}\n")
            (src / f"b-{n}.md").write_text(f"---\ntype: Note\ndescription: Adopted too {n}.\n---\n\n# B {n}\n")
            return ["adopt", str(src), "--scope", "project", "--dir", f"adopted/{n}"]
        okfgit_proc("note", f"Note {n}", "--type", "Discovery", "--run", "r1", cwd=project)
        return ["promote", f"notes/note-{n}.md", "--run", "r1"]

    def present(verb: str, n: int) -> bool:
        paths = tree(git, project, ".okf")
        if verb == "sync":
            hits = git("grep", "-l", f"okf_origin: fact_{n}.md", "HEAD", "--", ".okf", cwd=project, expect=None)
            return hits.out.strip() != "" and (mem / f"fact_{n}.md").is_file()
        if verb == "new":
            return f".okf/n-{n}.md" in paths
        if verb == "adopt":
            return f".okf/adopted/{n}/a-{n}.md" in paths and f".okf/adopted/{n}/b-{n}.md" in paths
        return f".okf/notes/note-{n}.md" in paths or f"notes/note-{n}.md" in tree(git, job)

    for n in range(KILLS + len(VERBS)):
        verb = VERBS[n % len(VERBS)] if n < len(VERBS) else rng.choice(VERBS)
        args = command(verb, n)
        before = head(git, project), head(git, job)
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "okfgit", *args], cwd=project, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if verb not in durations:  # the first round of each verb measures it, unkilled
            proc.wait(timeout=120)
            durations[verb] = time.monotonic() - started
        else:
            time.sleep(rng.uniform(0.4, 1.05) * durations[verb])  # startup is most of a run: aim at the writes
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=120)
            t.kills += 1
            t.by_verb[verb] = t.by_verb.get(verb, 0) + 1
        expected[f"{verb}-{n}"] = (verb, n)
        moved = (head(git, project), head(git, job)) != before
        t.ref_moved += moved
        for repo, prefix in ((project, ".okf"), (job, ".")):
            if not agrees(git, repo, prefix) and not recoverable(repo):
                t.half_written += 1
                t.problems.append(f"round {n} {verb}: {repo} index/worktree differ from HEAD, nothing to recover")
        # the next command finishes whatever was interrupted
        okfgit_proc("sync", cwd=project, expect=None)
        okfgit_proc("ls", "--run", "r1", cwd=project, expect=None)  # a command that opens the job tier
        for repo, prefix in ((project, ".okf"), (job, ".")):
            if not agrees(git, repo, prefix):
                t.index_behind += 1
                t.problems.append(f"round {n} {verb}: {repo} index behind HEAD after the next command")
        if not present(verb, n):  # converge: a killed write is simply run again
            okfgit_proc(*args, cwd=project, expect=None)
        # sync∘sync: the command after that changes nothing
        okfgit_proc("sync", cwd=project, expect=None)
        top = head(git, project), head(git, job)
        okfgit_proc("sync", cwd=project, expect=None)
        if (head(git, project), head(git, job)) != top or git("status", "--porcelain", "--", ".okf",
                                                              cwd=project).out:
            t.not_converged += 1
            t.problems.append(f"round {n} {verb}: did not converge")
        stray = leftovers(project, mem, home / ".claude", home / ".codex")
        if stray:
            t.temp_files += len(stray)
            t.problems.append(f"round {n} {verb}: left {stray}")
            for path in stray:
                path.unlink()
    for name, (verb, n) in expected.items():
        if not present(verb, n):
            t.lost += 1
            t.problems.append(f"{name}: lost")
    paths = tree(git, project, ".okf")
    dupes = [p for p in paths if "needs-merge" in p or (p.startswith(".okf/memory/") and p.rsplit("-", 1)[-1][:-3].isdigit()
                                                         and p.count("-") > 1)]
    t.duplicates = len(dupes)
    if dupes:
        t.problems.append(f"duplicates: {dupes}")
    for repo in (project, job):
        result = git("fsck", "--strict", "--no-progress", cwd=repo, expect=None)
        if result.code != 0 or "error" in result.err.lower():
            t.fsck_errors += 1
            t.problems.append(f"fsck {repo}: {result.err}")
    print(f"\n{t.line()}; {t.ref_moved} kills after a ref moved; by verb {t.by_verb}; "
          f"{t.fsck_errors} fsck errors; {t.not_converged} not converged")
    assert t.problems == []
    assert t.kills == KILLS
