"""Conformance to OKF v0.2, tested against the standard's own bundles (fixtures/okf-bundles).

Each bundle is adopted into a subfolder of the project tier, then: doctor finds no error and
no warning for anything the spec allows, ``index --check`` is clean, every link that resolved
in the source resolves in the tier, and every body byte outside the re-rooted links and every
frontmatter key and value is unchanged.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.format import markdown as links
from tests.conftest import BUNDLES, EPOCH, Runner, fsck

NAMES = sorted(p.name for p in BUNDLES.iterdir() if p.is_dir())
NOW = dt.datetime.fromtimestamp(int(EPOCH), dt.timezone.utc)
# Warnings doctor may give a bundle the spec allows: each one names what the bundle itself
# says or what the spec recommends, never a form the spec defines.
ADVISORY = {
    "stale",  # the concept's own stale_after has passed (OKF 5.5)
    "description-not-one-sentence",  # OKF 4.1: "A single sentence summarizing the concept"
    "over-4kb",  # advice for projection: Claude Code's recall shows only a memory file's first 4 KB
    "resource-dangling",  # OKF 6.2: a path-valued field naming a file the bundle itself lacks (tolerated)
}


def blob(repo: Path, path: str, env: dict[str, str]) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", f"HEAD:{path}"], cwd=repo, env=env, capture_output=True,
                          check=True).stdout


def unrooted(data: bytes, name: str) -> bytes:
    """``data`` with adopt's re-rooting undone, spelled out independently of okfgit's code:
    body links, and the path-valued frontmatter fields (``resource: retail/x.md``)."""
    data = data.replace(f"](/{name}/".encode(), b"](/").replace(f"]: /{name}/".encode(), b"]: /")
    return re.sub(rb"((?:resource|computation): (?:/)?)" + re.escape(name.encode()) + rb"/", rb"\1", data)


def test_the_bundles_and_their_licence_are_here() -> None:
    assert {"ga4", "stackoverflow", "ml_experiment_trail", "antigravity", "okfgit_retail"} <= set(NAMES)
    assert "Apache License" in (BUNDLES / "LICENSE.md").read_text()
    assert all(name in (BUNDLES / "README.md").read_text() for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_adopting_a_real_bundle_keeps_it_whole_and_conformant(name: str, project: Path, okfgit: Runner,
                                                             git: Runner, env: dict[str, str],
                                                             tmp_path: Path) -> None:
    source = tmp_path / "src" / name
    shutil.copytree(BUNDLES / name, source)
    originals = {p.relative_to(source).as_posix(): p.read_bytes() for p in sorted(source.rglob("*")) if p.is_file()}

    adopted = json.loads(okfgit("adopt", str(source), "--dir", name, "--json", cwd=project).out)

    report = json.loads(okfgit("doctor", "--scope", "project", "--json", cwd=project, expect=None).out)
    findings = [f for t in report["tiers"] for g in ("okf", "profile") for f in t[g]["findings"]]
    # The only errors are links the source itself left dangling (OKF 6.1 tolerates them), each
    # one reported by adopt as the source's: adopt introduced none.
    errors = sorted((f["file"], f["line"]) for f in findings if f["severity"] == "error"
                    or f["code"] == "resource-dangling")
    assert errors == sorted((r["file"], r["line"]) for r in adopted["unresolved_in_source"]), findings
    assert {f["code"] for f in findings if f["severity"] == "error"} <= {"dangling-link"}, findings
    assert {f["code"] for f in findings if f["severity"] == "warning"} <= ADVISORY, findings
    stale = sorted(f"{name}/{rel}" for rel, data in originals.items() if okf.is_concept_path(rel)
                   and lifecycle.lifecycle(okf.split(data, rel).meta).is_stale(NOW))
    assert sorted(f["file"] for f in findings if f["code"] == "stale") == stale
    assert "every index is up to date" in okfgit("index", "--check", "--scope", "project", cwd=project).out

    tier = set(git("ls-tree", "-r", "--name-only", "HEAD", cwd=project).out.split())
    tier = {p.removeprefix(".okf/") for p in tier if p.startswith(".okf/")}
    rewrites = 0
    for rel, data in originals.items():
        after = blob(project, f".okf/{name}/{rel}", env)
        if not rel.endswith(".md"):
            assert after == data, rel
            continue
        old, new = okf.split(data, rel), okf.split(after, rel)
        if okf.is_concept_path(rel):
            # every key and value, and how each was written (but the paths re-rooted)
            assert {k: okf.split(unrooted(after, name), rel).meta[k] for k in old.meta} == old.meta, rel
            assert data[old.fm_start:old.fm_end] in unrooted(after, name), rel
        elif rel == "index.md" and old.has_frontmatter:
            assert not new.has_frontmatter  # only the tier's root index may carry okf_version
        else:
            assert data.startswith(after[: after.find(b"\n")]), rel  # an index keeps its form
        if rel.endswith("index.md"):
            # An index keeps its lines and gains entries for what it lacked; one already in
            # okfgit's exact shape and order counts as okfgit's and takes its words from the
            # frontmatter (antigravity's api/ and guides/).
            kept = iter(unrooted(new.body, name).splitlines())
            same = all(line in kept for line in old.body.splitlines() if line.strip())
            targets = {a.target for a in links.extract(new.body)}
            assert same or ({a.target for a in links.extract(old.body)} <= targets and name == "antigravity"), rel
        elif okf.is_reserved(rel):
            assert unrooted(new.body, name) == old.body, rel
        else:
            assert unrooted(new.body, name) == old.body, rel  # every other body byte
        before, now = links.extract(old.body), links.extract(new.body)
        if rel.endswith("index.md"):
            now = [next(b for b in now if b.target == a.target or b.target.endswith(a.target)) for a in before]
        assert [a.kind for a in before] == [b.kind for b in now], rel
        for a, b in zip(before, now):
            rewrites += a.target != b.target
            target = links.resolve(rel, a.target)
            if target.external or target.escapes or not links.exists(target.path or "index.md", originals):
                continue
            moved = links.resolve(f"{name}/{rel}", b.target)
            assert links.exists(moved.path or "index.md", tier), (rel, a.target, b.target)
    fields = sum(1 for rel, data in originals.items() if okf.is_concept_path(rel)
                 for line in data.splitlines() if re.match(rb"\s*(?:- )?(?:resource|computation): [a-z/]", line)
                 and not re.match(rb"\s*(?:- )?resource: https?:", line))
    assert len(adopted["rewrites"]) == rewrites + (fields if name == "acme_retail" else 0)
    assert len(adopted["unresolved_in_source"]) == {"antigravity": 18, "okfgit_retail": 2}.get(name, 0)
    message = git("log", "-1", "--format=%B", cwd=project).out
    assert all(f"- {r['file']}:{r['line']}: {r['target']} -> {r['new']}" in message for r in adopted["rewrites"])
    assert git("status", "--porcelain", cwd=project).out == ""
    fsck(git, project)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


BUNDLE = {
    "index.md": "# Subdirectories\n\n* [glossary](glossary/index.md) - Terms.\n",
    "glossary/index.md": "# Glossary Term\n\n* [Term](term.md) - A term.\n",
    "glossary/term.md": ("---\ntype: Glossary Term\ntitle: Term\ndescription: A term.\n---\n\nSee [itself](/glossary/term.md),"
                         " [missing](/glossary/missing.md), [up](../../up.md) and `[code](/glossary/term.md)`.\r\n"),
}


def test_adopt_reroots_links_lists_them_and_reports_the_sources_own_dangling_ones(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str], tmp_path: Path) -> None:
    outside = "---\ntype: Note\n---\n\nA [bundle-absolute link](/glossary/term.md) outside the adopted folder.\n"
    write(project / ".okf", {"notes/a.md": outside})
    git("add", ".okf", cwd=project)
    git("commit", "-q", "-m", "a note by hand", cwd=project)
    source = tmp_path / "bundle"
    write(source, BUNDLE)

    dry = okfgit("adopt", str(source), "--dir", "retail", "--dry-run", cwd=project)

    assert "#   Re-rooted 2 paths under /retail/ (bundle-absolute links, path-valued frontmatter fields):" in dry.out
    assert "#   - retail/glossary/term.md:10: /glossary/term.md -> /retail/glossary/term.md" in dry.out
    assert "#   - retail/glossary/term.md:10: /glossary/missing.md -> /retail/glossary/missing.md" in dry.out
    assert "+See [itself](/retail/glossary/term.md)," in dry.out
    assert not (project / ".okf" / "retail").exists()

    result = okfgit("adopt", str(source), "--dir", "retail", cwd=project)

    assert "re-rooted 2 paths under /retail/ (bundle-absolute links, path-valued frontmatter fields):\n" in result.out
    assert "  retail/glossary/term.md:10: /glossary/term.md -> /retail/glossary/term.md\n" in result.out
    assert ("okfgit: warning: link or path did not resolve in the source either (kept as written): "
            "retail/glossary/term.md:10: /glossary/missing.md") in result.err
    assert "retail/glossary/term.md:10: ../../up.md" in result.err
    body = okf.split(blob(project, ".okf/retail/glossary/term.md", env), "t").body
    assert body == (b"\nSee [itself](/retail/glossary/term.md), [missing](/retail/glossary/missing.md), "
                    b"[up](../../up.md) and `[code](/glossary/term.md)`.\r\n")
    message = git("log", "-1", "--format=%B", cwd=project).out
    assert "Links and paths that did not resolve in the source either (kept as written):\n\n" \
           "- retail/glossary/term.md:10: /glossary/missing.md\n- retail/glossary/term.md:10: ../../up.md" in message
    assert blob(project, ".okf/notes/a.md", env) == outside.encode()  # never touched
    report = json.loads(okfgit("doctor", "--scope", "project", "--json", cwd=project, expect=2).out)
    dangling = sorted((f["file"], f["message"]) for t in report["tiers"] for f in t["profile"]["findings"]
                      if f["code"] in ("dangling-link", "link-outside-kb"))
    assert dangling == [  # the source's own broken links, and the outside note's: none added by adopt
        ("notes/a.md", "link to /glossary/term.md: glossary/term.md does not exist in the tier"),
        ("retail/glossary/term.md", "link to ../../up.md: up.md does not exist in the tier"),
        ("retail/glossary/term.md", "link to /retail/glossary/missing.md: retail/glossary/missing.md does not "
                                    "exist in the tier"),
    ]


def test_adopting_at_the_tier_root_rewrites_nothing(project: Path, okfgit: Runner, tmp_path: Path) -> None:
    source = tmp_path / "bundle"
    write(source, {k: v for k, v in BUNDLE.items() if k != "index.md"})
    out = json.loads(okfgit("adopt", str(source), "--json", cwd=project).out)
    assert out["rewrites"] == []
    assert [r["target"] for r in out["unresolved_in_source"]] == ["/glossary/missing.md", "../../up.md"]


def adopt_retail(project: Path, okfgit: Runner, tmp_path: Path) -> None:
    shutil.copytree(BUNDLES / "okfgit_retail", tmp_path / "src" / "retail")
    okfgit("adopt", str(tmp_path / "src" / "retail"), "--dir", "retail", cwd=project)


def test_projection_leaves_deprecated_concepts_out_of_memory_md_and_marks_stale_ones(
        project: Path, okfgit: Runner, home: Path, tmp_path: Path) -> None:
    adopt_retail(project, okfgit, tmp_path)
    okfgit("project", "--scope", "project", "--target", "claude", cwd=project)
    enc = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(project.resolve()))
    memory = home / ".claude" / "projects" / enc / "memory"
    lines = (memory / "MEMORY.md").read_text().splitlines()
    assert not [line for line in lines if "Gross revenue" in line]  # deprecated: history, not memory
    assert (memory / "revenue-gross.md").is_file()  # still there for superseded_by to reach
    assert "- [Net revenue](revenue-net.md) \u2014 Revenue counted net of refunds and cancellations." in lines
    assert ("- [Customers](customers.md) \u2014 (stale since 2025-06-01T00:00:00Z) One row per customer who ever "
            "placed an order.") in lines
    assert len(lines) == 7  # eight concepts, one deprecated


def test_the_fast_path_expires_when_a_concept_goes_stale(project: Path, okfgit: Runner, home: Path,
                                                         env: dict[str, str], tmp_path: Path) -> None:
    from okfgit.local import fastpath

    soon = dt.datetime.fromtimestamp(int(EPOCH) + 60, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    write(tmp_path / "src", {"soon.md": f"---\ntype: Note\ndescription: Fresh for a minute.\nstale_after: {soon}\n"
                                        "---\nBody.\n"})
    okfgit("adopt", str(tmp_path / "src"), cwd=project)
    args = {"repo": None, "scope": "all", "target": "claude", "run": None}
    okfgit("project", "--target", "claude", cwd=project)
    assert fastpath.check(env, str(project), **args)  # nothing changed: a no-op
    later = {**env, "SOURCE_DATE_EPOCH": str(int(EPOCH) + 60)}
    assert not fastpath.check(later, str(project), **args)  # the concept is stale now
    okfgit("project", "--target", "claude", cwd=project, extra_env={"SOURCE_DATE_EPOCH": later["SOURCE_DATE_EPOCH"]})
    enc = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(project.resolve()))
    memory = (home / ".claude" / "projects" / enc / "memory" / "MEMORY.md").read_text()
    assert f"- [Soon](soon.md) \u2014 (stale since {soon}) Fresh for a minute.\n" in memory


def test_the_read_verbs_show_deprecated_and_stale_concepts_as_such(project: Path, okfgit: Runner,
                                                                    tmp_path: Path) -> None:
    adopt_retail(project, okfgit, tmp_path)
    gross = "[deprecated \u2192 /decisions/revenue-net.md]"
    lines = okfgit("ls", "retail/decisions", cwd=project).out.splitlines()
    assert [line for line in lines if "revenue-gross.md@" in line][0].endswith(
        f"Gross revenue \u2014 Revenue counted gross of refunds, before 2026-06.  {gross}")
    assert not [line for line in lines if "revenue-net.md@" in line and "deprecated" in line]
    tables = okfgit("ls", "retail/tables", cwd=project).out
    assert "One row per customer who ever placed an order.  [stale since 2025-06-01T00:00:00Z]" in tables
    assert "[stale" not in [line for line in tables.splitlines() if "orders.md@" in line][0]  # 2099: fresh

    found = okfgit("search", "revenue", cwd=project).out.splitlines()
    assert "revenue-gross.md@" in found[-1] and found[-1].endswith(gross)  # current first, deprecated last
    assert len(found) == 4
    current = okfgit("search", "revenue", "--no-deprecated", cwd=project).out.splitlines()
    assert current == found[:-1]
    hits = {h["path"]: h for h in json.loads(okfgit("search", "--limit", "0", "--json", cwd=project).out)}
    assert hits["retail/decisions/revenue-gross.md"]["status"] == "deprecated"
    assert hits["retail/decisions/revenue-gross.md"]["superseded_by"] == ["/decisions/revenue-net.md"]
    assert hits["retail/tables/customers.md"]["stale"] is True
    assert hits["retail/tables/customers.md"]["stale_after"] == "2025-06-01T00:00:00Z"
    assert hits["retail/tables/orders.md"]["stale"] is False
    assert hits["retail/tables/orders.md"]["stale_after"] == "2099-09-23T00:00:00Z"
    assert hits["retail/metrics/freshness.md"]["stale_after"] == "2099-01-01T00:00:00Z"  # a plain date
    assert hits["retail/computations/revenue.md"]["stale_after"] == "2099-09-22T22:00:00Z"  # +02:00
    assert hits["retail/tables/orders.md"]["status"] == "stable"

    shown = okfgit("cat", "retail/decisions/revenue-gross.md", cwd=project)
    assert "deprecated: superseded by /decisions/revenue-net.md\n" in shown.err
    assert "stale: since 2025-06-01T00:00:00Z (stale_after)\n" in okfgit("cat", "customers", cwd=project).err
    assert json.loads(okfgit("cat", "customers", "--json", cwd=project).out)["stale"] is True

    links = okfgit("links", "revenue-net", cwd=project).out
    assert "revenue-gross.md" in links and f"  {gross}" in links  # the backlink from the old decision
    head = okfgit("links", "revenue-gross", cwd=project).out.splitlines()[0]
    assert head.endswith(gross)


def test_new_concepts_join_a_bundles_index_in_its_form(project: Path, okfgit: Runner, tmp_path: Path) -> None:
    adopt_retail(project, okfgit, tmp_path)
    okfgit("new", "margin", "--dir", "retail/metrics", "--type", "Metric", "--description", "Revenue less cost.",
           "--no-edit", cwd=project)
    okfgit("new", "oncall", "--dir", "retail/metrics", "--type", "Runbook", "--description", "Who to page.",
           "--no-edit", cwd=project)
    okfgit("new", "refunds", "--dir", "retail/ledger", "--description", "Money sent back.", "--no-edit", cwd=project)
    metrics = (project / ".okf" / "retail" / "metrics" / "index.md").read_text()
    assert metrics == (
        "# Metric\n\n* [Margin](margin.md) - Revenue less cost.\n* [Revenue](revenue.md) - Recognized revenue for a "
        "fiscal year.\n\n# Playbook\n\n* [Incident response: data freshness alert](freshness.md) - Steps to triage "
        "a freshness alert on the orders pipeline.\n\n# Runbook\n\n* [Oncall](oncall.md) - Who to page.\n")
    root = (project / ".okf" / "retail" / "index.md").read_text()
    assert "* [glossary](glossary/index.md) - Terms used across the retail bundle.\n" \
           "* [ledger](ledger/index.md) - Concepts under ledger/.\n* [metrics](metrics/index.md)" in root
    assert (project / ".okf" / "retail" / "ledger" / "index.md").read_text().startswith(
        "# Ledger\n\n- [Refunds](refunds.md) \u2014 Money sent back.")  # a new folder: okfgit's form
    assert "every index is up to date" in okfgit("index", "--check", cwd=project).out


def test_review_of_an_adopted_bundle_follows_its_bundle_absolute_supersession(
        project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    git("checkout", "-q", "-b", "feature", cwd=project)
    adopt_retail(project, okfgit, tmp_path)
    data = json.loads(okfgit("review", "main...feature", "--format", "json", cwd=project, expect=None).out)
    rules = {(f["code"], f["file"]) for f in data["findings"]}
    assert not [r for r in rules if r[0] == "supersession"]  # /decisions/x.md names retail/decisions/x.md
