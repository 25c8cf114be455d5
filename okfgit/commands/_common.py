"""Options and output helpers shared by the commands."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import click

from okfgit.context import Context
from okfgit.progress import Progress, silent

if TYPE_CHECKING:  # importing tiers loads pygit2: commands with a fast path import it only when used
    from okfgit.knowledge.tiers import Workspace

F = TypeVar("F", bound=Callable[..., Any])


def repo_option(f: F) -> F:
    return click.option(
        "--repo", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="The project repository (default: the one containing the current folder).",
    )(f)


def run_option(f: F) -> F:
    return click.option(
        "--run", "run", default=None, metavar="SLUG",
        help="The active run (default: $OKF_RUN, then `git config okf.run`).",
    )(f)


class TextFile(click.ParamType):
    """A file named on the command line (``-``: stdin), read whole as UTF-8 text. One that
    cannot be read, is not UTF-8 or holds NUL bytes is a usage error naming it (exit 2)."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            with click.open_file(value, "rb") as stream:
                data = stream.read()
        except OSError as exc:
            self.fail(f"cannot read {value}: {exc.strerror or exc}", param, ctx)
        if b"\0" in data:
            self.fail(f"{value} is binary (it contains NUL bytes), not text", param, ctx)
        try:
            return str(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            self.fail(f"{value} is not UTF-8 text (byte {exc.start})", param, ctx)


TEXT_FILE = TextFile()


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(f)


def scope_option(default: str | None = "project", allow_all: bool = False) -> Callable[[F], F]:
    choices = ["global", "project", "job"] + (["all"] if allow_all else [])

    def deco(f: F) -> F:
        return click.option(
            "--scope", type=click.Choice(choices), default=default, show_default=default is not None,
            help="Which tier: " + ", ".join(choices) + ".",
        )(f)

    return deco


def workspace(repo: Path | None = None, run: str | None = None, *,
              new_run: bool = False) -> tuple[Context, Workspace]:
    """The context and workspace; a ``--run`` must name an existing run unless ``new_run``
    (``init --scope job``, ``run start`` create it)."""
    from okfgit.knowledge.tiers import check_known_run, open_workspace
    from okfgit.local import journal

    ctx = Context.from_process()
    ws = open_workspace(ctx, repo, run)
    if not new_run:
        check_known_run(ws, run)
    # A commit a killed okfgit left half-done is finished before anything reads the tiers.
    left = [tier for tier in ws.active() if journal.left_behind(tier.repo_path)]
    if left:
        from okfgit.plan import recover

        warn(recover(ctx, left))
    return ctx, ws


def quiet_failures() -> None:
    """This invocation runs from an agent's hook: ``cli.main`` maps every failure to exit 1.

    Claude Code reads exit 2 from a hook as "block", so a ``--quiet`` command never exits 2
    (or 3). Called once the command's own arguments are known to be valid.
    """
    from okfgit.cli import Invocation

    found = click.get_current_context().find_object(Invocation)
    if found is not None:
        found.quiet = True


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False))


def warn(messages: Iterable[str]) -> None:
    for message in messages:
        click.echo(f"okfgit: warning: {message}", err=True)


class StderrProgress:
    """A one-line counter on a terminal's stderr (``what: done/total, about N s left``),
    shown only once one piece of work has taken ``after`` seconds, and ended by a newline."""

    def __init__(self, stream: TextIO, after: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.after = after
        self.clock = clock
        self.what = ""
        self.started = 0.0
        self.shown = 0.0  # when the line was last drawn (0: not drawn for this work)
        self.width = 0

    def __call__(self, what: str, done: int, total: int) -> None:
        now = self.clock()
        if what != self.what:
            self.end()
            self.what, self.started = what, now
        elapsed = now - self.started
        if elapsed < self.after or (done < total and now - self.shown < 0.1):
            return
        line = f"{what}: {done:,}/{total:,}"
        if 0 < done < total:
            line += f", about {elapsed * (total - done) / done:.0f} s left"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)
        self.shown = now
        if done >= total:
            self.end()

    def end(self) -> None:
        """Finish the line drawn for the current work (nothing when none was drawn)."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
        self.shown, self.width, self.what = 0.0, 0, ""


def progress_for(*, quiet: bool = False, stream: TextIO | None = None) -> Progress:
    """What the library's progress callback does for this command: a counter on stderr when a
    person is watching it (a terminal), nothing in hooks, under ``--quiet`` or ``--json``
    (pass ``quiet=True`` for all three) or when stderr is not a terminal."""
    stream = sys.stderr if stream is None else stream
    if quiet or not stream.isatty():
        return silent
    return StderrProgress(stream)


def with_progress(ctx: Context, *, quiet: bool = False) -> Context:
    """``ctx`` reporting progress as ``progress_for`` decides."""
    return ctx._replace(progress=progress_for(quiet=quiet))
