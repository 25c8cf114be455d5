#!/usr/bin/env python3
"""Benchmark ``okfgit sync`` (the no-op every git hook pays for) and ``okfgit capture``.

On project repositories made by ``genkb.make_repo`` (the KB in ``.okf/``), with HOME, XDG_*,
CLAUDE_CONFIG_DIR and CODEX_HOME in a temp folder:

* **sync no-op** at 1,000 and 10,000 concepts: the memory folder holds the whole projected KB
  and nothing changed since the last sync. Twice: as the git hooks run it
  (``okfgit sync --hook post-checkout -- <old> <new> 1``: the memory folders are checked, not
  every file) and as ``okfgit sync`` (every memory file is stat'ed, to see in-place edits).
  Printed next to ``python -c "import okfgit.cli"`` (process start) and
  ``git status --porcelain`` in the same repository, each measured alternately with the
  okfgit figure. Aim (issue 4): the hook's no-op within 1.5x process start, independent of KB
  size.
* **capture** of 100 and 1,000 native Claude memory files (the current format, with
  ``metadata.type``) into the 1,000-concept KB: ``okfgit capture`` alone, and the whole
  ``okfgit sync`` that also projects the captured facts back. Each run starts from the synced
  KB with the files freshly written (setup untimed). Reported per file:
  ``(time - process start) / files``.
* **sync with one new memory file** in the 10,000-concept KB: what a session-end hook costs
  when the agent learned one thing (the full path at that size).

Every figure is a median after one warm-up. Python keeps its bytecode cache (as an installed
okfgit does), in the temp folder.

    python bench/bench_sync.py [--sizes 1000,10000] [--files 100,1000] [--repeat 5] [--keep]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import baselines  # noqa: E402
import genkb  # noqa: E402
from bench_project import bench_env, paired, timed  # noqa: E402

AIM_NOOP = 1.5
SYNC = [sys.executable, "-m", "okfgit", "sync"]
CAPTURE = [sys.executable, "-m", "okfgit", "capture"]
START = [sys.executable, "-c", "import okfgit.cli"]
GIT_STATUS = ["git", "status", "--porcelain"]


def memory_folder(repo: Path, env: dict[str, str]) -> Path:
    """Claude Code's memory folder for ``repo``, as okfgit computes it."""
    out = subprocess.run([sys.executable, "-c", "import os, pathlib, sys; "
                          "from okfgit.targets.claude_home import memory_dir; "
                          "print(memory_dir(pathlib.Path(sys.argv[1]).resolve(), os.environ, "
                          "pathlib.Path(os.environ['HOME'])).path)", str(repo)],
                         env=env, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def native(n: int) -> bytes:
    """One memory file as Claude Code 2.1 writes it."""
    return (f"---\nname: learned-fact-{n:05d}\ndescription: Fact {n} the agent learned about the build\n"
            f"metadata:\n  type: project\n  node_type: memory\n---\n"
            f"The build needs step {n} before packaging.\n\n**Why:** it failed without it in run {n}.\n").encode()


def head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def settle(repo: Path, env: dict[str, str]) -> None:
    """Sync until it is a no-op on the fast path (a sync that wrote files is followed by one
    full check, by design: syncstamp.py); proven by pygit2 not being imported."""
    for _ in range(5):
        proc = subprocess.run([sys.executable, "-X", "importtime", *SYNC[1:]], cwd=repo, env=env,
                              capture_output=True, text=True, check=True)
        if proc.stdout == "okfgit sync: up to date\n" and "pygit2" not in proc.stderr:
            return
    raise RuntimeError(f"sync does not settle on the fast path: {proc.stdout!r}")


def noop(root: Path, n: int, repeat: int) -> dict[str, float]:
    repo = genkb.make_repo(root / f"repo-{n}", n)
    home = root / f"home-{n}"
    home.mkdir()
    env = bench_env(home, root / "pycache")
    settle(repo, env)
    top = head(repo)
    hook = [*SYNC, "--hook", "post-checkout", "--", top, top, "1"]
    hooked, start = paired(lambda: timed(hook, repo, env), lambda: timed(START, None, env), repeat)
    sync, status = paired(lambda: timed(SYNC, repo, env), lambda: timed(GIT_STATUS, repo, env), repeat)
    assert head(repo) == top, "a no-op sync made a commit"
    one = one_new_file(repo, env, repeat) if n >= 10_000 else None
    return {"hook": hooked, "sync": sync, "start": start, "git status": status,
            **({"one new file": one} if one is not None else {})}


def one_new_file(repo: Path, env: dict[str, str], repeat: int) -> float:
    folder = memory_folder(repo, env)
    counter = iter(range(10**6))

    def write() -> None:
        (folder / f"learned_{next(counter)}.md").write_bytes(native(next(counter)))

    times = []
    for i in range(repeat + 1):
        write()
        t = timed(SYNC, repo, env)
        settle(repo, env)
        if i:
            times.append(t)
    return statistics.median(times)


def capture(root: Path, files: int, repeat: int, env: dict[str, str], repo: Path, base: Path) -> dict[str, float]:
    """Median seconds of ``capture`` and of ``sync`` with ``files`` new memory files."""
    folder = memory_folder(repo, env)
    top = head(repo)

    def fresh() -> None:
        subprocess.run(["git", "-C", str(repo), "reset", "-q", "--hard", top], check=True, env=genkb.git_env())
        shutil.rmtree(repo / ".git" / "okf")
        shutil.copytree(base / "okf", repo / ".git" / "okf")
        shutil.rmtree(folder)
        shutil.copytree(base / "memory", folder)
        for n in range(files):
            (folder / f"learned_{n:05d}.md").write_bytes(native(n))

    out: dict[str, float] = {}
    for name, argv in (("capture", CAPTURE), ("sync", SYNC)):
        times = []
        for i in range(repeat + 1):
            fresh()
            t = timed(argv, repo, env)
            if i:
                times.append(t)
        out[name] = statistics.median(times)
    fresh()
    subprocess.run(SYNC, cwd=repo, env=env, check=True, capture_output=True)
    listed = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", "HEAD", ".okf/memory/"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert len(listed) == files + 1, f"expected {files} captured concepts and an index, found {len(listed)}"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_sync.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--files", default="100,1000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder and print where it is")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="okfbench-sync-"))
    try:
        rows: list[tuple[str, float, float]] = []
        verdicts: list[str] = []
        start = 0.0
        for n in [int(s) for s in args.sizes.split(",")]:
            r = noop(tmp, n, args.repeat)
            start = r["start"]
            rows += [(f"{n:>6} python -c 'import okfgit.cli'", r["start"], r["start"]),
                     (f"{n:>6} git status --porcelain", r["git status"], r["start"]),
                     (f"{n:>6} okfgit sync --hook post-checkout, no-op", r["hook"], r["start"]),
                     (f"{n:>6} okfgit sync, no-op (stats every memory file)", r["sync"], r["start"])]
            if "one new file" in r:
                rows.append((f"{n:>6} okfgit sync, one new memory file", r["one new file"], r["start"]))
            for name, key in (("hook no-op", "hook"), ("sync no-op", "sync")):
                ratio = r[key] / r["start"]
                verdict = "met" if ratio <= AIM_NOOP else "MISSED"
                verdicts.append(f"{n:>6} {name:<10} {ratio:5.2f}x process start, {r[key] / r['git status']:5.2f}x "
                                f"git status (aim {AIM_NOOP}x process start): {verdict}")
        # capture: into the 1,000-concept KB, starting each run from its synced state
        kb = 1000
        repo = tmp / "capture-repo"
        shutil.copytree(tmp / f"repo-{kb}", repo) if (tmp / f"repo-{kb}").exists() else genkb.make_repo(repo, kb)
        home = tmp / "capture-home"
        home.mkdir()
        env = bench_env(home, tmp / "pycache")
        settle(repo, env)
        base = tmp / "capture-base"
        base.mkdir()
        shutil.copytree(repo / ".git" / "okf", base / "okf")
        shutil.copytree(memory_folder(repo, env), base / "memory")
        start = baselines.timeit(START, repeat=args.repeat, env=env)
        for files in [int(s) for s in args.files.split(",")]:
            c = capture(tmp, files, args.repeat, env, repo, base)
            for name in ("capture", "sync"):
                per = (c[name] - start) / files
                rows.append((f"{kb:>6} {name} of {files} native files", c[name], start))
                verdicts.append(f"{kb:>6} {name:<7} {files:>5} files: {per * 1000:6.2f} ms per file "
                                f"(after subtracting process start)")
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
