"""One bad file harms only itself, in every verb (issue 25, items 1 and 2).

A concept whose frontmatter holds a 5,000-digit integer (Python cannot turn it into text) sits
in every tier and in the memory folder; a memory file has a 250-byte name. Every verb runs
beside them: none exits 3, none prints a traceback, each reports the bad file where it reads
it, and the good files around it go on working.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, Runner, fsck
from tests.test_capture import memory, write_memory

HUGE = "9" * 5000
LONG_NAME = "a" * 247 + ".md"  # 250 bytes: its old temp name passed the 255-byte limit


def bad_concept(scope: str, okf_id: str) -> bytes:
    return (f"---\ntype: Note\ntitle: Huge number\ndescription: {HUGE}\nscope: {scope}\n"
            f"okf_id: {okf_id}\nokf_source: authored\n---\nA body.\n").encode()


def memory_file(name: str, description: str) -> bytes:
    return f"---\nname: {name}\ndescription: {description}\nmetadata:\n  type: project\n---\n{description}\n".encode()


def commit_file(git: Runner, repo: Path, rel: str, data: bytes, message: str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    git("add", rel, cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)


@pytest.fixture
def world(project: Path, okfgit: Runner, git: Runner, env: dict[str, str], home: Path, tmp_path: Path) -> Path:
    """Every tier holds a good concept and a bad one; the memory folder a good fact, a bad one
    and one with a 250-byte name; both hold the other hostile files of the same class (nested
    past the bound, an alias bomb, NUL bytes, not UTF-8, a symlink leaving the folder, a line
    break or a byte that is not UTF-8 in a name)."""
    okfgit("init", "--scope", "global", cwd=project)
    glob = home / ".local" / "share" / "okf"
    okfgit("new", "global-good", "--type", "Note", "--description", "A good global fact.", "--scope", "global",
           "--no-edit", cwd=project)
    commit_file(git, glob, "huge.md", bad_concept("global", "11111111-1111-4111-8111-111111111111"), "huge")
    okfgit("new", "cache-policy", "--type", "Decision", "--description", "Responses are cached for a day.",
           "--no-edit", cwd=project)
    for name, data in HOSTILE.items():
        (project / ".okf" / name).write_bytes(data)
    git("add", ".okf", cwd=project)
    git("commit", "-q", "-m", "hostile files", cwd=project)
    commit_file(git, project, ".okf/huge.md", bad_concept("project", "22222222-2222-4222-8222-222222222222"),
                "huge")
    good = ("---\ntype: Note\ntitle: {0}\ndescription: A fact named oddly.\nscope: project\nokf_id: {1}\n"
            "okf_source: authored\n---\nx\n")
    commit_file(git, project, ".okf/caf\udce9.md",  # a name that is not UTF-8: git keeps its bytes
                good.format("Cafe", "66666666-6666-4666-8666-666666666666").encode(), "latin-1 name")
    commit_file(git, project, ".okf/new\nline.md", good.format("Two lines", "77777777-7777-4777-8777-777777777777")
                .encode(), "a line break in a name")
    okfgit("run", "start", "r1", "--task", "Try things.", cwd=project)
    okfgit("note", "--type", "Lesson", "Warm the cache first", "--claim", "Cold runs vary threefold.",
           "--generalizes", "yes", cwd=project)
    job = project / "runstate" / "r1" / "okf"
    commit_file(git, job, "notes/huge.md", bad_concept("job", "33333333-3333-4333-8333-333333333333"), "huge")
    (job / "notes" / "escape.md").symlink_to("/etc/hostname")  # a committed symlink that leaves the tier
    git("add", "notes/escape.md", cwd=job)
    git("commit", "-q", "-m", "a link", cwd=job)
    mem = memory(project, env, home)
    write_memory(mem, "release_freeze.md", memory_file("release-freeze", "The release freeze starts Thursday."))
    write_memory(mem, LONG_NAME, memory_file("long-name", "A fact in a file with a long name."))
    write_memory(mem, "huge_number.md", f"---\nname: huge\ndescription: {HUGE}\ntype: project\n---\nx\n".encode())
    for name, data in HOSTILE.items():
        write_memory(mem, name, data.replace(b"type: Note", b"metadata:\n  type: project"))
    (tmp_path / "outside.md").write_bytes(memory_file("outside", "A fact outside the folder."))
    (mem / "escape.md").symlink_to(tmp_path / "outside.md")
    write_memory(mem, "two\nlines.md", memory_file("two-lines", "A fact with a line break in its name."))
    return project


HOSTILE = {  # each harms only itself
    "deep.md": b"---\ntype: Note\nx: " + b"[" * 200 + b"]" * 200 + b"\n---\nx\n",
    "long-value.md": b"---\ntype: Note\ndescription: " + b"x" * 70_000 + b"\n---\nx\n",
    "bomb.md": b"---\ntype: Note\na: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        b"%c: &%c [%s]\n" % (97 + i, 97 + i, b", ".join([b"*%c" % (96 + i)] * 9)) for i in range(1, 9)) + b"---\nx\n",
    "nul.md": b"---\ntype: Note\ndescription: d\n---\nx\0y\n",
    "latin1.md": b"---\ntype: Note\ndescription: caf\xe9\n---\nx\n",
}


def ok(result: Result) -> Result:
    assert result.code in (0, 2), result
    assert "internal error" not in result.err and "Traceback" not in result.err, result
    return result


def test_every_verb_goes_on_beside_a_huge_integer_and_a_long_name(
        world: Path, okfgit: Runner, git: Runner, env: dict[str, str], home: Path) -> None:
    repo = world
    run = lambda *args, expect=None: ok(okfgit(*args, cwd=repo, expect=expect))  # noqa: E731

    # sync captures the good facts (the long name too), skips the bad one, projects everything
    synced = run("sync", expect=0)
    assert "huge_number.md" in synced.err and "100" in synced.err
    for name, why in (("deep.md", "nested more than 64 deep"), ("long-value.md", "a value of 70,000 characters"),
                      ("bomb.md", "anchors and aliases"), ("nul.md", "binary file"), ("latin1.md", "not UTF-8"),
                      ("escape.md", "leaves the memory folder"), ("two\nlines.md", "control characters")):
        assert f"{name}: " in synced.err and why in synced.err.split(f"{name}: ", 1)[1].split("\n")[0], name
    mem = memory(repo, env, home)
    assert (mem / LONG_NAME).read_bytes().startswith(b"---\n")
    assert LONG_NAME in (mem / "MEMORY.md").read_text()
    assert not list(mem.glob(".*okftmp"))
    again = run("sync", expect=0)  # and again: the long name does not stop the next run
    assert "failed" not in again.out
    run("project", expect=0)
    assert "Long Name — A fact in a file with a long name." in run("search", "long", expect=0).out

    doctor = run("doctor", expect=2)
    for name, code in (("deep.md", "yaml-invalid"), ("long-value.md", "yaml-invalid"), ("bomb.md", "yaml-invalid"),
                       ("nul.md", "binary"), ("latin1.md", "not-utf8")):
        assert f"\n    {name}:" in doctor.out and f"error: {code}:" in doctor.out.split(f"\n    {name}:", 1)[1], name
    for where in ("huge.md", "notes/huge.md"):
        assert f"{where}:4: error: yaml-invalid: frontmatter past okfgit's bounds" in doctor.out, doctor.out
    assert doctor.out.count("integer of 5,000 characters") == 3
    assert "caf\\xe9.md.not-utf8: error: not-utf8: its name is not UTF-8" in doctor.out
    assert "notes/escape.md: error: symlink: is a symlink" in doctor.out
    assert "caf\\xe9.md.not-utf8: error: not-utf8" in run("doctor", "--worktree", expect=2).out
    findings = json.loads(run("doctor", "--json", expect=2).out)
    assert {t["tier"] for t in findings["tiers"]} == {"job/r1", "project", "global"}

    listed = run("ls", expect=0).out
    assert "project:cache-policy.md@" in listed and "project:huge.md@" in listed and "unreadable" in listed
    assert "cache-policy" in run("search", "cached", expect=0).out
    assert "Responses are cached for a day." in run("cat", "cache-policy", expect=0).out
    assert "integer of 5,000 characters" in run("cat", "project:huge.md", expect=0).err
    run("links", "cache-policy", expect=0)
    run("index", "--check", expect=None)
    run("index", expect=0)
    run("index", expect=0)  # a second run changes nothing: each entry is written once
    assert (repo / ".okf" / "index.md").read_text().count("](new%0Aline.md) — A fact named oddly.") == 1
    status = run("status", expect=2)
    assert "huge_number.md" in status.out and LONG_NAME not in status.out
    assert "escape.md (deleted)" not in status.out and "deleted: notes/escape.md" not in status.out  # no edit
    json.loads(run("status", "--json", expect=2).out)
    run("capture", "--dry-run", expect=0)
    run("run", "status", expect=0)
    run("note", "--type", "Lesson", "Another", "--claim", "It works beside a bad note.", expect=0)
    run("log", "Tried it beside a bad note.", expect=0)
    run("new", "second", "--type", "Note", "--description", "Made beside a bad one.", "--no-edit", expect=0)
    run("promote", "warm-the-cache", "--from", "job", "--to", "project", expect=0)
    review = run("review", "--base", "HEAD~6", expect=2)
    assert "huge.md" in review.out and "request-changes" in review.out
    json.loads(run("review", "--base", "HEAD~6", "--format", "json", expect=2).out)
    run("project", "--explain", expect=0)
    run("run", "end", expect=0)
    for tier in (repo, home / ".local" / "share" / "okf"):
        fsck(git, tier)
    assert (mem / "escape.md").read_bytes() == memory_file("outside", "A fact outside the folder.")  # untouched


def test_the_mcp_tools_go_on_beside_a_huge_integer_and_a_long_name(world: Path, okfgit: Runner, git: Runner) -> None:
    from tests.test_mcp import ClientSession, call, serve_here

    okfgit("sync", cwd=world)  # the long-named memory is a concept now
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        for name, args in (("search", {"words": ["long"]}), ("search", {"words": ["huge"]}), ("ls", {}),
                           ("cat", {"ref": "cache-policy"}), ("cat", {"ref": "project:huge.md"}),
                           ("links", {"ref": "cache-policy"}), ("status", {}), ("log", {"text": "Still here."}),
                           ("note", {"type": "Lesson", "title": "Beside a bad one", "claim": "Notes still work."}),
                           ("state", {"where": "Beside a bad note."})):
            seen[f"{name} {args}"] = await call(session, name, **args)

    serve_here(okfgit, world, body)  # the server in this process: test_mcp holds the stdio transport
    for key, (error, texts, _) in seen.items():
        assert not error and "internal error" not in texts[0], (key, texts)
    assert "Long Name — A fact in a file with a long name." in seen["search {'words': ['long']}"][1][0]
    assert "integer of 5,000 characters" in " ".join(seen["cat {'ref': 'project:huge.md'}"][2]["warnings"])
    assert "huge_number.md" in seen["status {}"][1][0]


def test_the_merge_driver_merges_a_file_past_the_bounds_as_git_would(tmp_path: Path, okfgit: Runner) -> None:
    """Both sides changed a concept okfgit cannot read (a 5,000-digit integer) at a 250-byte
    path: git's own text merge, never a failed merge or a lost side."""
    sides = {name: bad_concept("project", "88888888-8888-4888-8888-888888888888").replace(b"A body.", body)
             for name, body in (("base", b"A body."), ("ours", b"A body.\nOurs."), ("theirs", b"Theirs.\nA body."))}
    for name, data in sides.items():
        (tmp_path / name).write_bytes(data)
    merged = ok(okfgit("merge-driver", "base", "ours", "theirs", "7", f".okf/{LONG_NAME}", cwd=tmp_path))
    assert "merged as text by git merge-file" in merged.err and "integer of 5,000 characters" in merged.err
    assert (tmp_path / "ours").read_bytes().endswith(b"---\nTheirs.\nA body.\nOurs.\n")


def test_a_bundle_with_a_huge_integer_is_refused_by_adopt_naming_the_file(
        project: Path, okfgit: Runner, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "good.md").write_text("---\ntype: Note\ntitle: Good\ndescription: Fine.\n---\nx\n")
    (bundle / "huge.md").write_bytes(bad_concept("project", "44444444-4444-4444-8444-444444444444"))
    (bundle / "caf\udce9.md").write_text("---\ntype: Note\ntitle: Cafe\ndescription: Fine.\n---\nx\n")
    result = ok(okfgit("adopt", str(bundle), "--scope", "project", cwd=project, expect=2))
    assert "huge.md" in result.err and "integer of 5,000 characters" in result.err
    assert "caf\\xe9.md: its name is not UTF-8 text; rename it to adopt it" in result.err


@pytest.mark.parametrize("text, bound", [
    ("n: 0x" + "f" * 5000, "integer of 5,002 characters"),  # hexadecimal: Python reads it, never prints it
    ("n: 1" + ":30" * 2000, "integer of 6,001 characters"),  # base 60
    ("d: " + "x" * 70000, "a value of 70,000 characters"),
    ("d: " + "[" * 70 + "]" * 70, "nested more than 64 deep"),
])
def test_each_bound_is_one_unreadable_file(project: Path, okfgit: Runner, git: Runner, text: str,
                                           bound: str) -> None:
    commit_file(git, project, ".okf/bad.md", f"---\ntype: Note\n{text}\n---\nx\n".encode(), "bad")
    assert bound in ok(okfgit("doctor", "--scope", "project", cwd=project, expect=2)).out
    assert "bad.md" in ok(okfgit("ls", cwd=project, expect=0)).out


def test_a_memory_name_okfgit_cannot_write_back_is_skipped_with_a_warning_and_left_alone(
        project: Path, okfgit: Runner, env: dict[str, str], home: Path) -> None:
    mem = memory(project, env, home)
    write_memory(mem, "kept.md", memory_file("kept", "A fact that is captured."))
    latin1 = bytes(mem) + b"/caf\xe9.md"  # a name that is not UTF-8
    with open(latin1, "wb") as fh:
        fh.write(memory_file("cafe", "A fact in a Latin-1 name."))
    write_memory(mem, "back\\slash.md", memory_file("slash", "A fact with a backslash in its name."))
    synced = ok(okfgit("sync", cwd=project, expect=0))
    assert "caf\\xe9.md: okfgit cannot keep a memory under this name: it is not UTF-8" in synced.err
    assert "back\\slash.md: okfgit cannot keep a memory under this name: it is not a relative path" in synced.err
    status = ok(okfgit("status", cwd=project, expect=2))
    assert "caf\\xe9.md: okfgit cannot keep a memory under this name: it is not UTF-8" in status.out
    assert "2 memory files okfgit cannot capture" in status.out
    json.loads(ok(okfgit("status", "--json", cwd=project, expect=2)).out)
    ok(okfgit("project", "--explain", cwd=project, expect=0))
    with open(latin1, "rb") as fh:
        assert fh.read() == memory_file("cafe", "A fact in a Latin-1 name.")
    assert "kept.md" in (mem / "MEMORY.md").read_text()


def test_a_concept_with_a_250_byte_name_is_projected_and_read(project: Path, okfgit: Runner, git: Runner,
                                                               env: dict[str, str], home: Path) -> None:
    name = "b" * 247 + ".md"
    for folder in ("", "other/"):  # twice: the second memory file needs a suffix to stay distinct
        commit_file(git, project, f".okf/{folder}{name}", b"---\ntype: Note\ntitle: Long\ndescription: Long.\n"
                    b"scope: project\nokf_id: 55555555-5555-4555-8555-55555555555" + str(len(folder)).encode()
                    + b"\nokf_source: authored\n---\nx\n", "long")
    ok(okfgit("index", cwd=project, expect=0))
    ok(okfgit("sync", cwd=project, expect=0))
    ok(okfgit("sync", cwd=project, expect=0))
    mem = memory(project, env, home)
    written = sorted(p.name for p in mem.iterdir() if p.name != "MEMORY.md")
    assert len(written) == 2 and all(len(n.encode()) <= 255 for n in written), written
    assert ok(okfgit("doctor", "--scope", "project", cwd=project, expect=0))
    assert "Long" in ok(okfgit("cat", "other/" + name, cwd=project, expect=0)).out


# -- what okfgit is asked to write --------------------------------------------------------------


def unchanged(git: Runner, *repos: Path) -> list[str]:
    """What a user checks after a refused write: HEAD, the index and the working tree of each repository."""
    return [git(*args, cwd=repo).out for repo in repos
            for args in (("rev-parse", "HEAD"), ("ls-files", "--stage"), ("status", "--porcelain", "--ignored"))]


REFUSED = [  # what okfgit would write and could not read back, or text that is not UTF-8
    (("new", "big", "--description", "x" * 70_000, "--no-edit"),
     "project:big.md: invalid YAML frontmatter (line 3): a value of 70,000 characters; okfgit reads values of at "
     "most 65,536"),
    (("note", "--type", "Lesson", "Big", "--claim", "x" * 70_000),
     "job/r1:notes/big.md: invalid YAML frontmatter (line 3): a value of 70,000 characters"),
    (("note", "--type", "Lesson", "Big", "--why", "x" * (1 << 20)), "job/r1:notes/big.md: file is over 1 MiB"),
    (("log", "x" * (1 << 20)), "job/r1:log.md: file is over 1 MiB"),
    # a byte of an argument that is not UTF-8 reaches Python as a lone surrogate
    (("new", "cafe", "--description", "Caf\udce9 au lait.", "--no-edit"),
     "description: not UTF-8 text (character 4 is a byte that is not UTF-8)"),
    (("new", "cafe", "--type", "Caf\udce9", "--description", "Coffee.", "--no-edit"), "type: not UTF-8 text"),
    (("note", "--type", "Lesson", "Caf\udce9"), "title: not UTF-8 text"),
    (("note", "--type", "Lesson", "Coffee", "--evidence", "caf\udce9"), "evidence: not UTF-8 text"),
    (("log", "Tried caf\udce9."), "text: not UTF-8 text (character 10 is a byte that is not UTF-8)"),
    (("state", "--where", "At the caf\udce9."), "where: not UTF-8 text"),
    (("state", "--next", "ok", "--next", "caf\udce9"), "next: not UTF-8 text"),
]


def test_what_okfgit_could_not_read_back_is_refused_and_nothing_is_written(project: Path, okfgit: Runner,
                                                                            git: Runner) -> None:
    okfgit("run", "start", "r1", "--task", "Try things.", cwd=project)
    job = project / "runstate" / "r1" / "okf"
    before = unchanged(git, project, job)
    for args, said in REFUSED:
        refused = okfgit(*args, cwd=project, expect=2)
        assert refused.err.startswith(f"okfgit: error: {said}") and refused.err.endswith("; nothing was written\n")
        assert unchanged(git, project, job) == before, args


@pytest.mark.parametrize("args, what", [
    (("new", "c" * 253, "--description", "Long.", "--no-edit"), "path"),
    (("new", "ok", "--dir", "a/" + "c" * 256, "--description", "Long.", "--no-edit"), "folder"),
])
def test_a_name_past_255_bytes_is_refused_before_anything_is_written(project: Path, okfgit: Runner, git: Runner,
                                                                      args: tuple[str, ...], what: str) -> None:
    before = unchanged(git, project)
    refused = ok(okfgit(*args, cwd=project, expect=2))  # was: internal error, File name too long
    assert refused.err.startswith(f"okfgit: error: invalid {what} ")
    assert refused.err.endswith(": a file or folder name is at most 255 bytes\n")
    assert unchanged(git, project) == before


def test_a_byte_of_an_argument_that_is_not_utf8_is_refused_by_name(project: Path, okfgit: Runner,
                                                                   okfgit_proc: Runner, git: Runner) -> None:
    """The same through a real process's argv: the byte 0xe9 as the shell passes it."""
    okfgit("run", "start", "r1", "--task", "Try things.", cwd=project)
    before = unchanged(git, project, project / "runstate" / "r1" / "okf")
    refused = okfgit_proc("log", "Tried caf\udce9.", cwd=project, expect=2)
    assert refused.err == ("okfgit: error: text: not UTF-8 text (character 10 is a byte that is not UTF-8); "
                           "nothing was written\n")
    assert unchanged(git, project, project / "runstate" / "r1" / "okf") == before
