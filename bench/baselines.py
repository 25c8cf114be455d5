"""Timing helpers and reference costs ("baselines") for okfgit benchmarks.

Stdlib only.  A benchmark measures an okfgit operation with :func:`timeit`
and divides by the baseline that bounds it from below:

* :func:`baseline_process_start` - ``python -c "import okfgit.cli"``: the floor
  for any okfgit invocation (a no-op should cost about this, design rule 4);
* :func:`baseline_cat_file` - ``git ls-tree -r HEAD <prefix> | git cat-file
  --batch``: reading every blob of a KB from the object store;
* :func:`baseline_archive` - ``git archive <treeish> | tar -x``: reading a KB
  and writing it out as files (what a full projection must at least do);
* :func:`baseline_git_status` - ``git status --porcelain``: what the hooks'
  host command costs anyway.

Each baseline runs one warm-up and returns the median wall time in seconds.
"""

from __future__ import annotations

import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

__all__ = [
    "PROJECT_ROOT",
    "okfgit_env",
    "timeit",
    "baseline_process_start",
    "baseline_cat_file",
    "baseline_archive",
    "baseline_git_status",
    "report",
]

#: The okfgit checkout this file lives in (``bench/..``).
PROJECT_ROOT = Path(__file__).resolve().parent.parent

PathLike = str | os.PathLike[str]


def okfgit_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) with the checkout prepended to
    ``PYTHONPATH``, so ``sys.executable -m okfgit`` works from any cwd even when
    okfgit is not installed."""
    env = dict(os.environ if base is None else base)
    parts = [str(PROJECT_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def _run(cmd: Sequence[str], cwd: PathLike | None, env: Mapping[str, str] | None) -> None:
    proc = subprocess.run(
        list(cmd),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise RuntimeError(f"{shlex.join(cmd)} exited {proc.returncode}: {err}")


def _median(run_once: Callable[[], float], repeat: int) -> float:
    """One warm-up call, then the median of ``repeat`` timed calls.
    ``run_once`` returns the seconds it measured (so setup can stay untimed)."""
    if repeat < 1:
        raise ValueError("repeat must be >= 1")
    run_once()
    return statistics.median(run_once() for _ in range(repeat))


def timeit(
    cmd: Sequence[str] | Callable[[], object],
    *,
    repeat: int = 5,
    cwd: PathLike | None = None,
    env: Mapping[str, str] | None = None,
) -> float:
    """Median wall seconds of ``repeat`` runs, after one untimed warm-up run.

    A list/tuple ``cmd`` runs as a subprocess (stdout discarded; a non-zero
    exit raises ``RuntimeError`` with its stderr).  A callable is called in
    process; ``cwd``/``env`` apply only to subprocesses and are rejected for
    callables.
    """
    if callable(cmd):
        if cwd is not None or env is not None:
            raise ValueError("cwd/env only apply to subprocess commands")
        fn = cmd

        def once() -> float:
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0

    else:
        if isinstance(cmd, (str, bytes)):
            raise TypeError("pass the command as a list of arguments")
        argv = list(cmd)

        def once() -> float:
            t0 = time.perf_counter()
            _run(argv, cwd, env)
            return time.perf_counter() - t0

    return _median(once, repeat)


def baseline_process_start(*, repeat: int = 5, module: str = "okfgit.cli") -> float:
    """Median of ``python -c "import okfgit.cli"`` with ``sys.executable``
    (the checkout on ``PYTHONPATH``; ``module`` overrides what is imported)."""
    return timeit(
        [sys.executable, "-c", f"import {module}"],
        repeat=repeat,
        env=okfgit_env(),
    )


def baseline_cat_file(repo: Path, prefix: str, *, repeat: int = 5) -> float:
    """Median of ``git ls-tree -r HEAD <prefix> | git cat-file --batch``.

    ``prefix`` is a path in the tree (``".okf"`` for a project KB; ``""`` for
    the whole tree).  ``ls-tree --object-only`` (git >= 2.36) emits the bare
    OIDs that ``cat-file --batch`` reads.
    """
    script = (
        'git ls-tree -r --object-only HEAD ${1:+-- "$1"} | git cat-file --batch >/dev/null'
    )
    return timeit(["sh", "-c", script, "sh", prefix], repeat=repeat, cwd=repo)


def baseline_archive(repo: Path, treeish: str, *, repeat: int = 5) -> float:
    """Median of ``git archive <treeish> | tar -x -C <fresh temp dir>``.

    ``treeish`` is e.g. ``"HEAD:.okf"`` (project KB) or ``"HEAD"``.  Each run
    extracts into a new empty directory; creating and removing it is untimed.
    """
    argv_tail = ["sh", "-c", 'git archive "$1" | tar -x -C "$2"', "sh", treeish]

    def once() -> float:
        out = tempfile.mkdtemp(prefix="okfbench-archive-")
        try:
            t0 = time.perf_counter()
            _run([*argv_tail, out], repo, None)
            return time.perf_counter() - t0
        finally:
            shutil.rmtree(out, ignore_errors=True)

    return _median(once, repeat)


def baseline_git_status(repo: Path, *, repeat: int = 5) -> float:
    """Median of ``git status --porcelain`` in ``repo``."""
    return timeit(["git", "status", "--porcelain"], repeat=repeat, cwd=repo)


def report(
    rows: list[tuple[str, float, float]],
    *,
    baseline: str = "baseline",
    file: IO[str] | None = None,
) -> str:
    """Print (and return) a table of ``(label, seconds, baseline_seconds)`` rows.

    Columns: label, seconds, and the ratio ``seconds / baseline_seconds``,
    headed ``x <baseline>`` (name the baseline, e.g. ``"process start"``).
    A row may use a different baseline per row; name it in the label then.
    """
    head = ("benchmark", "seconds", f"x {baseline}")
    body = [
        (label, f"{secs:.4f}", f"{secs / base:.2f}" if base > 0 else "n/a")
        for label, secs, base in rows
    ]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(3)]
    fmt = f"{{:<{widths[0]}}}  {{:>{widths[1]}}}  {{:>{widths[2]}}}"
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in body]
    text = "\n".join(lines) + "\n"
    print(text, end="", file=file if file is not None else sys.stdout)
    return text


if __name__ == "__main__":  # smoke run: python bench/baselines.py [N]
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import genkb

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory(prefix="okfbench-") as tmp:
        repo = genkb.make_repo(Path(tmp) / "repo", n)
        module = "okfgit.cli"
        try:
            start = baseline_process_start(module=module)
        except RuntimeError:  # okfgit.cli not written yet in this checkout
            module = "okfgit"
            start = baseline_process_start(module=module)
        report(
            [
                (f"python -c 'import {module}'", start, start),
                (f"cat-file --batch, {n} concepts", baseline_cat_file(repo, ".okf"), start),
                (f"archive | tar -x, {n} concepts", baseline_archive(repo, "HEAD:.okf"), start),
                ("git status --porcelain", baseline_git_status(repo), start),
            ],
            baseline="process start",
        )
