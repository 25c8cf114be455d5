"""The CLI contract: every verb and flag is documented in spec/okf-cli.md and the README,
every verb has help, and errors map to the documented exit codes."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from okfgit.cli import COMMANDS, cli
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parent.parent
SPEC = (ROOT / "spec" / "okf-cli.md").read_text()
README = (ROOT / "README.md").read_text()


def leaves() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, name: str) -> None:
        if isinstance(cmd, click.Group):
            for sub in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, sub), f"{name} {sub}")  # type: ignore[arg-type]
        else:
            out.append((name, cmd))

    for verb in sorted(COMMANDS):
        command = cli.get_command(ctx, verb)
        assert command is not None, f"{verb} is registered but its module is missing"
        walk(command, verb)
    return out


def section(name: str) -> str:
    match = re.search(rf"^### okfgit {re.escape(name)}\n(.*?)(?=^### |^## |\Z)", SPEC, re.M | re.S)
    assert match, f"spec/okf-cli.md has no section '### okfgit {name}'"
    return match.group(1)


@pytest.mark.parametrize("name, command", leaves(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_flag_is_in_the_spec(name: str, command: click.Command) -> None:
    text = section(name)
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in param.opts + param.secondary_opts:
                if opt.startswith("--") and opt != "--help":
                    assert opt in text, f"{opt} of okfgit {name} is not documented in spec/okf-cli.md"


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_every_verb_is_in_the_readme_and_has_help(verb: str) -> None:
    assert f"`{verb}" in README or f", `{verb}" in README, f"README does not mention {verb}"
    result = CliRunner().invoke(cli, [verb, "--help"])
    assert result.exit_code == 0, result.output
    assert len(result.output.split("\n\n")[1].strip()) > 20, f"okfgit {verb} --help explains nothing"


def test_usage_errors_exit_2_and_name_the_problem(repo: Path, okfgit: Runner) -> None:
    assert okfgit("nope", cwd=repo, expect=2).err.startswith("Usage:")
    assert "invalid value for '--scope'" in okfgit("doctor", "--scope", "nope", cwd=repo, expect=2).err.lower()
    result = okfgit("cat", "missing-thing", cwd=repo, expect=2)
    assert result.err.startswith("okfgit: error: ")


def test_version(repo: Path, okfgit: Runner) -> None:
    assert okfgit("--version", cwd=repo).out.strip() == "okfgit, version 0.1.0"


def test_no_count_is_printed_with_a_plural_left_to_the_reader() -> None:
    """'1 concepts' and 'concept(s)': every counted noun goes through ``format.words.plural``."""
    hedged = re.compile(r"\} [\w -]*\w\(s\)")  # f"{n} file(s)"
    offenders = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "okfgit").rglob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1) if hedged.search(line)]
    assert offenders == []


def test_one_concept_is_one_concept(project: Path, okfgit: Runner) -> None:
    okfgit("new", "cache", "--type", "Note", "--description", "Cached a day.", "--no-edit", cwd=project)
    doctor = okfgit("doctor", "--scope", "project", cwd=project).out
    assert f"project tier: {project / '.okf'} (HEAD " in doctor and ", 1 concept)\n" in doctor
    assert doctor.endswith("0 errors, 0 warnings in 1 tier; OKF v0.2 conformant: 1 of 1\n")


@pytest.mark.parametrize("args, typo, meant", [(["serch", "x"], "serch", "search"), (["stauts"], "stauts", "status"),
                                               (["hooks", "instal"], "instal", "install"),
                                               (["run", "strat", "r"], "strat", "start")])
def test_a_mistyped_verb_gets_did_you_mean(args: list[str], typo: str, meant: str, repo: Path,
                                          okfgit: Runner) -> None:
    result = okfgit(*args, cwd=repo, expect=2)
    assert f"No such command {typo!r}. Did you mean {meant!r}?" in result.err
    assert "Did you mean" not in okfgit("xyzzy", cwd=repo, expect=2).err
