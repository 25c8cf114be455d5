"""OKF's trust and lifecycle families, read as OKF v0.2 §5 defines them (format/lifecycle.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from okfgit.format import concept as okf
from okfgit.format import lifecycle

UTC = dt.timezone.utc


def meta(text: str) -> dict:
    return okf.split(f"---\ntype: X\n{text}\n---\nBody.\n".encode(), "x.md").meta


@pytest.mark.parametrize("written, instant", [
    ("2026-09-23T00:00:00Z", dt.datetime(2026, 9, 23, tzinfo=UTC)),
    ("2026-09-23T01:00:00+02:00", dt.datetime(2026, 9, 22, 23, tzinfo=UTC)),
    ("2026-09-23 00:00:00+00:00", dt.datetime(2026, 9, 23, tzinfo=UTC)),
    ("'2026-09-23T00:00:01Z'", dt.datetime(2026, 9, 23, 0, 0, 1, tzinfo=UTC)),
    ("2026-09-23T00:00:00.5z", dt.datetime(2026, 9, 23, 0, 0, 0, 500000, tzinfo=UTC)),
    ("2026-09-23", dt.datetime(2026, 9, 23, tzinfo=UTC)),  # a plain date: midnight UTC
    ("2026-09-23T12:00:00", dt.datetime(2026, 9, 23, 12, tzinfo=UTC)),  # no offset: UTC
])
def test_stale_after_is_an_instant(written: str, instant: dt.datetime) -> None:
    life = lifecycle.lifecycle(meta(f"stale_after: {written}"))
    assert life.stale_after == instant and not life.stale_after_invalid
    assert life.is_stale(instant) and not life.is_stale(instant - dt.timedelta(seconds=1))  # now >= stale_after
    assert life.stale_label() == instant.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("written", ["soon", "5", "2026-13-45", "2026-09-23T25:00:00Z", "[2026-09-23]", "''"])
def test_unreadable_stale_after_is_flagged_and_never_stale(written: str) -> None:
    life = lifecycle.lifecycle(meta(f"stale_after: {written}"))
    assert life.stale_after is None and life.stale_after_invalid
    assert not life.is_stale(dt.datetime(2100, 1, 1, tzinfo=UTC))


def test_status_and_superseded_by() -> None:
    assert lifecycle.lifecycle({}).status == "stable"  # absent means stable (OKF 5.4)
    assert not lifecycle.lifecycle({}).deprecated
    old = lifecycle.lifecycle(meta("status: Deprecated\nsuperseded_by: decisions/new.md"))
    assert old.deprecated and old.status == "deprecated" and old.superseded_by == ("decisions/new.md",)
    assert lifecycle.lifecycle(meta("superseded_by: [a.md, '', b]")).superseded_by == ("a.md", "b")
    assert lifecycle.lifecycle(meta("status: retired")).status == "retired"
    assert lifecycle.lifecycle({"stale_after": None}).stale_after_written is None


@pytest.mark.parametrize("written, humans, tier", [
    ("", (), "unverified"),
    ("verified: { by: human:ahormati, at: 2026-06-25T09:00:00Z }", ("human:ahormati",), "human-reviewed"),
    ("verified:\n  - { by: human:ahormati, at: 2026-06-25T09:00:00Z }\n"
     "  - { by: process:finance-nightly, at: 2026-06-26T02:00:00Z }", ("human:ahormati",), "human-reviewed"),
    ("verified: [{by: Human:Alice}]", ("Human:Alice",), "human-reviewed"),  # the prefix, case-insensitively
    ("verified:\n  - by: '  HUMAN:bob '\n    at: 2026-06-25", ("HUMAN:bob",), "human-reviewed"),
    ("verified: {by: process:nightly, at: 2026-06-26T02:00:00Z}", (), "machine-confirmed"),
    ("verified: {by: reference_agent/gemini-2.5-pro, at: 2026-06-26T02:00:00Z}", (), "machine-confirmed"),
    ("verified: []", (), "unverified"),
])
def test_verified_in_every_shape_okf_defines(written: str, humans: tuple[str, ...], tier: str) -> None:
    trust = lifecycle.trust(meta(written) if written else {})
    assert trust.problem is None
    assert trust.humans == humans and trust.tier == tier
    assert trust.human_reviewed is bool(humans)


@pytest.mark.parametrize("written, problem", [
    ("verified: human:alice", "verified is text ('human:alice'); OKF §5.2 defines a list of {by, at} mappings, "
                              "or one such mapping"),
    ("verified: true", "verified is a boolean (True)"),
    ("verified: [human:alice]", "verified entry 1 is text ('human:alice'), not a {by, at} mapping"),
    ("verified: {at: 2026-06-25T09:00:00Z}", "verified has no actor (by) as text"),
    ("verified: [{by: process:x, at: 2026-06-25T09:00:00Z}, {by: 7}]", "verified entry 2 has no actor (by) as text"),
    ("verified: {by: process:x, at: yesterday}", "verified has at 'yesterday', which is not an ISO 8601 datetime"),
])
def test_any_other_verified_shape_fails_closed(written: str, problem: str) -> None:
    trust = lifecycle.trust(meta(written))
    assert trust.problem is not None and trust.problem.startswith(problem)
    assert trust.human_reviewed and trust.tier == "human-reviewed"  # review asks a person


def test_ref_candidates_try_the_tier_root_the_folder_and_each_folder_above() -> None:
    assert lifecycle.ref_candidates("decisions/new", "decisions/old.md") == [
        "decisions/decisions/new.md", "decisions/new.md"]
    assert lifecycle.ref_candidates("new.md", "kb/decisions/old.md") == ["kb/decisions/new.md", "new.md"]
    # A bundle-absolute path in a bundle adopted under retail/ names retail/decisions/new.md.
    assert lifecycle.ref_candidates("/decisions/new.md", "retail/decisions/old.md") == [
        "decisions/new.md", "retail/decisions/decisions/new.md", "retail/decisions/new.md"]
    assert lifecycle.ref_candidates("https://x/y", "a.md") == []
    assert lifecycle.ref_candidates("0f6c3c8e-0000-4000-8000-000000000000", "a.md") == [
        "0f6c3c8e-0000-4000-8000-000000000000.md"]
