from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import BUNDLES, FIXTURES, Result, Runner
from tests.test_local_store import damage_facts, forget_facts, kinds

BROKEN = {
    "kb-broken-dangling-link": {("profile", "dangling-link", "runbooks/db-failover.md", 20)},
    "kb-broken-missing-frontmatter": {("okf", "frontmatter-missing", "runbooks/deploys/rollback.md", 1)},
    "kb-broken-index-omission": {("profile", "index-omission", "decisions/index.md", None)},
    "kb-broken-duplicate-id": {
        ("profile", "duplicate-okf-id", "decisions/retry-policy.md", 9),
        ("profile", "duplicate-okf-id", "decisions/use-postgres.md", 9),
    },
}

CONCEPT = """---
type: Note
title: {title}
description: {description}
scope: project
okf_id: {okf_id}
okf_source: authored
---

# {title}

{body}
"""


def kb_repo(repo: Path, git: Runner, source: Path | None = None, files: dict[str, bytes | str] | None = None) -> Path:
    """Copy a fixture (and/or extra files) into the repo's .okf/ and commit it with git."""
    kb = repo / ".okf"
    if source is not None:
        shutil.copytree(source, kb)
    for path, data in (files or {}).items():
        target = kb / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)
    git("add", "-A", ".okf", cwd=repo)
    git("commit", "-q", "-m", "knowledge", cwd=repo)
    return kb


def concept(title: str, description: str, okf_id: str, body: str = "", **extra: str) -> str:
    text = CONCEPT.format(title=title, description=description, okf_id=okf_id, body=body)
    lines = "".join(f"{k}: {v}\n" for k, v in extra.items())
    return text.replace("okf_source: authored\n", "okf_source: authored\n" + lines, 1)


def doctor_json(okfgit: Runner, repo: Path, *args: str, expect: int | None = None) -> tuple[Result, dict]:
    result = okfgit("doctor", "--json", *args, cwd=repo, expect=expect)
    return result, json.loads(result.out)


def findings(report: dict, tier: str = "project") -> set[tuple[str, str, str, int | None]]:
    out = set()
    for entry in report["tiers"]:
        if entry["tier"] == tier:
            for group in ("okf", "profile"):
                out |= {(group, f["code"], f["file"], f["line"]) for f in entry[group]["findings"]}
    return out


def codes_by_file(report: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for _, code, file, _ in findings(report):
        out.setdefault(file, set()).add(code)
    return out


UID = "0c8cc26a-25a1-4d3c-adff-5ce9be766a4{}"


# -- the fixtures ----------------------------------------------------------------------


def test_clean_fixture_has_no_findings(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, FIXTURES / "kb-clean")
    result, report = doctor_json(okfgit, repo, "--scope", "project", expect=0)
    assert report["errors"] == 0 and report["warnings"] == 0
    tier = report["tiers"][0]
    assert tier["tier"] == "project" and tier["okf"]["conformant"] is True
    assert tier["commit"] == git("rev-parse", "HEAD", cwd=repo).out.strip()
    assert tier["concepts"] == 5
    text = okfgit("doctor", cwd=repo, expect=0).out
    assert "OKF v0.2 conformance: conformant" in text
    assert text.splitlines()[-1] == "0 errors, 0 warnings in 1 tier; OKF v0.2 conformant: 1 of 1"


@pytest.mark.parametrize("fixture", sorted(BROKEN))
def test_broken_fixture_names_its_one_defect(fixture: str, repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, FIXTURES / fixture)
    _, report = doctor_json(okfgit, repo, expect=2)
    assert findings(report) == BROKEN[fixture]
    assert report["errors"] == len(BROKEN[fixture])
    conformant = report["tiers"][0]["okf"]["conformant"]
    assert conformant is (fixture != "kb-broken-missing-frontmatter")
    text = okfgit("doctor", cwd=repo, expect=2).out
    for _, code, file, line in BROKEN[fixture]:
        assert f"    {file}{f':{line}' if line else ''}: error: {code}: " in text


def test_fixture_messages(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, FIXTURES / "kb-broken-dangling-link")
    out = okfgit("doctor", cwd=repo, expect=2).out
    assert ("    runbooks/db-failover.md:20: error: dangling-link: link to ../decisions/use-mysql.md: "
            "decisions/use-mysql.md does not exist in the tier\n") in out
    assert out.rstrip().splitlines()[-1] == "1 error, 0 warnings in 1 tier; OKF v0.2 conformant: 1 of 1"


# -- real bundles written by others ----------------------------------------------------


@pytest.mark.parametrize("bundle", ["ga4", "stackoverflow"])
def test_real_bundles_are_okf_conformant(bundle: str, repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, BUNDLES / bundle)
    result, report = doctor_json(okfgit, repo, expect=2)  # their profile findings are expected
    tier = report["tiers"][0]
    assert tier["okf"] == {"conformant": True, "findings": []}
    codes = {f["code"] for f in tier["profile"]["findings"]}
    assert "profile-keys-missing" in codes
    assert "okf_id" in next(f["message"] for f in tier["profile"]["findings"] if f["code"] == "profile-keys-missing")
    assert result.err == ""


def test_plain_okf_bundle_is_conformant_and_lacks_profile_keys(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, files={
        "index.md": "# Tables\n\n* [Orders](tables/orders.md) - One row per order.\n",
        "tables/orders.md": "---\ntype: BigQuery Table\n---\n\nOrders joined with [customers](/tables/customers.md).\n",
    })
    _, report = doctor_json(okfgit, repo, expect=2)
    tier = report["tiers"][0]
    assert tier["okf"] == {"conformant": True, "findings": []}
    assert report["warnings"] == 0  # the "* [T](p) - s" entry is OKF's own form
    by_file = codes_by_file(report)
    assert by_file["tables/orders.md"] == {"profile-keys-missing", "dangling-link"}
    assert "index.md" not in by_file
    assert by_file["tables/index.md"] == {"index-missing"}
    message = next(f["message"] for f in tier["profile"]["findings"] if f["code"] == "profile-keys-missing")
    assert message.startswith("missing okfgit profile keys: title, description, okf_id, scope, okf_source")


# -- bad input -----------------------------------------------------------------------


def test_bad_inputs_are_named_and_never_crash(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, FIXTURES / "kb-clean", files={
        "bad-yaml.md": "---\ntype: Note\ntitle: [unclosed\n---\nbody\n",
        "python-tag.md": "---\ntype: !!python/object/apply:os.system ['echo owned']\n---\nbody\n",
        "latin1.md": "---\ntype: Note\n---\ncaf\u00e9\n".encode("latin-1"),
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "bom-crlf.md": ("\ufeff" + concept("Bom Crlf", "A file with a BOM and CRLF line ends.", UID.format(1))
                        ).replace("\n", "\r\n").encode("utf-8"),
        "notes/diagram.png": b"\x89PNG\r\n\x1a\n\x00\x00",
    })
    os.symlink("/etc/passwd", kb / "escape.md")
    git("add", ".okf/escape.md", cwd=repo)
    git("commit", "-q", "-m", "symlink", cwd=repo)
    okfgit("index", "--scope", "project", cwd=repo, expect=0)  # index copes with all of it too
    result, report = doctor_json(okfgit, repo, expect=2)
    by_file = codes_by_file(report)
    assert by_file.pop("bad-yaml.md") == {"yaml-invalid"}
    assert by_file.pop("python-tag.md") == {"yaml-tag"}
    assert by_file.pop("latin1.md") == {"not-utf8"}
    assert by_file.pop("binary.md") == {"binary"}
    assert by_file.pop("escape.md") == {"symlink"}
    assert by_file == {}  # the BOM+CRLF concept and the PNG are fine
    assert report["tiers"][0]["okf"]["conformant"] is False
    assert result.err == ""
    text = okfgit("doctor", cwd=repo, expect=2).out
    assert ("    bad-yaml.md:3: error: yaml-invalid: frontmatter is not valid YAML: while parsing a flow sequence: "
            "did not find expected ',' or ']'\n") in text
    assert ("    python-tag.md:2: error: yaml-tag: frontmatter uses the YAML tag "
            "'tag:yaml.org,2002:python/object/apply:os.system', which okfgit refuses") in text
    assert "    latin1.md:4: error: not-utf8: is not UTF-8: byte 0xe9 at offset 22\n" in text
    assert "    binary.md: error: binary: is a binary file (contains NUL bytes), not UTF-8 markdown\n" in text
    assert "    escape.md: error: symlink: is a symlink; okfgit never follows links in a tier" in text
    assert "/etc/passwd" not in text


def test_worktree_sees_an_uncommitted_edit(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, FIXTURES / "kb-clean")
    page = kb / "overview.md"
    page.write_text(page.read_text().replace("type: Overview\n", ""))
    okfgit("doctor", cwd=repo, expect=0)
    _, report = doctor_json(okfgit, repo, "--worktree", expect=2)
    assert findings(report) == {("okf", "type-missing", "overview.md", 1)}
    assert report["tiers"][0]["worktree"] is True and report["tiers"][0]["commit"] is None
    assert "(working tree, 5 concepts)" in okfgit("doctor", "--worktree", cwd=repo, expect=2).out


# -- the rules, one by one -----------------------------------------------------------


def test_profile_findings(repo: Path, okfgit: Runner, git: Runner) -> None:
    big = "word " * 900
    kb_repo(repo, git, FIXTURES / "kb-clean", files={
        "extra/wrong-scope.md": concept("Wrong scope", "In the wrong tier.", UID.format(2)).replace(
            "scope: project", "scope: global"),
        "extra/bad-id.md": concept("Bad id", "An id that is no UUID.", "not-a-uuid"),
        "extra/bad-tags.md": concept("Bad tags", "Tags in the wrong case.", UID.format(3), tags="[Ops, on call, ok-tag]"),
        "extra/tag-map.md": concept("Tag map", "Tags as a mapping.", UID.format(0), tags="{a: b}"),
        "extra/two-sentences.md": concept("Two", "One sentence. And another one.", UID.format(4)),
        "extra/stale.md": concept("Stale", "Stale since last year.", UID.format(5), stale_after="2024-01-01"),
        "extra/big.md": concept("Big", "A very long concept.", UID.format(6), body=big),
        "extra/wiki.md": concept("Wiki", "Links by name.", UID.format(7), body="See [[retry-policy]] and [[nope]]."),
        "extra/draft.md": concept("Draft", "Needs merging.", UID.format(8), status="needs-merge"),
        "extra/wiki.needs-merge.md": concept("Wiki", "The agent's variant.", UID.format(7)),
        "extra/wiki.needs-merge-2.md": concept("Wiki", "Another variant.", UID.format(7)),
        "extra/index.md": "# Extra\n\n- [Wrong](wrong-scope.md) \u2014 Not what the concept says.\n"
                          "- [Gone](gone.md) \u2014 A concept that was deleted.\n",
    })
    _, report = doctor_json(okfgit, repo, expect=2)
    got = {(code, file) for _, code, file, _ in findings(report)}
    assert got == {
        ("scope-mismatch", "extra/wrong-scope.md"),
        ("index-entry-stale", "extra/index.md"),
        ("index-entry-dangling", "extra/index.md"),
        ("okf-id-malformed", "extra/bad-id.md"),
        ("tags-invalid", "extra/tag-map.md"),
        ("description-not-one-sentence", "extra/two-sentences.md"),
        ("stale", "extra/stale.md"),
        ("over-4kb", "extra/big.md"),
        ("dangling-wiki-link", "extra/wiki.md"),
        ("needs-merge", "extra/draft.md"),
        ("needs-merge", "extra/wiki.needs-merge.md"),
        ("needs-merge", "extra/wiki.needs-merge-2.md"),
        ("index-omission", "extra/index.md"),  # the ones the hand-made extra/index.md does not list
        ("orphan", "extra/index.md"),  # the root index has no entry for extra/
    }
    severities = {(f["code"], f["severity"]) for t in report["tiers"] for g in ("okf", "profile")
                  for f in t[g]["findings"]}
    assert {c for c, s in severities if s == "warning"} == {"description-not-one-sentence", "stale", "over-4kb"}
    messages = {f["message"] for f in report["tiers"][0]["profile"]["findings"]}
    assert "scope is 'global' but the file is in the project tier" in messages
    assert "[[nope]] matches no concept name or file name in the active tiers" in messages
    assert "tags must be a list of kebab-case words, not a mapping" in messages
    assert ("unresolved needs-merge sibling of extra/wiki.md: merge what matters into extra/wiki.md, then delete "
            "this file, or settle it in one commit: `okfgit proposal accept extra/wiki.needs-merge.md` takes its "
            "words, `okfgit proposal drop extra/wiki.needs-merge.md` drops them") in messages
    assert ("not reachable from the root index: index.md has no entry for extra/ (run `okfgit index`)"
            in messages)
    omitted = sorted(m for m in messages if m.startswith("does not list"))
    assert omitted == [f"does not list {n}.md (run `okfgit index`)"
                       for n in ("bad-id", "bad-tags", "big", "draft", "stale", "tag-map", "two-sentences", "wiki")]


def test_warnings_alone_exit_zero(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, FIXTURES / "kb-clean")
    page = kb / "decisions" / "retry-policy.md"
    page.write_text(page.read_text().replace("stale_after: '2027-06-30'", "stale_after: '2025-01-31'"))
    git("commit", "-q", "-am", "expire", cwd=repo)
    result, report = doctor_json(okfgit, repo, expect=0)
    assert findings(report) == {("profile", "stale", "decisions/retry-policy.md", 15)}
    assert (report["errors"], report["warnings"]) == (0, 1)
    text = okfgit("doctor", cwd=repo, expect=0).out
    assert text.splitlines()[-1] == "0 errors, 1 warning in 1 tier; OKF v0.2 conformant: 1 of 1"


def test_reserved_file_structure(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, FIXTURES / "kb-clean", files={
        "log.md": "# Log\n\n* undated entry\n\n## 2025-11-02\n* a\n\n## 2025-11-20\n* b\n\n## 2025-11-02\n* c\n\n"
                  "## 2025-02-30\n* d\n\n## Yesterday\n* e\n\n```\n## not a heading\n```\n",
        "decisions/index.md": "---\ntitle: Decisions\n---\n\n# Decisions\n\n- [Use PostgreSQL for the ledger](use-postgres.md) \u2014 "
                              "The invoice ledger lives in PostgreSQL because it needs multi-row transactions and "
                              "strict constraints.\n- [[retry-policy]]\n",
        "runbooks/deploys/index.md": "Deploys.\n\n- [Roll back a deploy](rollback.md) \u2014 How to return the "
                                     "billing service to its previous release in under ten minutes.\n",
    })
    _, report = doctor_json(okfgit, repo, expect=2)
    okf_group = {(code, file, line) for group, code, file, line in findings(report) if group == "okf"}
    assert okf_group == {
        ("log-entry-undated", "log.md", 3),
        ("log-order", "log.md", 8),
        ("log-date-duplicate", "log.md", 11),
        ("log-date-invalid", "log.md", 14),
        ("log-date-invalid", "log.md", 17),
        ("index-frontmatter", "decisions/index.md", 1),
        ("index-entry-not-link", "decisions/index.md", 8),
        ("index-no-heading", "runbooks/deploys/index.md", None),
    }
    profile = {(code, file) for group, code, file, _ in findings(report) if group == "profile"}
    assert profile == {("index-omission", "decisions/index.md")}


def test_root_index_may_declare_only_okf_version(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, FIXTURES / "kb-clean")
    root = kb / "index.md"
    root.write_text(root.read_text().replace('okf_version: "0.2"', 'okf_version: "0.2"\ntitle: Mine'))
    git("commit", "-q", "-am", "title", cwd=repo)
    _, report = doctor_json(okfgit, repo, expect=2)
    assert findings(report) == {("okf", "index-frontmatter", "index.md", 1)}


def test_links_of_every_kind_resolve(repo: Path, okfgit: Runner, git: Runner) -> None:
    body = ("[rel](../decisions/use-postgres.md) [abs](/runbooks/db-failover.md) [dir](../runbooks/) "
            "[anchor](#top) [web](https://example.com) [[rollback]] [[retry-policy]] `[[in code]]`\n\n"
            "```\n[fenced](missing.md)\n```\n\n[up](../../outside.md) [gone](/nowhere.md) [[nobody]]\n")
    kb_repo(repo, git, FIXTURES / "kb-clean", files={"decisions/links.md": concept("Links", "Links.", UID.format(9),
                                                                                   body=body)})
    _, report = doctor_json(okfgit, repo, expect=2)
    got = {(code, line) for _, code, file, line in findings(report) if file == "decisions/links.md"}
    assert got == {("link-outside-kb", 18), ("dangling-link", 18), ("dangling-wiki-link", 18)}


def test_duplicates_across_tiers_are_precedence_and_wiki_links_span_tiers(
        repo: Path, okfgit: Runner, git: Runner, home: Path) -> None:
    kb_repo(repo, git, FIXTURES / "kb-clean", files={
        "shared.md": concept("Shared", "Uses a global concept.", UID.format(1), body="See [[global-only]]."),
    })
    okfgit("index", "--scope", "project", cwd=repo)
    _, report = doctor_json(okfgit, repo, expect=2)
    assert {(c, f) for _, c, f, _ in findings(report)} == {("dangling-wiki-link", "shared.md")}
    okfgit("new", "global-only", "--scope", "global", "--description", "Only here.", "--no-edit", cwd=repo)
    gdir = home / ".local" / "share" / "okf"
    # The same okf_id in the global tier: the project's copy overrides it, no duplicate.
    (gdir / "shared.md").write_text(concept("Shared", "The global original.", UID.format(1)).replace(
        "scope: project", "scope: global"))
    git("add", "shared.md", cwd=gdir)
    git("commit", "-q", "-m", "shared", cwd=gdir)
    okfgit("index", "--scope", "global", cwd=repo)
    _, report = doctor_json(okfgit, repo, expect=0)
    assert [t["tier"] for t in report["tiers"]] == ["project", "global"]
    assert report["errors"] == 0
    _, report = doctor_json(okfgit, repo, "--scope", "project", expect=0)
    assert [t["tier"] for t in report["tiers"]] == ["project"]


def test_missing_tiers_are_skipped_with_a_note(repo: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    result, report = doctor_json(okfgit, repo, expect=0)
    assert report["tiers"] == []
    assert any(s.startswith("project tier skipped: no knowledge base at HEAD") for s in report["skipped"])
    assert any(s.startswith("global tier skipped: it does not exist yet") for s in report["skipped"])
    text = okfgit("doctor", cwd=repo, expect=0).out
    assert "note: global tier skipped: it does not exist yet at " in text
    outside = tmp_path / "plain"
    outside.mkdir()
    text = okfgit("doctor", cwd=outside, expect=0).out
    assert "note: project tier skipped: not inside a git repository (pass --repo)" in text
    assert "needs a git repository" in okfgit("doctor", "--scope", "project", cwd=outside, expect=2).err


def test_a_kb_without_concepts_needs_no_index(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, files={"attachments/diagram.png": b"\x89PNG\r\n\x1a\n\x00"})
    _, report = doctor_json(okfgit, repo, expect=0)
    assert report["tiers"][0]["concepts"] == 0 and report["errors"] == 0


def test_json_shape(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, FIXTURES / "kb-broken-dangling-link")
    _, report = doctor_json(okfgit, repo, expect=2)
    assert set(report) == {"tiers", "skipped", "errors", "warnings"}
    tier = report["tiers"][0]
    assert set(tier) >= {"tier", "commit", "okf", "profile"}
    assert set(tier["okf"]) == {"conformant", "findings"}
    assert tier["profile"]["findings"][0] == {
        "code": "dangling-link", "severity": "error", "file": "runbooks/db-failover.md", "line": 20,
        "message": "link to ../decisions/use-mysql.md: decisions/use-mysql.md does not exist in the tier",
    }



def test_worktree_reports_a_symlinked_folder_without_following_it(project: Path, okfgit: Runner, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntype: Note\n---\nnot ours\n")
    (project / ".okf" / "linked").symlink_to(outside, target_is_directory=True)
    result = okfgit("doctor", "--scope", "project", "--worktree", cwd=project, expect=2)
    assert "linked" in result.out
    assert "secret.md" not in result.out


def test_worktree_never_opens_a_fifo(project: Path, okfgit: Runner) -> None:
    os.mkfifo(project / ".okf" / "pipe.md")
    result = okfgit("doctor", "--scope", "project", "--worktree", cwd=project)  # would hang reading it
    assert "pipe.md" not in result.out


def test_lifecycle_and_trust_families_as_okf_defines_them(repo: Path, okfgit: Runner, git: Runner) -> None:
    # The clock is pinned at 2025-11-30T00:00:00Z (tests/conftest.py).
    files = {
        "life/past-instant.md": concept("Past", "Stale at an instant.", UID.format(1),
                                        stale_after="2025-11-29T23:59:59+00:00"),
        "life/at-now.md": concept("Now", "Stale at this very instant.", UID.format(2),
                                  stale_after="2025-11-30T01:00:00+01:00"),
        "life/future.md": concept("Future", "Fresh for one more second.", UID.format(3),
                                  stale_after="2025-11-30T00:00:01Z"),
        "life/plain-date.md": concept("Day", "A plain date, midnight UTC.", UID.format(4), stale_after="2025-11-30"),
        "life/bad-date.md": concept("Bad", "Not a date.", UID.format(5), stale_after="soon"),
        "life/scalar.md": concept("Scalar", "A verified scalar.", UID.format(6), verified="human:alice"),
        "life/bare.md": concept("Bare", "A bare mapping.", UID.format(7), verified="{by: Human:Alice}"),
        "life/old.md": concept("Old", "Replaced.", UID.format(8), status="deprecated",
                               superseded_by="life/bare.md"),
        "life/lost.md": concept("Lost", "Replaced by nothing.", UID.format(9), status="deprecated",
                                superseded_by="/life/nowhere.md"),
    }
    kb_repo(repo, git, FIXTURES / "kb-clean", files=files)
    okfgit("index", "--scope", "project", cwd=repo)
    _, report = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    got = {(code, file) for _, code, file, _ in findings(report)}
    assert got == {
        ("stale", "life/past-instant.md"), ("stale", "life/at-now.md"), ("stale", "life/plain-date.md"),
        ("stale-after-invalid", "life/bad-date.md"),
        ("verified-invalid", "life/scalar.md"),
        ("superseded-by-dangling", "life/lost.md"),
    }
    messages = {f["file"]: f for f in report["tiers"][0]["profile"]["findings"]}
    assert messages["life/past-instant.md"]["message"].startswith("stale since 2025-11-29T23:59:59Z (stale_after)")
    assert messages["life/scalar.md"]["severity"] == "error"
    assert messages["life/scalar.md"]["message"].startswith("verified is text ('human:alice'); OKF §5.2 defines")
    assert messages["life/lost.md"]["severity"] == "warning"


def test_the_cache_never_hides_a_finding(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb = kb_repo(repo, git, FIXTURES / "kb-clean")
    doctor_json(okfgit, repo, "--scope", "project", expect=0)
    assert ("doctor", "project") in kinds(repo / ".git")
    # One concept changed, and the target of a link in an unchanged concept moved away.
    policy = kb / "decisions" / "retry-policy.md"
    policy.write_text(policy.read_text().replace("type:", "kind:", 1))
    git("mv", ".okf/decisions/use-postgres.md", ".okf/decisions/postgres.md", cwd=repo)
    git("commit", "-q", "-am", "edit and move", cwd=repo)
    _, warm = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    found = findings(warm)
    assert any(f[:3] == ("okf", "type-missing", "decisions/retry-policy.md") for f in found)
    assert ("profile", "dangling-link", "runbooks/db-failover.md", 20) in found
    # The same report from a cold store, and from a damaged one.
    forget_facts(repo / ".git", "doctor")
    _, cold = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    assert cold == warm
    damage_facts(repo / ".git", "doctor")
    _, damaged = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    assert damaged == warm


def test_the_errors_doctor_found_at_these_trees_are_one_lookup_away(repo: Path, okfgit: Runner, git: Runner,
                                                                   env: dict[str, str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``sync`` and ``status`` ask without running the checks again: the errors of the
    last check of exactly these trees, from the tier's store (checks.errors_at_head)."""
    import datetime as dt

    from okfgit.context import Context
    from okfgit.knowledge import checks
    from okfgit.knowledge.tiers import open_workspace
    from okfgit.local.store import Stores

    kb = kb_repo(repo, git, FIXTURES / "kb-clean")
    policy = kb / "decisions" / "retry-policy.md"
    policy.write_text(policy.read_text().replace("type:", "kind:", 1))
    git("commit", "-q", "-am", "a concept loses its type", cwd=repo)
    ctx = Context(env, repo)
    ws = open_workspace(ctx, repo)
    today = dt.date(2026, 1, 1)
    ran: list[object] = []
    real = checks.check_tiers
    monkeypatch.setattr(checks, "check_tiers", lambda *a, **k: ran.append(a) or real(*a, **k))

    def errors() -> set[tuple[str, str, int | None, str]]:
        stores = Stores()
        found = checks.errors_at_head(ws, [ws.tier("project")], today, stores)
        stores.save()
        return {(f.code, f.file, f.line, f.message) for f in found["project"]}

    first = errors()
    assert ("type-missing", "decisions/retry-policy.md") in {(code, file) for code, file, _, _ in first}
    assert len(ran) == 1
    assert errors() == first and len(ran) == 1  # the same trees: one lookup
    _, report = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    assert first == {(f["code"], f["file"], f["line"], f["message"]) for group in ("okf", "profile")
                     for f in report["tiers"][0][group]["findings"] if f["severity"] == "error"}
    policy.write_text(policy.read_text().replace("kind:", "type:", 1))
    git("commit", "-q", "-am", "its type back", cwd=repo)
    assert errors() == set() and len(ran) == 1  # another tree: brought forward (the test below)


def test_errors_brought_forward_from_the_last_check_equal_doctors(repo: Path, okfgit: Runner, git: Runner,
                                                                 env: dict[str, str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """After a change to one tier, its errors are those recorded at the tree before, with the
    files the change reaches checked again (checks.errors_at_head): after each kind of change
    they equal what doctor finds reading every file of the tree afresh (``--worktree``, no
    store), one change after another, and the whole check runs only where reachability needs
    it (a folder with no index). Then the facts the store was brought forward to serve doctor
    the same report."""
    import datetime as dt

    from okfgit.context import Context
    from okfgit.knowledge import checks
    from okfgit.knowledge.tiers import open_workspace
    from okfgit.local.store import Stores

    kb = kb_repo(repo, git, FIXTURES / "kb-clean")
    ws = open_workspace(Context(env, repo), repo)
    doctor_json(okfgit, repo, "--scope", "project", expect=0)
    ran: list[object] = []
    real = checks.check_tiers
    monkeypatch.setattr(checks, "check_tiers", lambda *a, **k: ran.append(a) or real(*a, **k))

    def errors() -> set[tuple[str, str, int | None, str]]:
        stores = Stores()
        found = checks.errors_at_head(ws, [ws.tier("project")], dt.date(2026, 1, 1), stores)
        stores.save()
        return {(f.code, f.file, f.line, f.message) for f in found["project"]}

    def fresh() -> set[tuple[str, str, int | None, str]]:
        _, report = doctor_json(okfgit, repo, "--scope", "project", "--worktree")
        return {(f["code"], f["file"], f["line"], f["message"]) for group in ("okf", "profile")
                for f in report["tiers"][0][group]["findings"] if f["severity"] == "error"}

    def edit(path: str, old: str, new: str) -> None:
        file = kb / path
        assert old in file.read_text()
        file.write_text(file.read_text().replace(old, new, 1))

    postgres_id = "7f5e0002-790f-4c15-bc49-f8a9660e3c1b"
    steps = [
        ("a concept added, no index entry", lambda: (kb / "decisions" / "cache.md").write_text(
            concept("Cache invoices", "Invoices are cached for a day.", UID.format(1), "See [[ledger]]."))),
        ("an index edit lists it", lambda: edit("decisions/index.md", "- [Use", "- [Cache invoices](cache.md) "
                                                "\u2014 Invoices are cached for a day.\n- [Use")),
        ("a broken link", lambda: edit("runbooks/db-failover.md", "# Database failover",
                                       "# Database failover\n\nSee [the plan](plan.md).")),
        ("a duplicated id", lambda: edit("decisions/cache.md", UID.format(1), postgres_id)),
        ("a name change", lambda: edit("decisions/retry-policy.md", "name: retry-policy", "name: retries")),
        ("a name that answers a [[name]] link", lambda: edit("overview.md", "okf_source: authored",
                                                             "okf_source: authored\nname: ledger")),
        ("a title change", lambda: edit("decisions/use-postgres.md", "title: Use PostgreSQL for the ledger",
                                        "title: PostgreSQL for the ledger")),
        ("a delete", lambda: (kb / "decisions" / "use-postgres.md").unlink()),
        ("a rename", lambda: (kb / "runbooks" / "db-failover.md").rename(kb / "runbooks" / "failover.md")),
        ("the index regenerated", lambda: okfgit("index", cwd=repo)),
        ("a link repaired", lambda: edit("runbooks/failover.md", "[the plan](plan.md)", "[the overview](../overview.md)")),
    ]
    for what, change in steps:
        change()
        git("add", "-A", ".okf", cwd=repo)
        git("commit", "-q", "--allow-empty", "-m", what, cwd=repo)
        assert errors() == fresh(), what
        assert ran == [], what  # brought forward, not checked whole
    # A concept in a folder with no index: an index-missing finding reaches past the change.
    (kb / "notes").mkdir()
    (kb / "notes" / "loose.md").write_text(concept("Loose", "Nowhere listed.", UID.format(2)))
    git("add", "-A", ".okf", cwd=repo)
    git("commit", "-q", "-m", "a folder with no index", cwd=repo)
    assert errors() == fresh() != set()
    assert len(ran) == 1
    _, warm = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    _, cold = doctor_json(okfgit, repo, "--scope", "project", "--worktree", expect=2)
    assert warm["tiers"][0]["okf"] == cold["tiers"][0]["okf"]
    assert warm["tiers"][0]["profile"] == cold["tiers"][0]["profile"]


def test_the_cache_never_hides_an_index_finding(repo: Path, okfgit: Runner, git: Runner) -> None:
    """Index pages are cached by blob OID too: what an index says about other files (a title
    that changed, a folder that appeared, a log that broke) is found again with every page warm."""
    kb = kb_repo(repo, git, FIXTURES / "kb-clean")
    doctor_json(okfgit, repo, "--scope", "project", expect=0)
    # A concept's title changed (its entry in an unchanged index is now stale); a folder
    # with a concept and its own index appeared, unlinked from the root index; the runbooks
    # index lost its heading; the log got an entry above its first date.
    policy = kb / "decisions" / "retry-policy.md"
    policy.write_text(policy.read_text().replace("title: Retry failed charges with backoff",
                                                 "title: Retry failed charges later", 1))
    (kb / "new").mkdir()
    (kb / "new" / "fresh.md").write_text(concept("Fresh", "A fresh concept.", UID.format(9)))
    (kb / "new" / "index.md").write_text("# New\n\n- [Fresh](fresh.md) \u2014 A fresh concept.\n")
    runbooks = kb / "runbooks" / "index.md"
    runbooks.write_text(runbooks.read_text().replace("# ", "", 1))
    log = kb / "log.md"
    log.write_text("- an undated entry\n" + log.read_text())
    git("add", "-A", ".okf", cwd=repo)
    git("commit", "-q", "-m", "edit", cwd=repo)
    _, warm = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    found = {f[:3] for f in findings(warm)}
    assert ("profile", "index-entry-stale", "decisions/index.md") in found
    assert ("profile", "orphan", "new/index.md") in found
    assert ("okf", "index-no-heading", "runbooks/index.md") in found
    assert ("okf", "log-entry-undated", "log.md") in found
    # An index edited alone: its entry for a concept gone, so the concept is not listed.
    decisions = kb / "decisions" / "index.md"
    decisions.write_text("\n".join(line for line in decisions.read_text().split("\n") if "use-postgres" not in line))
    git("commit", "-q", "-am", "drop an entry", cwd=repo)
    _, dropped = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    assert ("profile", "index-omission", "decisions/index.md") in {f[:3] for f in findings(dropped)}
    # A folder without an index: nothing cached can say it is missing.
    (kb / "more").mkdir()
    (kb / "more" / "other.md").write_text(concept("Other", "Another concept.", UID.format(8)))
    git("add", "-A", ".okf", cwd=repo)
    git("commit", "-q", "-m", "add a folder", cwd=repo)
    _, added = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    assert ("profile", "index-missing", "more/index.md") in {f[:3] for f in findings(added)}
    forget_facts(repo / ".git", "doctor")
    _, cold = doctor_json(okfgit, repo, "--scope", "project", expect=2)
    assert cold == added


def test_a_full_read_takes_the_snapshots_listing_and_no_other(repo: Path, git: Runner) -> None:
    """A cold cache is built from the snapshot's own listing (the tree is not listed twice);
    any other listing the catalog asks for (an older tree's, to diff) is still git's."""
    from okfgit.git.repository import Repo
    from okfgit.knowledge import checks

    kb_repo(repo, git, FIXTURES / "kb-clean")
    old = git("rev-parse", "HEAD", cwd=repo).out.strip()
    kb_repo(repo, git, files={"extra/new.md": concept("New", "A new concept.", UID.format(6))})
    new = git("rev-parse", "HEAD", cwd=repo).out.strip()
    plain = Repo.open(repo)
    listed = plain.tree_entries(new, ".okf")
    reader = checks._Listed(plain, new, ".okf", listed)
    assert reader.tree_entries(new, ".okf") is listed
    assert list(reader.blobs(new, ".okf")) == sorted(listed.items()) == list(plain.blobs(new, ".okf"))
    assert reader.tree_entries(old, ".okf") == plain.tree_entries(old, ".okf") != listed
    assert reader.tree_entries(new, "") == plain.tree_entries(new, "")
    assert reader.read_blob(listed["extra/new.md"].oid) == (repo / ".okf" / "extra" / "new.md").read_bytes()


def test_a_warm_report_equals_a_cold_one(repo: Path, okfgit: Runner, git: Runner) -> None:
    kb_repo(repo, git, FIXTURES / "kb-clean", files={
        "extra/stale.md": concept("Stale", "Stale since last year.", UID.format(5), stale_after="2024-01-01"),
        "extra/wiki.md": concept("Wiki", "Links by name.", UID.format(7), body="See [[retry-policy]] and [[nope]]."),
        "extra/dup.md": concept("Dup", "Same id.", UID.format(7), superseded_by="nowhere.md"),
        "extra/bad.md": "---\ntype: [unclosed\n---\nbody\n",
        "extra/index.md": "# Extra\n\n- [Stale](stale.md) \u2014 Old words.\n",
    })
    _, cold = doctor_json(okfgit, repo, expect=2)
    _, warm = doctor_json(okfgit, repo, expect=2)
    assert warm == cold and cold["errors"] and cold["warnings"]


def test_path_valued_fields_must_name_a_file_of_the_tier(repo: Path, okfgit: Runner, git: Runner) -> None:
    """OKF 6.2: resource, sources[].resource, computation, executor.resource, attester.resource
    are bundle-absolute, relative to the concept's folder, or (a source, OKF 5.1) relative to
    the bundle root; URLs and scope descriptors are no paths."""
    fields = ("sources:\n  - id: a\n    resource: policies/p.md\n  - id: b\n    resource: /policies/p.md\n"
              "  - id: c\n    resource: ../policies/p.md\n  - id: d\n    resource: https://example.com/x\n"
              "  - id: e\n    resource: all queries in project acme\n  - id: f\n    resource: policies/gone.md\n"
              "executor:\n  resource: skills/run.md\nattester:\n  resource: attesters/check.py\n"
              "computation: ../computations/c.md\nresource: acme.sales.orders")
    files = {
        "policies/p.md": concept("P", "A policy.", UID.format(1)),
        "attesters/check.py": "print('ok')\n",
        "metrics/m.md": concept("M", "A metric.", UID.format(2)).replace("okf_source: authored\n",
                                                                          "okf_source: authored\n" + fields + "\n"),
    }
    kb_repo(repo, git, FIXTURES / "kb-clean", files=files)
    okfgit("index", "--scope", "project", cwd=repo)
    _, report = doctor_json(okfgit, repo, "--scope", "project")
    dangling = sorted((f["line"], f["message"]) for t in report["tiers"] for f in t["profile"]["findings"]
                      if f["code"] == "resource-dangling")
    text = (repo / ".okf" / "metrics" / "m.md").read_text().splitlines()
    assert [m.split(" names")[0] for _, m in dangling] == [
        "sources[5].resource policies/gone.md", "executor.resource skills/run.md",
        "computation ../computations/c.md"]
    assert [text[line - 1].strip() for line, _ in dangling] == [
        "resource: policies/gone.md", "resource: skills/run.md", "computation: ../computations/c.md"]
    assert all(f["severity"] == "warning" for t in report["tiers"] for f in t["profile"]["findings"]
               if f["code"] == "resource-dangling")
