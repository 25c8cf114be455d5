"""One write contract: a write verb plans (the plan and the result it will report) and
plan.apply performs it; no verb, command or target writes a file itself."""

from __future__ import annotations

import os
import re
from pathlib import Path

from okfgit import plan as plan_mod
from okfgit.context import Context
from okfgit.format import concept as okf
from okfgit.flows import hooks
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parent.parent
WRITES = re.compile(r"\batomic_write\(|\.write_bytes\(|\.write_text\(|\.unlink\(|\bos\.(?:replace|rename|unlink)\(")
# Besides plan.apply: fsutil (the primitive), the git layer (the working tree after a commit) and local/
# (okfgit's own files under <git common dir>/okf/).


def test_only_apply_and_the_owners_of_okfgits_own_files_write() -> None:
    offenders = []
    for path in sorted((ROOT / "okfgit").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ("okfgit/plan.py", "okfgit/fsutil.py") or rel.startswith(("okfgit/local/", "okfgit/git/")):
            continue
        if WRITES.search(path.read_text()):
            offenders.append(rel)
    assert offenders == []


def test_a_new_concept_file_is_what_serialize_gives() -> None:
    meta = {"okf_source": "authored", "type": "Note", "title": "Ünïcode: a title", "description": "x " * 60,
            "tags": ["a", "b"], "scope": "project", "okf_id": okf.new_okf_id(),
            "generated": {"by": "human:a@b", "at": "2026-01-01T00:00:00Z"}}
    for body in ("\n# T\n\nOne sentence.\n", "\n# T\n\nOne.\n\n## Why\n\n_Not recorded._\n"):
        assert okf.new_file(meta, body) == okf.serialize(meta, body)


def test_git_hook_install_is_a_plan_that_dry_run_renders_and_apply_performs(repo: Path, env: dict[str, str],
                                                                            okfgit: Runner) -> None:
    foreign = repo / ".git" / "hooks" / "post-merge"
    foreign.parent.mkdir(exist_ok=True)
    foreign.write_text("#!/bin/sh\necho mine\n")
    change = hooks.plan_install(repo, env)
    text = plan_mod.render(change.plan)
    assert f"# rename {foreign} -> {foreign}.legacy" in text and f"+++ b/{foreign}" in text
    assert foreign.read_text() == "#!/bin/sh\necho mine\n"  # planning wrote nothing
    hooks.apply(Context(env, repo), change)
    assert (repo / ".git" / "hooks" / "post-merge.legacy").read_text() == "#!/bin/sh\necho mine\n"
    assert hooks.is_ours(foreign.read_bytes()) and os.access(foreign, os.X_OK)
    assert hooks.plan_install(repo, env).plan.empty  # installing twice changes nothing
    undo = hooks.plan_uninstall(repo, env)
    hooks.apply(Context(env, repo), undo)
    assert foreign.read_text() == "#!/bin/sh\necho mine\n"
    assert not (repo / ".git" / "hooks" / "post-merge.legacy").exists()


def test_a_failed_write_puts_back_the_file_moved_aside(tmp_path: Path) -> None:
    # A folder so deep that the file's path fits PATH_MAX (4,096 bytes) and the temp file's,
    # 27 bytes longer, does not: the write fails after the move.
    folder = tmp_path
    while len(str(folder)) < 4080:
        folder = folder / ("d" * min(200, 4080 - len(str(folder)) - 1))
    folder.mkdir(parents=True)
    theirs = folder / "h"
    theirs.write_text("theirs\n")
    kept = folder / "k"
    plan = plan_mod.Plan(moves=[plan_mod.FileMove(theirs, kept, "keep theirs")],
                         writes=[plan_mod.FileWrite(theirs, b"ours\n", "ours", fsync=False)])
    done = plan_mod.apply(Context({}, tmp_path), plan)
    assert [w.path for w, _ in done.failed] == [theirs]
    assert theirs.read_text() == "theirs\n" and not kept.exists()


def test_every_report_serialises_with_to_json() -> None:
    """One convention: a report's JSON form is its ``to_json()`` (no ``as_dict``, no serialiser in a command)."""
    found = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "okfgit").rglob("*.py"))
             if re.search(r"def as_dict\b", p.read_text())
             or (p.parent.name == "commands" and re.search(r"def (?!json_option|emit_json)\w*json\w*\(", p.read_text()))]
    assert found == []
