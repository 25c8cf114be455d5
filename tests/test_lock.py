"""The sync lock, with real concurrent processes (no timing assertions: processes
coordinate through files and pipes, and timeouts only bound how long a test can hang)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from okfgit.local import lock, paths
from okfgit.errors import UnwritableError

HOLD = """
import sys, time
from pathlib import Path
from okfgit.local import lock
held = lock.acquire(Path(sys.argv[1]), 30)
print("held" if held else "none", flush=True)
sys.stdin.readline()  # hold until told (or killed)
"""

COUNT = """
import sys
from pathlib import Path
from okfgit.local import lock
path, counter = Path(sys.argv[1]), Path(sys.argv[2])
for _ in range(20):
    with lock.acquire(path, 60) as held:
        assert held is not None
        value = int(counter.read_text())
        counter.write_text(str(value + 1))  # a lost update shows up as a wrong total
"""


def holder_process(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    return proc


def test_lock_path_is_in_the_common_dir(tmp_path: Path) -> None:
    assert paths.lock(tmp_path / ".git") == tmp_path / ".git" / "okf" / "sync.lock"


def test_acquire_release_and_reacquire(tmp_path: Path) -> None:
    path = tmp_path / "okf" / "sync.lock"
    with lock.acquire(path, 0, now=lambda: 1764460800) as held:
        assert held is not None
        assert path.read_text() == f"pid {os.getpid()}\nsince 2025-11-30T00:00:00Z\n"
    assert path.read_bytes() == b""  # released: no holder recorded, file kept
    again = lock.acquire(path, 0)
    assert again is not None
    again.release()
    again.release()  # twice is harmless


def test_a_second_process_waits_then_gets_none(tmp_path: Path) -> None:
    path = tmp_path / "sync.lock"
    proc = holder_process(path)
    try:
        assert lock.acquire(path, 0.2) is None
        found = lock.holder(path)
        assert found is not None and found.pid == proc.pid
        assert found.describe().startswith(f"pid {proc.pid} since ")
    finally:
        proc.communicate("\n", timeout=30)
    assert lock.holder(path) is None


def test_a_waiter_gets_the_lock_once_the_holder_releases(tmp_path: Path) -> None:
    path = tmp_path / "sync.lock"
    proc = holder_process(path)
    waiter = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    proc.communicate("\n", timeout=30)  # the holder exits; the waiter (30 s budget) takes over
    assert waiter.stdout is not None
    assert waiter.stdout.readline() == "held\n"
    waiter.communicate("\n", timeout=30)


def test_a_holder_killed_with_sigkill_frees_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "sync.lock"
    proc = holder_process(path)
    assert lock.acquire(path, 0) is None
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert path.read_text().startswith(f"pid {proc.pid}\n")  # the stale record is still there...
    assert lock.holder(path) is None  # ...but nobody holds the lock
    recovered = lock.acquire(path, 0)
    assert recovered is not None
    assert path.read_text().startswith(f"pid {os.getpid()}\n")
    recovered.release()


def test_concurrent_processes_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "sync.lock"
    counter = tmp_path / "counter"
    counter.write_text("0")
    procs = [subprocess.Popen([sys.executable, "-c", COUNT, str(path), str(counter)]) for _ in range(8)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    assert counter.read_text() == "160"


def test_holder_of_a_missing_lock_file_is_none(tmp_path: Path) -> None:
    assert lock.holder(tmp_path / "nope.lock") is None


def test_a_symlinked_lock_path_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("precious\n")
    link = tmp_path / "sync.lock"
    link.symlink_to(target)
    with pytest.raises(UnwritableError, match=f"^cannot open the sync lock {link}: "):
        lock.acquire(link, 0)
    assert target.read_text() == "precious\n"
