#!/usr/bin/env python3
"""Benchmark ``okfgit project`` at 100, 1,000 and 10,000 concepts.

For each size, on a project repository made by ``genkb.make_repo`` (the KB in ``.okf/``), with
HOME, XDG_*, CLAUDE_CONFIG_DIR and CODEX_HOME in a temp folder:

* first projection: empty memory folder, no state, no catalog (each run starts from that);
* no-op re-run: nothing changed since the last run (the fast path);
* one change: a commit that changes one concept's body, then ``okfgit project``;

each printed next to the baselines measured in the same run: ``python -c "import okfgit.cli"``
(process start) and ``git archive HEAD:.okf | tar -x`` (materialising the same tree in C).
Aims (issue 3): no-op within 1.5x process start at every size; one change within 2x no-op
at 10,000; first projection within 3x archive. Every figure is a median after one warm-up;
each okfgit figure is measured alternately with the baseline it is compared to, so that load
from other processes on the machine hits both alike.

Python runs with its bytecode cache on (``PYTHONPYCACHEPREFIX`` in the temp folder, even when
``PYTHONDONTWRITEBYTECODE`` is set outside), as an installed okfgit does: without it every
process compiles okfgit's source again and every figure measures the compiler.

With ``--agents`` the home is one where every agent okfgit projects into is used: a global
tier of 1,000 concepts (its facts go into every home-level block), Gemini CLI registered for
the repository (its memory folder gets the index block), and the folders of Copilot CLI,
opencode and Amp: what every target costs, against the same aims.

    python bench/bench_project.py [--sizes 100,1000,10000] [--repeat 5] [--agents] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import baselines  # noqa: E402
import genkb  # noqa: E402

AIMS = {"no-op": 1.5, "one change": 2.0, "first": 3.0}


def bench_env(home: Path, pycache: Path) -> dict[str, str]:
    """The checkout on PYTHONPATH, every home in ``home``, no user or system git config."""
    env = {k: v for k, v in baselines.okfgit_env().items()
           if not k.startswith(("GIT_", "OKF", "CLAUDE", "CODEX", "XDG_", "PYTHONDONTWRITEBYTECODE"))}
    env.update(
        HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"), XDG_CONFIG_HOME=str(home / ".config"),
        CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex"), PYTHONPYCACHEPREFIX=str(pycache),
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, **genkb.GIT_IDENTITY,
    )
    return env


def timed(argv: list[str], cwd: Path | None, env: dict[str, str] | None) -> float:
    """Wall seconds of one command (it must exit 0)."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")
    return elapsed


def paired(a: Callable[[], float], b: Callable[[], float], repeat: int,
           setup_a: Callable[[], None] = lambda: None, setup_b: Callable[[], None] = lambda: None,
           ) -> tuple[float, float]:
    """Medians of ``a`` and ``b`` run alternately (after one warm-up each); setups untimed."""
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(repeat + 1):
        setup_a()
        ta = a()
        setup_b()
        tb = b()
        if i:
            times[0].append(ta)
            times[1].append(tb)
    return statistics.median(times[0]), statistics.median(times[1])


def archive_once(repo: Path) -> float:
    out = tempfile.mkdtemp(prefix="okfbench-archive-")
    try:
        return timed(["sh", "-c", 'git archive "$1" | tar -x -C "$2"', "sh", "HEAD:.okf", out], repo, None)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def every_agent(home: Path, repo: Path) -> None:
    """A home where each agent okfgit projects into is used, with a 1,000-concept global tier."""
    genkb.make_repo(home / ".local" / "share" / "okf", 1000, layout="global", seed=1)
    gemini = home / ".gemini"
    (gemini / "tmp" / "repo" / "memory").mkdir(parents=True)
    (gemini / "projects.json").write_text(f'{{"projects": {{"{repo}": "repo"}}}}')
    (gemini / "tmp" / "repo" / ".project_root").write_text(str(repo))
    for folder in (".copilot", ".config/opencode", ".config/amp"):
        (home / folder).mkdir(parents=True)


def one_size(root: Path, n: int, repeat: int, agents: bool = False) -> dict[str, float]:
    repo = genkb.make_repo(root / f"repo-{n}", n)
    home = root / f"home-{n}"
    home.mkdir()
    if agents:
        every_agent(home, repo)
    env = bench_env(home, root / "pycache")
    project = [sys.executable, "-m", "okfgit", "project"]
    start = [sys.executable, "-c", "import okfgit.cli"]

    def fresh() -> None:
        shutil.rmtree(home / ".claude", ignore_errors=True)
        shutil.rmtree(repo / ".git" / "okf", ignore_errors=True)
        (repo / "AGENTS.md").unlink(missing_ok=True)
        for made in (".gemini/tmp/repo/memory/MEMORY.md", ".gemini/GEMINI.md", ".copilot/copilot-instructions.md",
                     ".config/opencode/AGENTS.md", ".config/amp/AGENTS.md", ".codex/AGENTS.md"):
            (home / made).unlink(missing_ok=True)

    first, archive = paired(lambda: timed(project, repo, env), lambda: archive_once(repo), repeat, setup_a=fresh)
    timed(project, repo, env)
    noop, process_start = paired(lambda: timed(project, repo, env), lambda: timed(start, None, env), repeat)
    concept = repo / ".okf" / genkb.plan(n)[n // 2].path
    counter = iter(range(10**6))

    def change() -> None:
        with open(concept, "a", encoding="utf-8") as fh:
            fh.write(f"Benchmark edit {next(counter)}.\n")
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "--no-verify", "-am", "edit one concept"],
                       env=genkb.git_env(), check=True)

    changed, noop_again = paired(lambda: timed(project, repo, env), lambda: timed(project, repo, env), repeat,
                                 setup_a=change)
    return {"first": first, "archive": archive, "no-op": statistics.median([noop, noop_again]),
            "start": process_start, "one change": changed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_project.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder and print where it is")
    parser.add_argument("--agents", action="store_true", help="a home where every agent okfgit projects into is used")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="okfbench-project-"))
    try:
        rows: list[tuple[str, float, float]] = []
        verdicts: list[str] = []
        for n in sizes:
            r = one_size(tmp, n, args.repeat, args.agents)
            rows += [
                (f"{n:>6} python -c 'import okfgit.cli'", r["start"], r["start"]),
                (f"{n:>6} git archive | tar -x", r["archive"], r["start"]),
                (f"{n:>6} first projection", r["first"], r["start"]),
                (f"{n:>6} no-op re-run", r["no-op"], r["start"]),
                (f"{n:>6} one concept changed", r["one change"], r["start"]),
            ]
            checks = [("no-op", r["no-op"] / r["start"], "process start", True),
                      ("one change", r["one change"] / r["no-op"], "no-op", n >= 10_000),
                      ("first", r["first"] / r["archive"], "archive", True)]
            for name, ratio, versus, applies in checks:
                ok = "met" if ratio <= AIMS[name] else "MISSED"
                aim = f"(aim {AIMS[name]}x{'' if applies else ', at 10,000 only'})"
                verdicts.append(f"{n:>6} {name:<10} {ratio:5.2f}x {versus:<13} {aim}: {ok if applies else '-'}")
        baselines.report(rows, baseline="process start")
        print()
        print("\n".join(verdicts))
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
