#!/usr/bin/env python3
"""Benchmark the global remote's exchange: ``okfgit sync --fetch`` with nothing new.

Two sandbox homes, each with the same generated global tier (``genkb.make_repo`` with the
global layout, at ``$XDG_DATA_HOME/okf``) and a small project repository:

* **with a remote**: the global tier's ``origin`` is a bare repository on local disk, already
  in step (one exchange done before timing), so each ``sync --fetch`` fetches, finds nothing
  new, has nothing to push;
* **without a remote**: the same tier, no remote.

Both run ``okfgit sync --fetch`` in the project (``--fetch`` skips the no-op fast path in
both, so each run does the full capture + projection check; the difference is the exchange).
The remote is on local disk, so the figure is okfgit's (and git's) overhead, not the
network's. Reported: the medians of runs taken alternately, their ratio, and the difference
in milliseconds. Also ``python -c "import okfgit.cli"`` (process start) for scale.

    python bench/bench_remote.py [--sizes 100,1000] [--repeat 7] [--keep]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import genkb  # noqa: E402
from bench_project import bench_env, paired, timed  # noqa: E402

SYNC_FETCH = [sys.executable, "-m", "okfgit", "sync", "--fetch"]
START = [sys.executable, "-c", "import okfgit.cli"]


def machine(root: Path, name: str, n: int, pycache: Path) -> tuple[Path, dict[str, str]]:
    """A home with the generated global tier and a one-commit project; (project, env)."""
    home = root / name
    env = bench_env(home, pycache)
    genkb.make_repo(home / ".local" / "share" / "okf", n, layout="global")
    proj = home / "proj"
    proj.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=proj, env=env, check=True, capture_output=True)
    return proj, env


def git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def one_size(root: Path, n: int, repeat: int) -> dict[str, float]:
    pycache = root / "pycache"
    with_proj, with_env = machine(root / f"n{n}", "with", n, pycache)
    without_proj, without_env = machine(root / f"n{n}", "without", n, pycache)
    tier = Path(with_env["XDG_DATA_HOME"]) / "okf"
    bare = root / f"n{n}" / "remote.git"
    git(root, with_env, "clone", "-q", "--bare", str(tier), str(bare))
    git(tier, with_env, "remote", "add", "origin", str(bare))
    git(tier, with_env, "config", "branch.main.remote", "origin")
    git(tier, with_env, "config", "branch.main.merge", "refs/heads/main")
    for proj, env in ((with_proj, with_env), (without_proj, without_env)):
        timed(SYNC_FETCH, proj, env)  # the first projection and exchange, untimed
    remote_s, local_s = paired(lambda: timed(SYNC_FETCH, with_proj, with_env),
                               lambda: timed(SYNC_FETCH, without_proj, without_env), repeat)
    start_s, _ = paired(lambda: timed(START, None, without_env), lambda: 0.0, repeat)
    return {"remote": remote_s, "local": local_s, "start": start_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="okfbench-remote-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        print(f"{'concepts':>8}  {'sync --fetch, remote':>20}  {'same, no remote':>15}  {'ratio':>6}  "
              f"{'overhead':>9}  {'process start':>13}")
        for n in (int(x) for x in args.sizes.split(",")):
            r = one_size(root, n, args.repeat)
            print(f"{n:>8}  {r['remote'] * 1000:>17.0f} ms  {r['local'] * 1000:>12.0f} ms  "
                  f"{r['remote'] / r['local']:>5.2f}x  {(r['remote'] - r['local']) * 1000:>6.0f} ms  "
                  f"{r['start'] * 1000:>10.0f} ms")
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
