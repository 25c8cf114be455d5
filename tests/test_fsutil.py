"""fsutil.atomic_write: a temp file beside the target and a rename, the mode kept."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import pytest

from okfgit import fsutil
from okfgit.errors import UnwritableError


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_file_in_new_folders_gets_the_umasks_mode_and_no_temp_file_stays(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        target = tmp_path / "a" / "b" / "fact.md"
        fsutil.atomic_write(target, b"one\n", fsync=True)
        assert target.read_bytes() == b"one\n" and mode(target) == 0o644
        assert os.listdir(target.parent) == ["fact.md"]
    finally:
        os.umask(umask)


def test_a_rewrite_keeps_the_files_mode_even_bits_the_umask_would_drop(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        target = tmp_path / "fact.md"
        for kept in (0o640, 0o666, 0o755):
            target.write_bytes(b"old\n")
            target.chmod(kept)
            fsutil.atomic_write(target, b"new\n", fsync=False)
            assert target.read_bytes() == b"new\n" and mode(target) == kept
        fsutil.atomic_write(target, b"x\n", fsync=False, mode=0o600)
        assert mode(target) == 0o600
    finally:
        os.umask(umask)


def test_the_stat_given_back_is_the_files_and_a_time_asked_for_is_its_time(tmp_path: Path) -> None:
    """What projection records of a file it wrote (size, mtime) is the file's own, with the
    time Claude's recall order asked for set before the rename, mode bits and all."""
    umask = os.umask(0o022)
    try:
        target = tmp_path / "fact.md"
        when = 1_700_000_000_123_456_789
        given = fsutil.atomic_write(target, b"twelve bytes", fsync=False, mode=0o666, mtime_ns=when)
        now = os.lstat(target)
        assert (given.st_size, given.st_mtime_ns, given.st_ino) == (now.st_size, now.st_mtime_ns, now.st_ino)
        assert now.st_size == 12 and now.st_mtime_ns == when and mode(target) == 0o666
        given = fsutil.atomic_write(target, b"other", fsync=True)  # no time asked for: the time of writing
        now = os.lstat(target)
        assert (given.st_size, given.st_mtime_ns) == (5, now.st_mtime_ns) != (5, when)
    finally:
        os.umask(umask)


def test_a_link_is_replaced_by_a_file_with_its_targets_mode(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_bytes(b"real\n")
    real.chmod(0o604)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    fsutil.atomic_write(link, b"mine\n", fsync=False)
    assert not link.is_symlink() and link.read_bytes() == b"mine\n" and mode(link) == 0o604
    assert real.read_bytes() == b"real\n"


def test_a_read_only_file_or_an_unwritable_place_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    target = kb / "fact.md"
    target.write_bytes(b"keep\n")
    target.chmod(0o444)
    with pytest.raises(UnwritableError, match="read-only"):
        fsutil.atomic_write(target, b"new\n", fsync=False)
    assert target.read_bytes() == b"keep\n"
    (kb / "file").write_bytes(b"")
    with pytest.raises(UnwritableError, match="cannot write"):
        fsutil.atomic_write(kb / "file" / "x.md", b"x\n", fsync=False)
    assert sorted(os.listdir(kb)) == ["fact.md", "file"]


def test_temp_names_are_the_pattern_the_sweep_removes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    replace = os.replace

    def spy(src: str, dst: object) -> None:
        seen.append(os.path.basename(src))
        replace(src, dst)  # type: ignore[arg-type]
    monkeypatch.setattr(os, "replace", spy)
    fsutil.atomic_write(tmp_path / "fact.md", b"x\n", fsync=False)
    fsutil.atomic_write(tmp_path / ("n" * 252 + ".md"), b"x\n", fsync=False)
    assert len(seen) == 2 and all(re.fullmatch(r"\.okf-[0-9a-f]{16}\.okftmp", name) for name in seen)
    assert all(fsutil.is_temp_name(name) for name in seen)


def test_any_name_that_fits_the_file_system_is_written_atomically(tmp_path: Path) -> None:
    longest = tmp_path / "kb" / ("é" * 126 + ".md")  # 255 bytes: the longest name ext4 takes
    fsutil.atomic_write(longest, b"x\n", fsync=False)
    fsutil.atomic_write(longest, b"y\n", fsync=True)
    assert longest.read_bytes() == b"y\n" and os.listdir(longest.parent) == [longest.name]


def test_the_sweep_removes_old_and_new_temp_names_and_nothing_else(tmp_path: Path) -> None:
    kept = [".fact.md", "fact.okftmp", ".okf-123.okftmp", "okf-0123456789abcdef.okftmp", "notes.md"]
    swept = [".okf-0123456789abcdef.okftmp", ".fact.md.0123456789.okftmp"]  # new; what an earlier okfgit left
    folder = tmp_path / "kb"
    folder.mkdir()
    for name in kept + swept:
        (folder / name).write_bytes(b"x")
    removed = fsutil.sweep_temp([folder], time.time_ns() + 10**9)
    assert sorted(p.name for p in removed) == sorted(swept)
    assert sorted(os.listdir(folder)) == sorted(kept)
