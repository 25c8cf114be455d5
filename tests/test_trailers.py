from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okfgit.errors import IntegrityError
from okfgit.format.trailers import format_message, parse_trailers, values
from tests.conftest import examples


def git_parse(message: str) -> list[tuple[str, str]]:
    out = subprocess.run(["git", "interpret-trailers", "--parse"], input=message.encode(), capture_output=True,
                         check=True).stdout.decode()
    return [tuple(line.split(": ", 1)) for line in out.splitlines()]  # type: ignore[misc]


def test_format_and_parse_round_trip_with_repeated_keys() -> None:
    message = format_message("okf: capture 2 facts", [
        ("Okf-Operation", "capture"), ("Okf-Source", "claude-memory"),
        ("Okf-Captured", "id-1 a.md 0123"), ("Okf-Captured", "id-2 b.md 4567"),
    ], body="Two facts from Claude Code memory.")
    assert message.endswith("Okf-Captured: id-2 b.md 4567\n")
    ours = parse_trailers(message)
    assert ours == git_parse(message)
    assert values(ours, "okf-captured") == ["id-1 a.md 0123", "id-2 b.md 4567"]


@pytest.mark.parametrize("message", [
    "subject\n\nKey: v\n  folded more\nOther: x\n",
    "subject\r\n\r\nKey: v\r\nOther: x\r\n",
    "Key: only a subject\n",
    "subject\n\nbody line\nKey: mixed\n",
    "subject\n\nKey:   spaced   \n\n\n",
    "subject\n\n# comment\nKey: v\n",
])
def test_parser_agrees_with_git(message: str) -> None:
    assert parse_trailers(message) == git_parse(message)


def test_format_refuses_multiline_values_and_bad_keys() -> None:
    with pytest.raises(IntegrityError):
        format_message("s", [("Okf-Id", "a\nb")])
    with pytest.raises(IntegrityError):
        format_message("s", [("Okf Id", "a")])
    with pytest.raises(IntegrityError):
        format_message("s", [("Okf-Id", "a\rb")])


_key = st.from_regex(r"\AOkf-[A-Z][a-z]{1,8}\Z", fullmatch=True)
_value = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=30)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(_key, _value), min_size=1, max_size=6), st.text(alphabet="abc \n", max_size=40))
def test_any_formatted_message_parses_like_git(trailers: list[tuple[str, str]], body: str) -> None:
    message = format_message("okf: subject", trailers, body)
    assert parse_trailers(message) == git_parse(message) == [(k, v.strip()) for k, v in trailers]
