"""format/log_md.py: one reader of a log, byte for byte, for the merge, the append and review."""

from __future__ import annotations

from okfgit.format import log_md

TRICKY = (b"# Project log\r\n\r\nIntro text.\r\n\r\n## 2026-01-07\r\nA paragraph first.\r\n\r\n- **Decision**: one day.\r\n"
          b"  Measured on staging.\r\n\r\n\r\n### Details\r\n- more\r\n## 2026-01-05\r\n- Started.")


def test_a_log_reads_back_to_its_own_bytes() -> None:
    log = log_md.read(TRICKY, "log.md")
    assert log_md.render(log) == TRICKY
    assert [g.date for g in log.groups] == ["2026-01-07", "2026-01-05"] and log.problems == []
    assert log.entries() == [("2026-01-07", "A paragraph first."),
                             ("2026-01-07", "- **Decision**: one day.\n  Measured on staging."),
                             ("2026-01-07", "### Details"), ("2026-01-07", "- more"), ("2026-01-05", "- Started.")]


def test_a_log_whose_structure_a_merge_cannot_trust_is_still_read_whole() -> None:
    data = b"# Log\n\n## 2026-01-05\n- a\n\n## Notes\n- n\n\n## 2026-01-05\n- b\n"
    log = log_md.read(data, "log.md")
    assert log_md.render(log) == data
    assert log.problems == ["log.md: a heading that is no date group ('## Notes')",
                            "log.md: the date group 2026-01-05 appears twice"]
    assert log_md.add_entry(data, "2026-01-05", "c", "# Log") == data.replace(b"- a\n", b"- c\n- a\n", 1)


def test_only_an_entry_changed_or_removed_is_a_rewrite() -> None:
    crlf = TRICKY.replace(b"\r\n", b"\n")
    assert log_md.rewritten(TRICKY, crlf) == []  # line endings are no words
    assert log_md.rewritten(TRICKY, log_md.add_entry(TRICKY, "2026-01-08", "Later.", "# Project log")) == []
    edited = TRICKY.replace(b"on staging", b"in production")
    assert log_md.rewritten(TRICKY, edited) == [("2026-01-07", "- **Decision**: one day.\n  Measured on staging.")]
    assert len(log_md.rewritten(TRICKY, None)) == 5


def test_an_entry_goes_under_the_heading_of_a_day_that_has_only_prose() -> None:
    data = b"# Log\n\n## 2026-01-05\n\nWe started.\n"
    # after the blank line it would be the paragraph's first line, and the paragraph its continuation
    assert log_md.add_entry(data, "2026-01-05", "An entry.", "# Log") == (
        b"# Log\n\n## 2026-01-05\n- An entry.\n\nWe started.\n")
