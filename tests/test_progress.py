from __future__ import annotations

import io
from pathlib import Path

import pytest

from okfgit.commands import _common
from okfgit.commands._common import StderrProgress, progress_for
from okfgit.progress import silent
from tests.conftest import Runner


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_counts_and_an_estimate_once_work_takes_a_second() -> None:
    now = [0.0]
    stream = Terminal()
    progress = StderrProgress(stream, after=1.0, clock=lambda: now[0])
    progress("reading project concepts", 100, 400)
    assert stream.getvalue() == ""  # a quick run shows nothing
    now[0] = 2.0
    progress("reading project concepts", 200, 400)
    assert stream.getvalue() == "\rreading project concepts: 200/400, about 2 s left"
    now[0] = 4.0
    progress("reading project concepts", 400, 400)
    assert stream.getvalue().endswith("\rreading project concepts: 400/400" + " " * 16 + "\n")


def test_no_progress_off_a_terminal_or_when_asked_to_be_quiet() -> None:
    assert progress_for(stream=io.StringIO()) is silent
    assert progress_for(quiet=True, stream=Terminal()) is silent
    assert isinstance(progress_for(stream=Terminal()), StderrProgress)


def test_runs_off_a_terminal_print_nothing_extra(project: Path, okfgit: Runner, okfgit_proc: Runner,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Even with no delay at all, stderr that is not a terminal gets no progress line.
    monkeypatch.setattr(_common, "StderrProgress", lambda stream: StderrProgress(stream, after=0.0))
    for n in range(3):
        okfgit("new", f"note-{n}", "--type", "Note", "--description", f"Note number {n}.", cwd=project)
    for args in (("doctor",), ("project",), ("index", "--check"), ("sync",)):
        result = okfgit(*args, cwd=project)
        assert "\r" not in result.err and "concepts:" not in result.err and "files:" not in result.err, args
    result = okfgit_proc("doctor", cwd=project)
    assert result.err == ""
