#!/usr/bin/env python3
"""Benchmark okfgit's merge driver: what git pays to merge a team's knowledge branches.

* **the driver on one index**: ``okfgit merge-driver %O %A %B %L %P`` as git runs it, a
  whole process, on an ``index.md`` of 1,000 (and 10,000) entries where both sides added one
  entry next to the other's (the case git's text merge turns into a conflict). Printed next
  to ``python -c "import okfgit.cli"`` (the process start every okfgit command pays) and to
  ``git merge-file`` on the same three files (git's own text merge, the work the driver
  replaces), each measured alternately with the driver. The merge itself, in process, is
  shown too. Aim (issue 26): well under a second at 1,000 entries, start included.
* **a git merge of two knowledge branches**: a KB of 1,000 concepts (``genkb.make_repo``,
  ``.okf/.gitattributes`` committed as ``okfgit init`` does), branch ``c`` and branch ``e``
  each adding 500 concepts to one folder in one commit (files, then ``okfgit index``), their
  names alternating so every new entry sits next to one of the other branch's.
  ``git merge c`` on ``e`` with the driver configured (``merge.okfgit.driver``, as ``okfgit
  hooks install`` writes it) against the same merge with the driver off (git's text merge,
  which stops with a conflict). Each run starts from ``e`` reset (untimed).

Every figure is a median after one warm-up, in pairs run alternately.

    python bench/bench_merge.py [--entries 1000,10000] [--concepts 500] [--repeat 7] [--keep]
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

import genkb  # noqa: E402
from bench_cost import timed as run  # noqa: E402
from bench_project import bench_env, paired  # noqa: E402

AIM_S = 1.0
OKFGIT = [sys.executable, "-m", "okfgit"]
START = [sys.executable, "-c", "import okfgit.cli"]
# The merge alone, without the process around it: the median of ``repeat`` runs (ours on stdin).
IN_PROCESS = """import statistics, sys, time
from okfgit.format import merge
base, theirs, ours = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.stdin.buffer.read()
times = []
for _ in range(int(sys.argv[3]) + 1):
    t0 = time.perf_counter()
    merge.index_page(base, ours, theirs, "items/index.md")
    times.append(time.perf_counter() - t0)
print(statistics.median(times[1:]))
"""


def index_text(names: list[str]) -> bytes:
    entries = "".join(f"- [{n.replace('-', ' ').title()}]({n}.md) \u2014 What {n} says.\n" for n in sorted(names, key=lambda n: f"{n}.md"))
    return f"# Items\n\nEverything about the items.\n\n{entries}".encode()


def bench_driver(root: Path, entries: int, repeat: int, env: dict[str, str]) -> None:
    folder = root / f"driver-{entries}"
    folder.mkdir()
    names = [f"item-{i:05d}" for i in range(0, 2 * entries, 2)]
    middle = names[len(names) // 2]
    base, ours, theirs = folder / "base", folder / "ours", folder / "theirs"
    base.write_bytes(index_text(names))
    theirs.write_bytes(index_text(names + [middle + "-theirs"]))
    mine = index_text(names + [middle + "-ours"])

    def reset() -> None:
        ours.write_bytes(mine)

    driver = [*OKFGIT, "merge-driver", str(base), str(ours), str(theirs), "7", ".okf/items/index.md"]
    merge_file = ["git", "merge-file", "-p", str(ours), str(base), str(theirs)]
    d, s = paired(lambda: run(driver, folder, env), lambda: run(START, folder, env), repeat, setup_a=reset)
    d2, g = paired(lambda: run(driver, folder, env), lambda: run(merge_file, folder, env, ok=(0, 1)), repeat,
                   setup_a=reset, setup_b=reset)
    reset()
    run(driver, folder, env)
    assert b"<<<<<<<" not in ours.read_bytes() and len(ours.read_bytes().splitlines()) == entries + 6
    in_process = float(subprocess.run([sys.executable, "-c", IN_PROCESS, str(base), str(theirs), str(repeat)],
                                      input=mine, env=env, capture_output=True, check=True).stdout)
    print(f"driver, {entries:>6} entries: {d * 1000:7.1f} ms  | process start {s * 1000:6.1f} ms "
          f"(x{d / s:4.2f})  | git merge-file {g * 1000:5.1f} ms  | the merge in process {in_process * 1000:6.1f} ms"
          f"  | aim < {AIM_S * 1000:.0f} ms: {'ok' if max(d, d2) < AIM_S else 'MISSED'}")


def concept(name: str) -> str:
    return (f"---\ntype: Note\ntitle: {name.replace('-', ' ').title()}\ndescription: What {name} says.\n"
            f"scope: project\nokf_id: {genkb._okf_id(7, abs(hash(name)) % 10**9)}\nokf_source: authored\n---\n\n"
            f"# {name}\n")


def git(repo: Path, env: dict[str, str], *args: str, ok: tuple[int, ...] = (0,)) -> None:
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True)
    if proc.returncode not in ok:
        raise RuntimeError(f"git {args} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")


def bench_git_merge(root: Path, concepts: int, repeat: int, env: dict[str, str]) -> None:
    repo = genkb.make_repo(root / "team", 1000, layout="project")
    (repo / ".okf" / ".gitattributes").write_text("*.md merge=okfgit\n")
    git(repo, env, "add", ".okf")
    git(repo, env, "commit", "-q", "-m", "the merge attribute")
    folder = repo / ".okf" / "area-00" / "topic-00"
    for branch in ("c", "e"):
        git(repo, env, "checkout", "-q", "-b", branch, "main")
        for i in range(concepts):
            name = f"added-{i:04d}-{branch}"
            (folder / f"{name}.md").write_text(concept(name))
        git(repo, env, "add", ".okf")
        git(repo, env, "commit", "-q", "-m", f"{branch}: {concepts} concepts")
        run([*OKFGIT, "index"], repo, env)
    git(repo, env, "checkout", "-q", "e")
    tip = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    driver = subprocess.run([sys.executable, "-c", "from okfgit.flows.hooks import DRIVER_COMMAND as d; print(d)"],
                            env=env, capture_output=True, text=True, check=True).stdout.strip()
    merge = ["git", "merge", "-q", "--no-edit", "c"]

    def driver_on() -> None:
        git(repo, env, "merge", "--abort", ok=(0, 128))
        git(repo, env, "reset", "-q", "--hard", tip)
        git(repo, env, "config", "merge.okfgit.driver", driver)

    def driver_off() -> None:
        git(repo, env, "merge", "--abort", ok=(0, 128))
        git(repo, env, "reset", "-q", "--hard", tip)
        git(repo, env, "config", "--unset-all", "merge.okfgit.driver", ok=(0, 5))

    on, off = paired(lambda: run(merge, repo, env), lambda: run(merge, repo, env, ok=(1,)), repeat,
                     setup_a=driver_on, setup_b=driver_off)
    driver_on()
    run(merge, repo, env)
    check = subprocess.run([*OKFGIT, "index", "--check"], cwd=repo, env=env, capture_output=True, text=True)
    print(f"git merge of two {concepts}-concept branches: driver on {on * 1000:7.1f} ms (clean, index "
          f"{'current' if check.returncode == 0 else 'STALE'})  | driver off {off * 1000:7.1f} ms (a conflict) "
          f"| x{on / off:4.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", default="1000,10000", help="index sizes for the driver alone")
    parser.add_argument("--concepts", type=int, default=500, help="concepts each branch adds")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder and print it")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="okfgit-bench-merge-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        env = bench_env(root / "home", root / "pycache")
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", os.defpath)  # git finds okfgit
        env["OKFGIT_SKIP"] = "1"
        for entries in (int(n) for n in args.entries.split(",")):
            bench_driver(root, entries, args.repeat, env)
        bench_git_merge(root, args.concepts, args.repeat, env)
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
