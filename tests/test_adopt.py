from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from okfgit.format import concept as okf
from tests.conftest import BUNDLES, Runner, fsck, trailers_by_git

PROFILE = {"type", "title", "description", "scope", "okf_id", "okf_source"}


def blob(git: Runner, repo: Path, path: str, env: dict[str, str]) -> bytes:
    """Exact blob bytes at HEAD (the git fixture decodes text, so read with subprocess)."""
    import subprocess

    return subprocess.run(["git", "cat-file", "blob", f"HEAD:{path}"], cwd=repo, env=env, capture_output=True,
                          check=True).stdout


def tree_paths(git: Runner, repo: Path, prefix: str = ".okf/") -> list[str]:
    out = git("ls-tree", "-r", "--name-only", "HEAD", cwd=repo).out.split("\n")
    return sorted(p[len(prefix):] for p in out if p.startswith(prefix))


def frontmatter_text(data: bytes) -> bytes:
    parsed = okf.split(data, "x")
    return data[parsed.fm_start:parsed.fm_end]


def write(root: Path, files: dict[str, bytes | str]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)


def check_conformance(git: Runner, repo: Path, env: dict[str, str], scope: str = "project") -> None:
    """What doctor checks that adopt is responsible for: OKF §11 plus okfgit's profile keys."""
    paths = tree_paths(git, repo)
    ids = []
    for path in paths:
        if not path.endswith(".md"):
            continue
        data = blob(git, repo, f".okf/{path}", env)
        parsed = okf.split(data, path)
        if okf.is_reserved(path):
            if path.endswith("index.md"):
                assert parsed.has_frontmatter == (path == "index.md"), path
                assert re.search(r"(?m)^#{1,6} \S", data.decode()), path
            continue
        assert parsed.has_frontmatter and okf.one_line(parsed.meta.get("type")), path
        assert PROFILE - {"description"} <= set(parsed.meta), path
        assert parsed.meta["scope"] == scope and okf.is_valid_okf_id(parsed.meta["okf_id"]), path
        ids.append(parsed.meta["okf_id"])
        folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        assert f"{folder}index.md" in paths, path
    assert len(ids) == len(set(ids))
    root = blob(git, repo, ".okf/index.md", env).decode()
    for path in paths:
        if path.count("/") == 1 and path.endswith("/index.md"):
            assert f"]({path})" in root, path


# -- the real bundles -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["stackoverflow", "ga4"])
def test_adopt_real_bundle(name: str, project: Path, okfgit: Runner, git: Runner, env: dict[str, str],
                           tmp_path: Path) -> None:
    copy = tmp_path / "src" / name
    shutil.copytree(BUNDLES / name, copy)
    originals = {p.relative_to(copy).as_posix(): p.read_bytes() for p in sorted(copy.rglob("*")) if p.is_file()}
    concepts = [p for p in originals if okf.is_concept_path(p)]
    before = git("rev-parse", "HEAD", cwd=project).out.strip()

    result = okfgit("adopt", str(copy), "--scope", "project", "--dir", name, cwd=project)

    assert result.out.startswith(f"adopted {len(concepts)} concepts into project:{name}/ (")
    assert git("rev-parse", "HEAD~1", cwd=project).out.strip() == before
    assert trailers_by_git(git, project) == [
        ("Okf-Operation", "adopt"), ("Okf-Tool", "okfgit 0.1.0"), ("Okf-Actor", "human:author@example.com"),
        ("Okf-Adopted", str(len(concepts))), ("Okf-Source", name),
    ]
    # the adopter's machine stays on it: no absolute path anywhere in the message that is pushed
    message = git("log", "-1", "--format=%B", cwd=project).out
    assert str(tmp_path) not in message and str(copy.resolve()) not in message
    changed = git("show", "--name-only", "--format=", "HEAD", cwd=project).out.split()
    assert sorted(changed) == sorted([".okf/index.md"] + [f".okf/{name}/{p}" for p in originals])
    for rel, data in originals.items():
        after = blob(git, project, f".okf/{name}/{rel}", env)
        if rel not in concepts:
            assert after == data, rel
            continue
        old, new = okf.split(data, rel), okf.split(after, rel)
        assert new.body == old.body, rel  # every body byte
        assert frontmatter_text(after).startswith(frontmatter_text(data)), rel  # every key's formatting
        assert {k: new.meta[k] for k in old.meta} == old.meta, rel  # every key's value
        assert set(new.meta) - set(old.meta) <= PROFILE, rel
        assert new.meta["okf_source"] == "authored" and new.meta["scope"] == "project"
    assert {p.relative_to(copy).as_posix(): p.read_bytes() for p in copy.rglob("*") if p.is_file()} == originals
    assert {p: (BUNDLES / name / p).read_bytes() for p in originals} == originals  # the shared bundle untouched
    check_conformance(git, project, env)
    assert git("status", "--porcelain", cwd=project).out == ""
    fsck(git, project)
    found = json.loads(okfgit("search", "--scope", "project", "--limit", "0", "--json", cwd=project).out)
    assert len(found) == len(concepts)


# -- adopting files already committed in the tier ------------------------------------------


PARTIAL = (
    "---\n"
    "# a comment the author wrote\n"
    "title:   Spaced   Title\n"
    "custom: {a: 1,   b: [x, y]}\n"
    "when: 2024-01-02\n"
    "---\n"
    "Body with  odd   spacing.\n\n\n"
)
PLAIN = "# Deploying\n\nWe deploy on Fridays only. Never on Mondays.\n"


def test_adopt_tree_mode_adds_only_missing_keys(project: Path, okfgit: Runner, git: Runner,
                                                env: dict[str, str]) -> None:
    full = okf.serialize({"type": "Decision", "title": "Done", "description": "Already complete.",
                          "scope": "project", "okf_id": okf.new_okf_id(), "okf_source": "authored"}, "\nBody.\n")
    write(project / ".okf", {"notes/partial.md": PARTIAL, "notes/deploy-days.md": PLAIN,
                             "notes/deeper/full.md": full, "notes/script.py": "print('as is')\n"})
    git("add", ".okf", cwd=project)
    git("commit", "-q", "-m", "notes by hand", cwd=project)

    result = okfgit("adopt", "--scope", "project", cwd=project)

    assert result.out.startswith("adopted 2 concepts into project: (")
    assert "okfgit: warning: notes/partial.md: had frontmatter without the type OKF requires; added type: Note" \
        in result.err
    assert trailers_by_git(git, project)[2:] == [("Okf-Actor", "human:author@example.com"), ("Okf-Adopted", "2"),
                                                 ("Okf-Source", "tree")]
    partial = blob(git, project, ".okf/notes/partial.md", env)
    assert partial.startswith(PARTIAL[: PARTIAL.index("---\nBody")].encode())
    assert partial.endswith(b"---\nBody with  odd   spacing.\n\n\n")
    meta = okf.split(partial, "p").meta
    assert meta["type"] == "Note" and meta["title"] == "Spaced   Title" and meta["when"] == "2024-01-02"
    assert meta["description"] == "Body with odd spacing."
    plain = blob(git, project, ".okf/notes/deploy-days.md", env)
    parsed = okf.split(plain, "d")
    assert parsed.body == PLAIN.encode()
    assert {k: parsed.meta[k] for k in ("type", "title", "description", "scope", "okf_source")} == {
        "type": "Note", "title": "Deploy Days", "description": "We deploy on Fridays only.",
        "scope": "project", "okf_source": "authored"}
    assert blob(git, project, ".okf/notes/deeper/full.md", env) == full
    changed = sorted(git("show", "--name-only", "--format=", "HEAD", cwd=project).out.split())
    assert changed == [".okf/index.md", ".okf/notes/deeper/index.md", ".okf/notes/deploy-days.md",
                       ".okf/notes/index.md", ".okf/notes/partial.md"]
    check_conformance(git, project, env)
    fsck(git, project)
    again = okfgit("adopt", "--scope", "project", cwd=project)
    assert again.out == "nothing to adopt in project: (every concept already has okfgit's keys)\n"
    assert len(git("log", "--format=%H", cwd=project).out.split()) == 4


def test_adopt_tree_mode_under_dir_and_global_tier(repo: Path, okfgit: Runner, git: Runner, home: Path,
                                                   env: dict[str, str]) -> None:
    okfgit("init", "--scope", "global", cwd=repo)
    glob = home / ".local" / "share" / "okf"
    write(glob, {"mine/a.md": "Alpha is first.\n", "other/b.md": "Beta.\n"})
    git("add", ".", cwd=glob)
    git("commit", "-q", "-m", "by hand", cwd=glob)
    out = json.loads(okfgit("adopt", "--scope", "global", "--dir", "mine", "--json", cwd=repo).out)
    assert out["adopted"] == ["mine/a.md"] and out["source"] == "tree" and out["dir"] == "mine"
    assert out["indexes"] == ["index.md", "mine/index.md"]
    assert git("show", "HEAD:other/b.md", cwd=glob).out == "Beta.\n"  # outside --dir: untouched
    assert "no committed files" in okfgit("adopt", "--scope", "global", "--dir", "nope", cwd=repo, expect=2).err


# -- copying a source folder --------------------------------------------------------------


def test_adopt_copies_other_files_skips_hidden_and_keeps_crlf(project: Path, okfgit: Runner, git: Runner,
                                                              env: dict[str, str], tmp_path: Path) -> None:
    src = tmp_path / "notes"
    crlf = b"\xef\xbb\xbf---\r\ntype: Runbook\r\n---\r\n\r\nRestart the cache first.\r\n"
    png = b"\x89PNG\r\n\x1a\n\x00\x00binary"
    write(src, {"ops/restart.md": crlf, "ops/q.py": "SELECT = 1\n", "ops/img.png": png,
                ".DS_Store": b"\x00junk", ".git/config": "x", "ops/log.md": "# Log\n\n## 2025-01-01\n\n- began\n"})
    dry = okfgit("adopt", str(src), "--dir", "kb", "--dry-run", cwd=project)
    assert "+++ b/project:kb/ops/restart.md" in dry.out and "Okf-Adopted: 1" in dry.out
    assert git("status", "--porcelain", cwd=project).out == "" and not (project / ".okf" / "kb").exists()

    result = json.loads(okfgit("adopt", str(src), "--dir", "kb", "--json", cwd=project).out)

    assert result["adopted"] == ["kb/ops/restart.md"]
    assert result["copied"] == ["kb/ops/img.png", "kb/ops/log.md", "kb/ops/q.py"]
    assert result["skipped"] == [".git/", ".DS_Store"]
    assert result["indexes"] == ["index.md", "kb/index.md", "kb/ops/index.md"]
    assert blob(git, project, ".okf/kb/ops/img.png", env) == png
    assert blob(git, project, ".okf/kb/ops/q.py", env) == b"SELECT = 1\n"
    restart = blob(git, project, ".okf/kb/ops/restart.md", env)
    assert restart.startswith(b"\xef\xbb\xbf---\r\ntype: Runbook\r\ntitle: Restart\r\n")
    assert restart.endswith(b"okf_source: authored\r\n---\r\n\r\nRestart the cache first.\r\n")
    assert (project / ".okf" / "kb" / "ops" / "restart.md").read_bytes() == restart
    fsck(git, project)
    # The same source again would overwrite files that now differ: refused, nothing written.
    err = okfgit("adopt", str(src), "--dir", "kb", cwd=project, expect=2).err
    assert f"{src / 'ops' / 'restart.md'}: would overwrite project:kb/ops/restart.md, which differs" in err


def test_adopt_refuses_bad_input_listing_every_problem(project: Path, okfgit: Runner, git: Runner,
                                                       tmp_path: Path) -> None:
    okfgit("new", "taken", "--description", "D.", "--no-edit", cwd=project)
    taken_id = okf.split((project / ".okf" / "taken.md").read_bytes(), "t").meta["okf_id"]
    src = tmp_path / "bad"
    outside = tmp_path / "secret.md"
    outside.write_text("---\ntype: Note\n---\nsecret\n")
    write(src, {
        "good.md": "Fine.\n",
        "yaml.md": "---\ntype: [unclosed\n---\n",
        "python.md": "---\ntype: !!python/object:os.system x\n---\n",
        "latin1.md": b"---\ntype: Note\n---\ncaf\xe9\n",
        "binary.md": b"---\ntype: Note\n---\n\x00\x01",
        "empty-type.md": "---\ntype:\n---\n",
        "wrong-scope.md": "---\ntype: Note\nscope: global\n---\n",
        "bad-id.md": "---\ntype: Note\nokf_id: 42\n---\n",
        "dup-id.md": f"---\ntype: Note\nokf_id: {taken_id}\n---\n",
        "taken.md": "---\ntype: Note\n---\nnot the same\n",
    })
    os.symlink(outside, src / "link.md")
    os.symlink(tmp_path, src / "linkdir")
    head = git("rev-parse", "HEAD", cwd=project).out

    err = okfgit("adopt", str(src), cwd=project, expect=2).err

    lines = err.splitlines()
    s = str(src)
    assert err.splitlines() == [
        "okfgit: error: cannot adopt into project: 11 problems, nothing was written:",
        f"  {s}/linkdir: is a symlink; okfgit never follows links out of the source",
        f"  {s}/link.md: is a symlink; okfgit never follows links out of the source",
        f"  {s}/bad-id.md: okf_id 42 is not a lower-case UUID",
        f"  {s}/binary.md: binary file (contains NUL bytes)",
        f"  {s}/dup-id.md: okf_id {taken_id} is already used by project:taken.md",
        f"  {s}/empty-type.md: type is empty or not text; give it a value by hand",
        f"  {s}/latin1.md: not UTF-8 (byte 22)",
        f"  {s}/python.md: invalid YAML frontmatter (line 1): could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object:os.system'",
        f"  {s}/taken.md: would overwrite project:taken.md, which differs; adopt into another --dir or "
        "remove that file first",
        f"  {s}/wrong-scope.md: scope is 'global' but the target tier is project",
        f"  {s}/yaml.md: invalid YAML frontmatter (line 2): did not find expected ',' or ']'",
    ]
    assert git("rev-parse", "HEAD", cwd=project).out == head
    assert git("status", "--porcelain", cwd=project).out == ""
    assert outside.read_text() == "---\ntype: Note\n---\nsecret\n"


def test_adopt_refuses_bad_dir_and_source(project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    src = tmp_path / "n"
    write(src, {"a.md": "A.\n"})
    assert "must stay inside the knowledge base" in okfgit("adopt", str(src), "--dir", "../up", cwd=project,
                                                           expect=2).err
    assert "must be relative" in okfgit("adopt", str(src), "--dir", "/abs", cwd=project, expect=2).err
    assert "no such folder" in okfgit("adopt", str(tmp_path / "missing"), cwd=project, expect=2).err
    assert "not a folder" in okfgit("adopt", str(src / "a.md"), cwd=project, expect=2).err
    write(project / ".okf", {"inbox/x.md": "X.\n"})
    err = okfgit("adopt", str(project / ".okf" / "inbox"), cwd=project, expect=2).err
    assert "overlaps the project tier" in err and "without SRC" in err
    assert okfgit("adopt", str(src), "--scope", "nope", cwd=project, expect=2).code == 2
    assert len(git("log", "--format=%H", cwd=project).out.split()) == 2


def test_adopt_identical_file_in_place_and_root_index_clash(project: Path, okfgit: Runner, git: Runner,
                                                            env: dict[str, str], tmp_path: Path) -> None:
    write(project / ".okf", {"kb/a.md": "Alpha.\n"})
    git("add", ".okf", cwd=project)
    git("commit", "-q", "-m", "by hand", cwd=project)
    src = tmp_path / "kb"
    write(src, {"a.md": "Alpha.\n", "b.md": "Beta.\n"})
    out = json.loads(okfgit("adopt", str(src), "--dir", "kb", "--json", cwd=project).out)
    assert out["adopted"] == ["kb/a.md", "kb/b.md"]
    assert okf.split(blob(git, project, ".okf/kb/a.md", env), "a").body == b"Alpha.\n"
    write(src, {"index.md": "# Mine\n"})
    err = okfgit("adopt", str(src), cwd=project, expect=2).err
    assert f"{src / 'index.md'}: would overwrite project:index.md, which differs" in err


def test_adopt_into_job_tier_creates_it(project: Path, okfgit: Runner, git: Runner, tmp_path: Path) -> None:
    src = tmp_path / "n"
    write(src, {"a.md": "Alpha.\n"})
    okfgit("adopt", str(src), "--scope", "job", "--run", "r1", cwd=project)
    job = project / "runstate" / "r1" / "okf"
    assert git("ls-tree", "-r", "--name-only", "HEAD", cwd=job).out.split() == ["a.md", "index.md"]
    assert "scope: job\n" in git("show", "HEAD:a.md", cwd=job).out
    assert git("status", "--porcelain", cwd=project).out == ""  # runstate/ is excluded
    assert okfgit("cat", "a", "--run", "r1", cwd=project).err.startswith("citation: job/r1:a.md@")
    fsck(git, job)


def test_adopt_dir_reroots_the_path_valued_fields_of_acme_retail(project: Path, okfgit: Runner, git: Runner,
                                                                 env: dict[str, str], tmp_path: Path) -> None:
    """acme_retail writes its sources' and executors' paths from the bundle root
    (``policies/margin-standard.md`` in ``computations/``): under --dir they take the folder in
    front, keep every other byte, and resolve from the tier root."""
    copy = tmp_path / "src" / "acme_retail"
    shutil.copytree(BUNDLES / "acme_retail", copy)
    result = json.loads(okfgit("adopt", str(copy), "--scope", "project", "--dir", "retail", "--json",
                               cwd=project).out)
    moved = [r for r in result["rewrites"] if not r["target"].startswith("/")]
    assert len(moved) == 12 and all(r["new"] == f"retail/{r['target']}" for r in moved)
    sources = 0
    for rel in ("computations/gross-margin-period.md", "computations/revenue-ytd.md", "metrics/gross-margin.md",
                "metrics/revenue.md", "tables/orders.md"):
        before = (copy / rel).read_bytes()
        after = blob(git, project, f".okf/retail/{rel}", env)
        meta = okf.split(after, rel).meta
        for source in meta["sources"]:
            if not source["resource"].startswith("https:"):
                sources += 1
                assert source["resource"].startswith("retail/"), rel
                assert (project / ".okf" / source["resource"]).is_file(), source
        for key in ("executor", "attester"):
            if key in meta:
                assert (project / ".okf" / meta[key]["resource"]).is_file(), (rel, key)
        assert after.replace(b": retail/", b": ").startswith(before.split(b"\n---\n")[0])  # only the paths
        assert okf.split(after, rel).body == okf.split(before, rel).body
    assert sources == 8
    message = git("log", "-1", "--format=%B", cwd=project).out
    assert "- retail/metrics/revenue.md:13: policies/revenue-recognition.md -> retail/policies/revenue-recognition.md" \
        in message
    report = okfgit("doctor", "--scope", "project", "--json", cwd=project, expect=None)
    findings = json.loads(report.out)["tiers"][0]["profile"]["findings"]
    assert [f for f in findings if f["code"] in ("resource-dangling", "dangling-link")] == []
