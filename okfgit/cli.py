"""The command line: parse, call one library function, print.

Subcommands live one per module in ``okfgit.commands`` and are imported only when
invoked, so a git hook that runs ``okfgit sync`` pays for what it uses and no more.
Every OkfError is mapped to its exit code here and nowhere else.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from okfgit import __version__
from okfgit.errors import EXIT_INTEGRITY, EXIT_OK, EXIT_QUIET_FAILURE, OkfError

# verb -> (module in okfgit.commands, one-line help shown by `okfgit --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init", "Bootstrap a tier: its repository, root index.md and first commit."),
    "new": ("new", "Create a concept (and refresh its folder's index) as one commit."),
    "index": ("index", "Regenerate every index.md from the tree at HEAD (--check to verify)."),
    "doctor": ("doctor", "Check OKF conformance and okfgit's profile; exit 2 on errors."),
    "ls": ("nav", "List concepts and folders at HEAD."),
    "cat": ("nav", "Print a concept with its citation tier:path@oid."),
    "links": ("nav", "Show a concept's outgoing links and backlinks."),
    "search": ("nav", "Find concepts by type, tags and words in title/description."),
    "adopt": ("adopt", "Bring an existing OKF bundle or markdown folder into a tier."),
    "project": ("project", "Project the KB into Claude Code memory, CLAUDE.md and AGENTS.md."),
    "capture": ("capture", "Capture facts agents wrote to Claude Code memory as commits."),
    "sync": ("sync", "Capture, then project, under a lock (what the git hooks run)."),
    "status": ("status", "Show what sync would do, without writing."),
    "hooks": ("hooks", "Install, remove or inspect okfgit's git hooks and agent hooks."),
    "run": ("run", "Start, inspect and end runs (the job tier)."),
    "note": ("run", "Write a note into the active run."),
    "log": ("run", "Add a dated entry to the active run's log.md."),
    "state": ("run", "Rewrite the active run's STATE.md (its task, where it stands, next steps) as a commit."),
    "remote": ("remote", "Show, set or remove the global tier's git remote (sync exchanges with it)."),
    "promote": ("promote", "Promote a concept job -> project or project -> global."),
    "review": ("review", "Review a branch's knowledge changes; verdict for a pull request."),
    "proposal": ("proposal", "Accept or drop an agent's version of a protected concept."),
    "mcp": ("mcp", "Serve the knowledge base to agents over MCP; register it with an agent."),
    "merge-driver": ("merge_driver", "git's merge driver for .okf/**/*.md (set up by `okfgit hooks install`)."),
}


class SuggestingGroup(click.Group):
    """A group that answers a mistyped subcommand with the ones it may have meant."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib  # only for a mistyped command

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)


class LazyGroup(SuggestingGroup):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module = importlib.import_module(f"okfgit.commands.{entry[0]}")
        command = getattr(module, name.replace("-", "_") + "_cmd")
        assert isinstance(command, click.Command)
        if type(command) is click.Group:
            # A verb's own subcommands (``hooks install``) suggest too; commands/ may not import
            # this module to say ``cls=SuggestingGroup`` itself.
            command.__class__ = SuggestingGroup
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in sorted(COMMANDS.items())]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="okfgit")
def cli() -> None:
    """okfgit keeps one OKF knowledge base (global, project and job tiers, each a
    Git repository) and projects it into every coding agent's native files.

    Exit codes: 0 ok, 2 usage or validation error, 3 unwritable target or
    integrity failure (nothing half-written).
    """


class Invocation:
    """What ``main`` needs to know about the command it ran (``cli.main(obj=...)``).
    A plain class: ``dataclasses`` would cost the no-op path an import."""

    def __init__(self) -> None:
        self.quiet = False  # an agent hook's invocation (``--quiet``): every failure exits 1

    def exit_code(self, code: int) -> int:
        return EXIT_QUIET_FAILURE if self.quiet and code != EXIT_OK else code


def main(argv: list[str] | None = None) -> None:
    """The entry point: run one command and map its result or error to the exit code.

    This is the only place exit codes are chosen: a command returns the code its library
    report gives (0, 2 or 3) or raises an OkfError carrying one; under ``--quiet`` every
    failure becomes 1 (Claude Code reads 2 from a hook as "block").
    """
    invocation = Invocation()
    try:
        result: Any = cli.main(args=argv, prog_name="okfgit", standalone_mode=False, obj=invocation)
    except OkfError as exc:
        click.echo(f"okfgit: error: {exc}", err=True)
        sys.exit(invocation.exit_code(exc.exit_code))
    except click.exceptions.Abort:
        click.echo("okfgit: aborted", err=True)
        sys.exit(invocation.exit_code(1))
    except click.ClickException as exc:
        exc.show()
        sys.exit(invocation.exit_code(exc.exit_code))
    except click.exceptions.Exit as exc:
        sys.exit(invocation.exit_code(exc.exit_code))
    except KeyboardInterrupt:
        sys.exit(invocation.exit_code(130))
    except Exception as exc:  # an okfgit bug: fail closed, say so plainly
        if os.environ.get("OKFGIT_DEBUG"):
            raise
        click.echo(f"okfgit: internal error: {type(exc).__name__}: {exc} (set OKFGIT_DEBUG=1 for a traceback)", err=True)
        sys.exit(invocation.exit_code(EXIT_INTEGRITY))
    sys.exit(invocation.exit_code(result if isinstance(result, int) else EXIT_OK))

