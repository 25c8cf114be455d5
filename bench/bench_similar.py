#!/usr/bin/env python3
"""What near-duplicate detection costs, against the same work without it, in the same run.

A project of ``--size`` concepts (default 10,000, ``genkb.make_repo``) is synced once and its
caches warmed (cards, signatures, doctor's facts), then, each figure the median of
``--repeat`` runs after one warm-up, timed pair by pair:

* **capture** of ``--files`` native Claude memory files (default 1,000), each run from the same
  synced state: new facts only (what detection adds to a capture that finds nothing: the aim),
  then with one in ten restating a concept of the KB (each becomes a proposal beside it, not a
  new concept: the outcome differs, so does the work);
* **review** of a one-line change (one concept's body edited on a branch);
* **doctor** of the project tier.

"Without" is the same command in the same interpreter with the detection replaced by one that
finds nothing (capture's lookup of the concept a memory repeats; doctor's and review's
near-duplicate check), so the ratio is what the detection adds. Each run's figure is the CPU
time (user + system) the command used, as the kernel accounts it: on a machine others share,
wall time measures them too. Aim: capture within 1.5x.

    python bench/bench_similar.py [--size 10000] [--files 1000] [--repeat 5] [--keep]

The signatures of the KB (cold, once per clone and then per changed blob) are timed alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
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
    from okfgit.knowledge import checks
    capture._Known.repeats = lambda self, parsed: None
    checks.Checker.near_duplicates = lambda self: None
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
        home.mkdir()
        env = bench_env(home, tmp / "pycache")
        settle(repo, env)
        cold = cpu(okfgit("on", "search", "--similar", "area-00/topic-00/concept-00000.md"), repo, env)
        timed(okfgit("on", "doctor", "--scope", "project"), repo, env)  # doctor's own cache, warm
        base = tmp / "base"
        base.mkdir()
        shutil.copytree(repo / ".git" / "okf", base / "okf")
        folder = memory_folder(repo, env)
        shutil.copytree(folder, base / "memory")
        top = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        restated = descriptions(repo, args.files // 10)

        def fresh(restating: bool) -> None:
            subprocess.run(["git", "-C", str(repo), "reset", "-q", "--hard", top], check=True, env=genkb.git_env())
            shutil.rmtree(repo / ".git" / "okf")
            shutil.copytree(base / "okf", repo / ".git" / "okf")
            shutil.rmtree(folder)
            shutil.copytree(base / "memory", folder)
            for n in range(args.files):
                text = restated[n // 10] if restating and n % 10 == 0 and n // 10 < len(restated) else None
                (folder / f"learned_{n:05d}.md").write_bytes(native(n, text))

        rows: list[tuple[str, float, float]] = []
        for restating, label in ((False, "new facts"), (True, "one in ten restating")):
            with_it, without = paired(lambda: cpu(okfgit("on", "capture"), repo, env),
                                      lambda: cpu(okfgit("off", "capture"), repo, env), args.repeat,
                                      lambda: fresh(restating), lambda: fresh(restating))
            rows.append((f"{args.size:>6} capture of {args.files} memory files, {label}", with_it, without))
        fresh(True)
        out = subprocess.run(okfgit("on", "capture", "--json"), cwd=repo, env=env, capture_output=True, text=True,
                             check=True).stdout
        proposals = out.count('"action": "duplicate"')

        fresh(False)
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "one-line"], check=True, env=genkb.git_env())
        edited = sorted((repo / ".okf").rglob("concept-*.md"))[123]
        edited.write_text(edited.read_text() + "One more line of evidence.\n")
        subprocess.run(["git", "-C", str(repo), "commit", "-qam", "one line"], check=True, env=genkb.git_env())
        review = ["review", "main...one-line", "--format", "json"]
        with_it, without = paired(lambda: cpu(okfgit("on", *review), repo, env),
                                  lambda: cpu(okfgit("off", *review), repo, env), args.repeat)
        rows.append((f"{args.size:>6} review of a one-line change", with_it, without))
        with_it, without = paired(lambda: cpu(okfgit("on", "doctor", "--scope", "project"), repo, env),
                                  lambda: cpu(okfgit("off", "doctor", "--scope", "project"), repo, env),
                                  args.repeat)
        rows.append((f"{args.size:>6} doctor", with_it, without))
        baselines.report(rows, baseline="without detection")  # CPU seconds
        print()
        print(f"{args.size:>6} signatures of every concept, cold (one search --similar): {cold:.2f} s CPU")
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
