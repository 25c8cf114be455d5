#!/usr/bin/env python3
"""Time ``search`` over MCP against ``okfgit search`` processes, and the server's memory.

On a synthetic project KB (``genkb.make_repo``, default 10,000 concepts) we time, in one run:

* the baseline: ``--calls`` separate ``okfgit search WORD --json`` processes (what an agent with a
  shell pays per question), median wall time per call;
* ``--calls`` ``search`` tool calls to one ``okfgit mcp`` server through the official SDK's
  stdio client (``mcp.client.stdio``), median wall time per call after one warm-up call;
* the same after a commit to the tier between calls (each timed call is preceded by a new
  commit), so the figure includes the refresh the server does when HEAD moves;
* the server's resident memory (``VmRSS``, and the peak ``VmHWM``) after the calls.

Both sides ask the same question and get the same answer: the same words and the same
``--limit`` (default: none given, so both show search's default of 20 hits and count the rest;
``--limit 0`` compares full answers). Both sides run once untimed first, so the on-disk
cards (in ``state.db``) are stored before any timing. The ratio column is each figure over the
per-process baseline (the issue's aim: MCP at least 10x faster per call). Needs the MCP extra
(``pip install 'okfgit[mcp]'``).

    python bench/bench_mcp.py [--n 10000] [--calls 100] [--query 'cache stale' ...] [--limit N] [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import baselines  # noqa: E402
import genkb  # noqa: E402


def _env(root: Path) -> dict[str, str]:
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = baselines.okfgit_env()
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"), XDG_STATE_HOME=str(home / ".state"),
               CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex"), GIT_CONFIG_NOSYSTEM="1")
    for key in ("OKF_RUN", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(key, None)
    return env


def processes(repo: Path, env: dict[str, str], words: list[str], limit: int | None, calls: int) -> float:
    argv = [sys.executable, "-m", "okfgit", "search", *words, "--json"]
    if limit is not None:
        argv += ["--limit", str(limit)]
    subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)  # stores the cards
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def over_mcp(repo: Path, env: dict[str, str], words: list[str], limit: int | None,
             calls: int) -> tuple[float, float, int, int, str]:
    """(median per call, median per call after a commit each time, VmRSS KiB, VmHWM KiB, hits shown and more)."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    out: dict[str, object] = {}
    ask: dict[str, object] = {"words": words} if limit is None else {"words": words, "limit": limit}

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "okfgit", "mcp"], cwd=repo, env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                first = await session.call_tool("search", ask)
                assert not first.is_error, first
                found = first.structured_content or {}
                out["hits"] = f"{len(found.get('results', []))} hits shown, {found.get('more', 0)} more"
                times = []
                for _ in range(calls):
                    start = time.perf_counter()
                    result = await session.call_tool("search", ask)
                    times.append(time.perf_counter() - start)
                    assert not result.is_error
                out["warm"] = statistics.median(times)
                moved = []
                for i in range(max(calls // 10, 5)):
                    _commit(repo, env, i)
                    start = time.perf_counter()
                    result = await session.call_tool("search", ask)
                    moved.append(time.perf_counter() - start)
                    assert not result.is_error
                out["moved"] = statistics.median(moved)
                out["rss"], out["hwm"] = _server_memory()

    anyio.run(main)
    return (float(out["warm"]), float(out["moved"]), int(out["rss"]), int(out["hwm"]),  # type: ignore[arg-type]
            str(out["hits"]))


def _commit(repo: Path, env: dict[str, str], i: int) -> None:
    path = repo / ".okf"
    for _ in range(3):  # the first concept, whatever the width of the KB's names
        path = path / min(p for p in os.listdir(path) if p != "index.md")
    with path.open("a") as fh:
        fh.write(f"\nEdited between calls ({i}).\n")
    git = {**env, **genkb.git_env()}
    subprocess.run(["git", "commit", "-qam", f"edit {i}"], cwd=repo, env=git, check=True)


def _server_memory() -> tuple[int, int]:
    """VmRSS and VmHWM (KiB) of this process's child running ``okfgit mcp``."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("PPid", "0")) == me and b"mcp" in cmdline and b"okfgit" in cmdline:
            return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])
    raise RuntimeError("the okfgit mcp server process was not found")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_mcp.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="concepts in the synthetic KB")
    parser.add_argument("--calls", type=int, default=100, help="timed calls on each side")
    parser.add_argument("--query", action="append", default=None,
                        help="search words, quoted (repeatable; default: 'cache' (about 10%% of concepts match) "
                             "and 'cache stale' (20 hits at 10,000))")
    parser.add_argument("--limit", type=int, default=None,
                        help="passed to both sides (default: not given, so search's default of 20; 0: all hits)")
    parser.add_argument("--dir", default=None, help="where to build the KB (e.g. /dev/shm)")
    args = parser.parse_args(argv)
    queries = [q.split() for q in (args.query or ["cache", "cache stale"])]
    rows = []
    memory = []
    with tempfile.TemporaryDirectory(prefix="okfbench-mcp-", dir=args.dir) as tmp:
        root = Path(tmp)
        repo = genkb.make_repo(root / "kb", args.n, layout="project")
        env = _env(root)
        for words in queries:
            base = processes(repo, env, words, args.limit, args.calls)
            warm, moved, rss, hwm, hits = over_mcp(repo, env, words, args.limit, args.calls)
            what = f"search {' '.join(words)!r} ({hits})"
            rows += [(f"okfgit {what}, one process per call", base, base),
                     (f"MCP {what}, warm server", warm, base),
                     (f"MCP {what}, a commit before each call", moved, base)]
            memory.append(f"server memory after {what}: VmRSS {rss / 1024:.1f} MiB, peak VmHWM {hwm / 1024:.1f} MiB")
    print(f"{args.n} concepts, {args.calls} calls per figure (median per call)")
    baselines.report(rows, baseline="process")
    for label, secs, base in rows:
        if "MCP" in label:
            print(f"{label}: {base / secs:.1f}x faster per call than a process")
    print("\n".join(memory))
    return 0


if __name__ == "__main__":
    sys.exit(main())
