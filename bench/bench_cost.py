"""Cost that follows the change: each workload as a ratio against its floor, measured in one run.

Every figure is a median of paired runs (the workload and its floor alternate, after a
warm-up), so a noisy machine moves both sides of a ratio alike. Workloads and floors:

| workload | floor | aim |
|---|---|---|
| sync capturing 1,000 new memory files (1,000-concept KB) | ``python -c "import pygit2"`` | <= 10x |
| the same with 2,000 files | the 1,000-file figure | <= 2.1x (linear) |
| review, one-line edit (10,000 concepts) | ``import pygit2`` | <= 3x |
| review, 1,000 concepts added (10,000 concepts) | ``import pygit2`` | <= 10x |
| doctor, warm / cold cache (10,000) | ``git ls-tree -r HEAD .okf \\| git cat-file --batch`` | <= 3x / <= 8x |
| index --check, warm (10,000) | the same | <= 3x |
| first projection (10,000) | ``git archive HEAD:.okf \\| tar -x`` | <= 2.5x |
| project / sync, one concept changed (10,000) | the same verb's no-op | <= 2x |
| status, cat / search warm (10,000): they load pygit2 | ``import pygit2`` | <= 2x |
| cat, cold nav cache (10,000) | (seconds) | <= 1 s |

Run from a checkout: ``python bench/bench_cost.py [--n 10000] [--repeat 3] [--checkout DIR] [--only capture|big|read|change|doctor]``.
``--checkout`` times another checkout of okfgit (for before/after figures) with the same
workloads. Workloads that a checkout cannot run (a verb it lacks) print ``n/a``.
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

import genkb  # noqa: E402
from bench_project import archive_once, bench_env  # noqa: E402
from bench_sync import memory_folder, native  # noqa: E402

OKFGIT = [sys.executable, "-m", "okfgit"]
PYGIT2 = [sys.executable, "-c", "import pygit2"]


def timed(argv: list[str], cwd: Path | None, env: dict[str, str] | None, ok: tuple[int, ...] = (0,)) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in ok:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}")
    return elapsed


def ratio(a: Callable[[], float], b: Callable[[], float], repeat: int,
          setup_a: Callable[[], None] = lambda: None) -> tuple[float, float, float]:
    """(median a, median b, median of a/b pair by pair), after one warm-up pair."""
    ta: list[float] = []
    tb: list[float] = []
    for i in range(repeat + 1):
        setup_a()
        x = a()
        y = b()
        if i:
            ta.append(x)
            tb.append(y)
    return statistics.median(ta), statistics.median(tb), statistics.median(x / y for x, y in zip(ta, tb))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], env=genkb.git_env(), check=True, capture_output=True,
                          text=True).stdout


def cat_file_once(repo: Path) -> float:
    return timed(["sh", "-c", "git ls-tree -r --object-only HEAD .okf | git cat-file --batch >/dev/null"], repo, None)


class Bench:
    def __init__(self, root: Path, n: int, repeat: int, checkout: Path | None) -> None:
        self.root, self.n, self.repeat = root, n, repeat
        self.rows: list[tuple[str, float, float, float, str]] = []
        self.checkout = checkout

    def env(self, home: Path) -> dict[str, str]:
        env = bench_env(home, self.root / "pycache")
        if self.checkout is not None:
            env["PYTHONPATH"] = str(self.checkout)
        return env

    def row(self, label: str, a: float, b: float, r: float, floor: str) -> None:
        self.rows.append((label, a, b, r, floor))
        print(f"{label:<44} {a:8.3f} s  {b:8.3f} s  {r:6.2f}x {floor}", flush=True)

    def na(self, label: str, why: str) -> None:
        print(f"{label:<44} n/a ({why})", flush=True)

    def repo(self, name: str, n: int) -> tuple[Path, dict[str, str]]:
        repo = genkb.make_repo(self.root / name, n)
        for _ in range(600):  # the commit of 10,000 files may have started an auto gc in the background
            if not (repo / ".git" / "gc.pid").exists():
                try:
                    git(repo, "-c", "gc.autoDetach=false", "gc", "-q")
                    break
                except subprocess.CalledProcessError:
                    pass  # that gc started between the look and ours: wait for it
            time.sleep(0.1)
        home = self.root / f"home-{name}"
        home.mkdir()
        return repo, self.env(home)

    def capture(self) -> None:
        repo, env = self.repo("capture", 1000)
        subprocess.run([*OKFGIT, "sync"], cwd=repo, env=env, check=True, capture_output=True)
        folder = memory_folder(repo, env)
        top = git(repo, "rev-parse", "HEAD").strip()
        saved = self.root / "capture-saved"
        shutil.copytree(repo / ".git" / "okf", saved / "okf")
        shutil.copytree(folder, saved / "memory")
        figures: dict[int, float] = {}
        for files in (1000, 2000):
            def fresh(files: int = files) -> None:
                git(repo, "reset", "-q", "--hard", top)
                shutil.rmtree(repo / ".git" / "okf")
                shutil.copytree(saved / "okf", repo / ".git" / "okf")
                shutil.rmtree(folder)
                shutil.copytree(saved / "memory", folder)
                for i in range(files):
                    (folder / f"learned_{i:05d}.md").write_bytes(native(i))

            a, b, r = ratio(lambda: timed([*OKFGIT, "sync"], repo, env), lambda: timed(PYGIT2, None, env),
                            self.repeat, setup_a=fresh)
            figures[files] = a
            self.row(f"sync capturing {files} memory files", a, b, r, "import pygit2")
        print(f"{'  2,000 files / 1,000 files':<44} {figures[2000] / figures[1000]:6.2f}x", flush=True)

    def read(self, repo: Path, env: dict[str, str]) -> None:
        """status and the read verbs, warm, against the floor; ``cat`` with no cards cache."""
        n = self.n
        okf = lambda *a: [*OKFGIT, *a]  # noqa: E731
        concept = genkb.plan(n)[n // 2]
        slug = concept.path.rsplit("/", 1)[-1][:-3]
        for label, argv in (("status", okf("status")), ("cat", okf("cat", slug)),
                            ("search", okf("search", "cache"))):
            timed(argv, repo, env, ok=(0, 2))
            a, b, r = ratio(lambda argv=argv: timed(argv, repo, env, ok=(0, 2)), lambda: timed(PYGIT2, None, env),
                            self.repeat)
            self.row(f"{label}, warm ({n:,})", a, b, r, "import pygit2")

        def cold_nav() -> None:  # the read verbs' cache is the cards every reader shares
            (repo / ".git" / "okf" / "cards.json").unlink(missing_ok=True)
        times = []
        for _ in range(self.repeat):
            cold_nav()
            times.append(timed(okf("cat", slug), repo, env))
        print(f"{'cat, cold nav cache (' + format(n, ',') + ')':<44} {statistics.median(times):8.3f} s", flush=True)
        timed(okf("cat", slug), repo, env)  # warm again for what follows

    def one_change(self, repo: Path, env: dict[str, str]) -> Callable[[], None]:
        """project and sync with one concept changed, against their no-ops; the edit step."""
        n = self.n
        okf = lambda *a: [*OKFGIT, *a]  # noqa: E731
        path = repo / ".okf" / genkb.plan(n)[n // 2].path
        counter = iter(range(10**6))

        def change() -> None:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(f"Benchmark edit {next(counter)}.\n")
            git(repo, "commit", "-q", "--no-verify", "-am", "edit one concept")
        for verb in ("project", "sync"):
            timed(okf(verb), repo, env)
            a, b, r = ratio(lambda verb=verb: timed(okf(verb), repo, env),
                            lambda verb=verb: timed(okf(verb), repo, env), self.repeat, setup_a=change)
            self.row(f"{verb}, one concept changed ({n:,})", a, b, r, f"{verb} no-op")
        return change

    def change_only(self) -> None:
        """status and one change, without the rest of ``big``."""
        repo, env = self.repo("change", self.n)
        okf = lambda *a: [*OKFGIT, *a]  # noqa: E731
        timed(okf("sync"), repo, env)
        timed(okf("status"), repo, env, ok=(0, 2))
        a, b, r = ratio(lambda: timed(okf("status"), repo, env, ok=(0, 2)), lambda: timed(PYGIT2, None, env),
                        self.repeat)
        self.row(f"status, warm ({self.n:,})", a, b, r, "import pygit2")
        self.one_change(repo, env)

    def read_only(self) -> None:
        repo, env = self.repo("read", self.n)
        timed([*OKFGIT, "sync"], repo, env)
        self.read(repo, env)

    def doctor(self, repo: Path, env: dict[str, str]) -> None:
        """doctor and ``index --check`` warm, doctor cold, against ``ls-tree | cat-file --batch``."""
        n = self.n
        okf = lambda *a: [*OKFGIT, *a]  # noqa: E731
        for label, argv in (("doctor", okf("doctor")), ("index --check", okf("index", "--check"))):
            timed(argv, repo, env)
            a, b, r = ratio(lambda argv=argv: timed(argv, repo, env), lambda: cat_file_once(repo), self.repeat)
            self.row(f"{label}, warm ({n:,})", a, b, r, "ls-tree | cat-file --batch")
        saved = self.root / "okf-saved"
        shutil.copytree(repo / ".git" / "okf", saved)

        def cold() -> None:
            for name in os.listdir(repo / ".git" / "okf"):
                if name not in ("state.json",) and not name.endswith(".lock"):
                    p = repo / ".git" / "okf" / name
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
        a, b, r = ratio(lambda: timed(okf("doctor"), repo, env), lambda: cat_file_once(repo), self.repeat,
                        setup_a=cold)
        self.row(f"doctor, cold cache ({n:,})", a, b, r, "ls-tree | cat-file --batch")
        shutil.rmtree(repo / ".git" / "okf")
        shutil.copytree(saved, repo / ".git" / "okf")

    def doctor_only(self) -> None:
        repo, env = self.repo("doctor", self.n)
        timed([*OKFGIT, "sync"], repo, env)
        self.doctor(repo, env)

    def big(self) -> None:
        n = self.n
        repo, env = self.repo("big", n)
        home = Path(env["HOME"])
        okf = lambda *a: [*OKFGIT, *a]  # noqa: E731
        # first projection vs git archive
        def fresh_projection() -> None:
            shutil.rmtree(home / ".claude", ignore_errors=True)
            shutil.rmtree(repo / ".git" / "okf", ignore_errors=True)
            (repo / "AGENTS.md").unlink(missing_ok=True)
        a, b, r = ratio(lambda: timed(okf("project"), repo, env), lambda: archive_once(repo), self.repeat,
                        setup_a=fresh_projection)
        self.row(f"first projection ({n:,})", a, b, r, "git archive | tar -x")
        timed(okf("sync"), repo, env)
        timed(okf("sync"), repo, env)
        self.doctor(repo, env)
        timed(okf("sync"), repo, env)
        self.read(repo, env)
        change = self.one_change(repo, env)
        # review: a one-line edit, and 1,000 concepts added, on a branch
        git(repo, "checkout", "-q", "-b", "edit")
        change()
        git(repo, "checkout", "-q", "main")
        a, b, r = ratio(lambda: timed(okf("review", "main...edit", "--format", "json"), repo, env, ok=(0, 2)),
                        lambda: timed(PYGIT2, None, env), self.repeat)
        self.row(f"review, one-line edit ({n:,})", a, b, r, "import pygit2")
        git(repo, "checkout", "-q", "-b", "added", "main")
        extra = self.root / "extra"
        genkb.generate(extra, 1000, scope="project", seed=7)
        shutil.copytree(extra / "area-01", repo / ".okf" / "added-area")
        subprocess.run([*OKFGIT, "index"], cwd=repo, env=env, capture_output=True)
        git(repo, "add", "-A", ".okf")
        git(repo, "commit", "-q", "--no-verify", "-m", "add 1,000 concepts")
        git(repo, "checkout", "-q", "main")
        a, b, r = ratio(lambda: timed(okf("review", "main...added", "--format", "json"), repo, env, ok=(0, 2)),
                        lambda: timed(PYGIT2, None, env), self.repeat)
        self.row(f"review, 1,000 concepts added ({n:,})", a, b, r, "import pygit2")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_cost.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="concepts in the large KB (default 10,000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed pairs per figure (default 3)")
    parser.add_argument("--checkout", type=Path, default=None, help="time this okfgit checkout instead")
    parser.add_argument("--only", choices=("capture", "big", "read", "change", "doctor"), default=None,
                        help="one group: capture, big (everything at --n), read (status and the read verbs), "
                             "change (status, and project and sync with one concept changed), doctor (doctor and "
                             "index --check, warm and cold)")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="okfbench-cost-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        bench = Bench(root, args.n, args.repeat, args.checkout.resolve() if args.checkout else None)
        print(f"{'workload':<44} {'median':>10}  {'floor':>10}  ratio (median of pairs)")
        if args.only in (None, "capture"):
            bench.capture()
        if args.only in (None, "big"):
            bench.big()
        if args.only == "read":
            bench.read_only()
        if args.only == "change":
            bench.change_only()
        if args.only == "doctor":
            bench.doctor_only()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
