#!/usr/bin/env python3
"""What near-duplicate detection costs, against the same work without it, in the same run.

A project of ``--size`` concepts (default 10,000, ``genkb.make_repo``) is synced once and its
caches warmed, then, each figure the median of ``--repeat`` runs after one warm-up, timed pair
by pair, each run from the same saved state:

* **capture** of ``--files`` native Claude memory files (default 1,000): new facts only (what
  detection adds to a capture that finds nothing: the aim), then with one in ten restating a
  concept of the KB (each becomes a proposal beside it, not a new concept: the outcome differs,
  so does the work);
* **review** of a one-line change (one concept's body edited on a branch);
* **doctor** with a cold cache (every blob read: the keys of each concept are made), and
  **doctor** after that one-line change (the pairs kept at the last tree, the changed concept
  paired again).

"Without" is the same command in the same interpreter with the detection replaced by nothing
(no keys made for a concept, no pair looked for, no lookup at capture), so the ratio is what
detection adds. Each run's figure is the CPU time (user + system) the command used, as the
kernel accounts it: on a machine others share, wall time measures them too. Aim: capture
within 1.5x.

    python bench/bench_similar.py [--size 10000] [--files 1000] [--repeat 5] [--keep]

``search --similar`` (which scores every concept from its text) is timed alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import baselines  # noqa: E402
import genkb  # noqa: E402
from bench_project import bench_env, paired, timed  # noqa: E402  (timed: wall, for set-up steps)
from bench_sync import memory_folder, settle  # noqa: E402

AIM_CAPTURE = 1.5
# okfgit's CLI, with near-duplicate detection switched off when the first argument is "off".
RUNNER = """
import sys
if sys.argv[1] == "off":
    from okfgit.flows import capture
    from okfgit.knowledge import checks, similar
    capture._Known.repeats = lambda self, parsed: None
    checks.Checker.near_duplicates = lambda self, near: None
    similar.keys_of = lambda path, meta, body: None
from okfgit.cli import main
main(sys.argv[2:])
"""


def cpu(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one command and its children (it must exit 0)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if status != 0:
        raise RuntimeError(f"{argv} exited {status}: {err}")
    return usage.ru_utime + usage.ru_stime


def okfgit(switch: str, *args: str) -> list[str]:
    return [sys.executable, "-c", RUNNER, switch, *args]


def native(n: int, restated: str | None) -> bytes:
    """One memory file as Claude Code 2.1 writes it; ``restated``: a concept's description it repeats."""
    claim = restated or f"Fact {n} the agent learned about the build"
    body = restated or f"The build needs step {n} before packaging."
    return (f"---\nname: learned-fact-{n:05d}\ndescription: {claim}\nmetadata:\n  type: project\n"
            f"  node_type: memory\n---\n{body}\n\n**Why:** it failed without it in run {n}.\n").encode()


def descriptions(repo: Path, count: int) -> list[str]:
    """The descriptions of ``count`` concepts of the KB, spread over it: what a memory restates."""
    paths = sorted((repo / ".okf").rglob("concept-*.md"))
    out = []
    for path in paths[:: max(1, len(paths) // max(1, count))][:count]:
        line = next(x for x in path.read_text().splitlines() if x.startswith("description: "))
        out.append(line[len("description: "):])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_similar.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder and print its path")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="okfgit-bench-similar-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        repo = genkb.make_repo(tmp / "repo", args.size)
        home = tmp / "home"
        (home / ".claude").mkdir(parents=True)  # Claude Code in use: okfgit projects into its memory folder
        env = bench_env(home, tmp / "pycache")
        settle(repo, env)
        timed(okfgit("on", "doctor", "--scope", "project"), repo, env)  # doctor's facts and pairs, warm
        similar = cpu(okfgit("on", "search", "--similar", "area-00/topic-00/concept-00000.md"), repo, env)
        base = tmp / "base"
        base.mkdir()
        shutil.copytree(repo / ".git" / "okf", base / "okf")
        folder = memory_folder(repo, env)
        shutil.copytree(folder, base / "memory")
        git = ["git", "-C", str(repo)]
        top = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        restated = descriptions(repo, args.files // 10)

        def store(cold: bool = False) -> None:  # each run from the saved store (the other's writes undone)
            shutil.rmtree(repo / ".git" / "okf")
            shutil.copytree(base / "okf", repo / ".git" / "okf")
            if cold:
                (repo / ".git" / "okf" / "state.db").unlink()

        def fresh(restating: bool) -> None:
            subprocess.run([*git, "reset", "-q", "--hard", top], check=True, env=genkb.git_env())
            store()
            shutil.rmtree(folder)
            shutil.copytree(base / "memory", folder)
            for n in range(args.files):
                text = restated[n // 10] if restating and n % 10 == 0 and n // 10 < len(restated) else None
                (folder / f"learned_{n:05d}.md").write_bytes(native(n, text))

        def pair(label: str, *argv: str, setup: Callable[[], None] = store) -> None:
            with_it, without = paired(lambda: cpu(okfgit("on", *argv), repo, env),
                                      lambda: cpu(okfgit("off", *argv), repo, env), args.repeat, setup, setup)
            rows.append((f"{args.size:>6} {label}", with_it, without))

        rows: list[tuple[str, float, float]] = []
        for restating, label in ((False, "new facts"), (True, "one in ten restating")):
            pair(f"capture of {args.files} memory files, {label}", "capture", setup=lambda r=restating: fresh(r))
        fresh(True)
        out = subprocess.run(okfgit("on", "capture", "--json"), cwd=repo, env=env, capture_output=True, text=True,
                             check=True).stdout
        proposals = out.count('"action": "duplicate"')
        fresh(False)
        pair("doctor, cold cache", "doctor", "--scope", "project", setup=lambda: store(cold=True))
        subprocess.run([*git, "checkout", "-q", "-b", "one-line"], check=True, env=genkb.git_env())
        edited = sorted((repo / ".okf").rglob("concept-*.md"))[123]
        edited.write_text(edited.read_text() + "One more line of evidence.\n")
        subprocess.run([*git, "commit", "-qam", "one line"], check=True, env=genkb.git_env())
        pair("review of a one-line change", "review", "main...one-line", "--format", "json")
        pair("doctor after the one-line change", "doctor", "--scope", "project")
        baselines.report(rows, baseline="without detection")  # CPU seconds
        print()
        print(f"{args.size:>6} search --similar (every concept scored): {similar:.2f} s CPU")
        print(f"{args.files} memory files, {len(restated)} restating a concept: {proposals} proposals")
        ratio = rows[0][1] / rows[0][2]
        verdict = "met" if ratio <= AIM_CAPTURE else "MISSED"
        print(f"capture: {ratio:.2f}x without detection (aim {AIM_CAPTURE}x): {verdict}")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
