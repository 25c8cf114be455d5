#!/usr/bin/env python3
"""Time ``okfgit doctor`` and ``okfgit index --check`` on synthetic KBs, next to a baseline.

For each size (default 100, 1,000 and 10,000 concepts) a project repository is
generated with ``genkb.make_repo`` (nested folders, links, an index per folder, one
commit), and in the same run we time:

* the baseline: ``git ls-tree -r HEAD .okf | git cat-file --batch`` (reading every blob
  of the KB once, in C: the floor for any check that must look at every file);
* ``okfgit doctor --scope project`` (must exit 0: the generated KB is clean);
* ``okfgit index --check --scope project`` (must exit 0: its indexes are up to date).

Each figure is the median of ``--repeat`` runs after one warm-up; the ratio column is
the command's time over the baseline's. ``make_repo`` leaves every object loose (one
file each), which makes reading slow for git and okfgit alike; real repositories are
mostly packed, so each size is measured again after ``git gc`` (``--loose-only`` skips
that round). The design's aim: doctor within 10x of the
baseline at 10,000 concepts. HOME and XDG_DATA_HOME point into the temp folder, so no
global tier of the machine is read.

    python bench/bench_doctor.py [--sizes 100,1000,10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import baselines  # noqa: E402
import genkb  # noqa: E402


def measure(root: Path, n: int, repeat: int, packed: bool) -> list[tuple[str, float, float]]:
    """Rows ``(label, seconds, baseline seconds)`` for one KB size, loose objects (as
    ``make_repo`` leaves them) and, with ``packed``, again after ``git gc``."""
    repo = genkb.make_repo(root / f"kb-{n}", n, layout="project")
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = baselines.okfgit_env()
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"), GIT_CONFIG_NOSYSTEM="1")
    for key in ("OKF_RUN", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(key, None)
    okfgit = [sys.executable, "-m", "okfgit"]
    rows = []
    for storage in ("loose", "packed") if packed else ("loose",):
        if storage == "packed":
            subprocess.run(["git", "gc", "--quiet"], cwd=repo, env=genkb.git_env(), check=True)
        base = baselines.baseline_cat_file(repo, ".okf", repeat=repeat)
        doctor = baselines.timeit([*okfgit, "doctor", "--scope", "project"], repeat=repeat, cwd=repo, env=env)
        check = baselines.timeit([*okfgit, "index", "--check", "--scope", "project"], repeat=repeat, cwd=repo,
                                 env=env)
        where = f"{n:>6} concepts, {storage}"
        rows += [
            (f"ls-tree | cat-file --batch  {where}", base, base),
            (f"okfgit doctor               {where}", doctor, base),
            (f"okfgit index --check        {where}", check, base),
        ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_doctor.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated concept counts")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure (median)")
    parser.add_argument("--loose-only", action="store_true", help="skip the second round after `git gc`")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="okfbench-doctor-") as tmp:
        start = baselines.baseline_process_start(repeat=args.repeat)
        for n in sizes:
            rows.extend(measure(Path(tmp), n, args.repeat, packed=not args.loose_only))
    print(f"python -c 'import okfgit.cli' (process start): {start:.4f}s")
    baselines.report(rows, baseline="cat-file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
