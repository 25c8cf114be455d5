"""What each command costs at 1,000, 10,000 and 100,000 concepts (issue 29), each aim a ratio in one run.

On project repositories made by ``genkb.make_repo``, after a first projection and a sync,
each workload is timed in pairs against its floor (``bench_cost.ratio``: the workload and
the floor alternate after a warm-up; the median of the pairs' ratios), and its peak memory
is the resident high-water mark of one more run (``/usr/bin/time``). Workloads and aims:

| workload | floor | aim at 100,000 |
|---|---|---|
| ``cat`` of one concept, ``ls`` of one folder, ``links``, ``search cache stale`` (selective), ``search cache`` | ``python -c "import pygit2"``; and the same command at 1,000 concepts | cat and ls within 1.5x their 1,000-concept time, a selective search within 2x |
| ``status``, plain ``sync``, the git hook's ``sync``, nothing to do | ``import pygit2``; and at 10,000 | cost what the projected set costs (the memory folder's budget) |
| first projection | ``git archive HEAD:.okf \\| tar -x`` into the same file system | within 3x, peak under 150 MiB |
| ``doctor``, cold store | (seconds, peak) | |
| an MCP ``search`` call, warm (needs ``okfgit[mcp]``) | (milliseconds) | within 10 ms |

    python bench/bench_scale.py [--repeat 5] [--checkout DIR]       # 1,000 and 10,000
    python bench/bench_scale.py --n 100000 --keep DIR              # and 100,000

Generating 100,000 concepts takes minutes: ``--keep DIR`` keeps each generated repository in
DIR (``kb-<n>``) and reuses it on the next run (reset to its first commit, its okfgit state
and homes made anew). ``--checkout DIR`` times another checkout of okfgit (before/after).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import genkb  # noqa: E402
from bench_cost import OKFGIT, PYGIT2, git, ratio, timed  # noqa: E402
from bench_project import bench_env  # noqa: E402

SELECTIVE = ["cache", "stale"]
BROAD = ["cache"]
TIME = "/usr/bin/time"  # GNU time: %M is the peak resident set in KiB


def peak(argv: list[str], cwd: Path, env: dict[str, str]) -> float | None:
    """The resident high-water mark of one run of ``argv`` (MiB), as ``/usr/bin/time`` reports it
    (None without it). Not ``os.wait4``: a child forked from this process starts with its pages."""
    if not os.path.exists(TIME):
        return None
    done = subprocess.run([TIME, "-f", "%M", *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(done.stderr.strip().splitlines()[-1]) / 1024


class Size:
    """One knowledge base of ``n`` concepts with its home, projected and synced."""

    def __init__(self, root: Path, n: int, keep: Path | None, checkout: Path | None) -> None:
        self.n = n
        where = (keep if keep is not None else root) / f"kb-{n}"
        if (where / ".git").is_dir():
            first = git(where, "rev-list", "--max-parents=0", "HEAD").split()[0]
            git(where, "reset", "-q", "--hard", first)
            shutil.rmtree(where / ".git" / "okf", ignore_errors=True)
            (where / "AGENTS.md").unlink(missing_ok=True)
        else:
            genkb.make_repo(where, n)
            while (where / ".git" / "gc.pid").exists():  # a commit this size may start an auto gc
                time.sleep(0.5)
        self.repo = where
        self.home = root / f"home-{n}"
        shutil.rmtree(self.home, ignore_errors=True)
        (self.home / ".claude").mkdir(parents=True)  # a machine where Claude Code is used: its folder is there
        self.env = bench_env(self.home, root / "pycache")
        if checkout is not None:
            self.env["PYTHONPATH"] = str(checkout)
        middle = genkb.plan(n)[n // 2]
        self.slug = middle.path.rsplit("/", 1)[-1][:-3]
        self.folder = middle.path.rsplit("/", 1)[0]
        self.top = git(where, "rev-parse", "HEAD").strip()

    def okf(self, *args: str) -> list[str]:
        return [*OKFGIT, *args]

    def run(self, argv: list[str]) -> float:
        return timed(argv, self.repo, self.env, ok=(0, 2))

    def reads(self) -> dict[str, list[str]]:
        """The read workloads, each the argv it runs."""
        return {"cat": self.okf("cat", self.slug), "ls of one folder": self.okf("ls", self.folder),
                "links": self.okf("links", self.slug), "search, selective": self.okf("search", *SELECTIVE),
                "search cache": self.okf("search", *BROAD), "status": self.okf("status"),
                "sync, nothing to do": self.okf("sync"),
                "git hook, nothing to do": self.okf("sync", "--hook", "post-checkout", "--", self.top, self.top, "1")}

    def fresh_projection(self) -> None:
        shutil.rmtree(self.home / ".claude" / "projects", ignore_errors=True)
        shutil.rmtree(self.repo / ".git" / "okf", ignore_errors=True)
        (self.repo / "AGENTS.md").unlink(missing_ok=True)

    def archive(self) -> float:
        """``git archive | tar -x`` into a fresh folder beside the home (the same file system)."""
        out = Path(tempfile.mkdtemp(prefix="archive-", dir=self.home.parent))
        try:
            return timed(["sh", "-c", 'git archive "$1" | tar -x -C "$2"', "sh", "HEAD:.okf", str(out)], self.repo,
                         None)
        finally:
            shutil.rmtree(out, ignore_errors=True)


class Bench:
    def __init__(self, root: Path, sizes: list[int], repeat: int, keep: Path | None, checkout: Path | None) -> None:
        self.root, self.sizes, self.repeat, self.keep, self.checkout = root, sizes, repeat, keep, checkout
        self.built: dict[int, Size] = {}

    def row(self, label: str, a: float, b: float, r: float, floor: str, mib: float | None = None) -> None:
        memory = f"  {mib:6.0f} MiB" if mib is not None else ""
        print(f"{label:<46} {a:8.3f} s  {b:8.3f} s  {r:6.2f}x {floor}{memory}", flush=True)

    def size(self, n: int) -> Size:
        s = Size(self.root, n, self.keep, self.checkout)
        self.built[n] = s
        a, b, r = ratio(lambda: s.run(s.okf("project")), s.archive, self.repeat, setup_a=s.fresh_projection)
        s.fresh_projection()
        self.row(f"first projection ({n:,})", a, b, r, "git archive | tar -x", peak(s.okf("project"), s.repo, s.env))
        for _ in range(2):
            s.run(s.okf("sync"))
        for label, argv in s.reads().items():
            s.run(argv)  # the store's facts (and lookup) for it
            a, b, r = ratio(lambda argv=argv: s.run(argv), lambda: timed(PYGIT2, None, s.env), self.repeat)
            self.row(f"{label} ({n:,})", a, b, r, "import pygit2", peak(argv, s.repo, s.env))
        self.doctor_cold(s)
        self.mcp(s)
        return s

    def doctor_cold(self, s: Size) -> None:
        saved = self.root / "okf-saved"
        shutil.rmtree(saved, ignore_errors=True)
        shutil.copytree(s.repo / ".git" / "okf", saved)
        (s.repo / ".git" / "okf" / "state.db").unlink()
        start = time.perf_counter()
        mib = peak(s.okf("doctor"), s.repo, s.env)
        memory = f"{mib:6.0f} MiB" if mib is not None else ""
        print(f"{f'doctor, cold store ({s.n:,})':<46} {time.perf_counter() - start:8.3f} s  {'':23} {memory}",
              flush=True)
        shutil.rmtree(s.repo / ".git" / "okf")
        shutil.copytree(saved, s.repo / ".git" / "okf")

    def mcp(self, s: Size) -> None:
        try:
            from bench_mcp import over_mcp
            warm, moved, _, hwm, hits = over_mcp(s.repo, s.env, SELECTIVE, None, 50)
        except ImportError:
            print(f"{f'MCP search, selective, warm ({s.n:,})':<46} n/a (pip install 'okfgit[mcp]')", flush=True)
            return
        print(f"{f'MCP search, selective, warm ({s.n:,})':<46} {warm * 1000:8.2f} ms  after a commit "
              f"{moved * 1000:.2f} ms  server {hwm / 1024:.0f} MiB  ({hits})", flush=True)
        git(s.repo, "reset", "-q", "--hard", s.top)

    def across(self) -> None:
        """Each read at the largest size against the same read at 1,000 (and status and sync at
        10,000), paired: the aims' ratios."""
        big = self.built[max(self.sizes)]
        for label, base, aim in (("cat", 1000, 1.5), ("ls of one folder", 1000, 1.5), ("search, selective", 1000, 2.0),
                                 ("links", 1000, None), ("status", 10_000, None), ("sync, nothing to do", 10_000, None)):
            small = self.built.get(base)
            if small is None or small is big:
                continue
            a, b, r = ratio(lambda: big.run(big.reads()[label]), lambda: small.run(small.reads()[label]), self.repeat)
            self.row(f"{label}: {big.n:,} against {base:,}", a, b, r, f"(aim {aim}x)" if aim else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_scale.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, action="append", default=[],
                        help="also measure a KB of this many concepts (repeatable; 1,000 and 10,000 always)")
    parser.add_argument("--repeat", type=int, default=5, help="timed pairs per figure (default 5)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the generated repositories here and reuse them")
    parser.add_argument("--checkout", type=Path, default=None, help="time this okfgit checkout instead")
    args = parser.parse_args(argv)
    sizes = sorted({1000, 10_000, *args.n})
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="okfbench-scale-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        bench = Bench(root, sizes, args.repeat, args.keep.resolve() if args.keep else None,
                      args.checkout.resolve() if args.checkout else None)
        print(f"{'workload':<46} {'median':>10}  {'floor':>10}  ratio (median of pairs), peak")
        for n in sizes:
            bench.size(n)
        bench.across()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
