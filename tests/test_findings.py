"""The one finding record that doctor, review and the okf-harvest check report."""

from __future__ import annotations

import json

from okfgit.format.findings import ERROR, WARNING, Finding


def test_json_is_one_shape_with_the_line_null_when_there_is_none() -> None:
    with_line = Finding("dangling-link", ERROR, "guides/cache.md", "link to x.md: x.md does not exist", 14, "profile")
    assert with_line.to_json() == {"code": "dangling-link", "severity": "error", "file": "guides/cache.md",
                                   "line": 14, "message": "link to x.md: x.md does not exist"}
    without = Finding("harvest-block", WARNING, "--pr-body", "has no okf-harvest block")
    assert without.to_json() == {"code": "harvest-block", "severity": "warning", "file": "--pr-body", "line": None,
                                 "message": "has no okf-harvest block"}
    assert list(with_line.to_json()) == list(without.to_json())  # the group is doctor's structure, not a key
    assert json.loads(json.dumps(with_line.to_json())) == with_line.to_json()


def test_text_and_where() -> None:
    f = Finding("stale", WARNING, "notes/a.md", "went stale at 2026-01-01T00:00:00Z", 3)
    assert f.where() == "notes/a.md:3"
    assert f.text() == "notes/a.md:3: warning: stale: went stale at 2026-01-01T00:00:00Z"
    assert Finding("index-missing", ERROR, "sub/index.md", "folder sub/ has no index.md").where() == "sub/index.md"


def test_sorted_by_file_line_code_message() -> None:
    a = Finding("b-code", ERROR, "a.md", "m", None)
    b = Finding("a-code", ERROR, "a.md", "m", 2)
    c = Finding("a-code", WARNING, "b.md", "m", 1)
    assert sorted([c, b, a], key=Finding.sort_key) == [a, b, c]


def test_with_severity_keeps_everything_else() -> None:
    f = Finding("human-reviewed-changed", "needs-human", "a.md", "changes it", 4, "")
    approved = f.with_severity("approved", "changes it (approved by human:alice)")
    assert approved == Finding("human-reviewed-changed", "approved", "a.md", "changes it (approved by human:alice)", 4)
    assert f.with_severity(WARNING).message == "changes it"
    assert f.severity == "needs-human"  # frozen: a new record, the old one unchanged
