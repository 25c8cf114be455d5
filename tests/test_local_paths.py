"""<git common dir>/okf/ has one owner: okfgit.local.paths names the folder and every file in it."""

from __future__ import annotations

import re
from pathlib import Path

from okfgit.local import paths
from tests.conftest import Runner
from tests.test_capture import CURRENT, memory, write_memory

ROOT = Path(__file__).resolve().parent.parent


def test_everything_okfgit_keeps_in_the_common_dir_is_named_by_paths(project: Path, env: dict[str, str],
                                                                    home: Path, okfgit: Runner,
                                                                    tmp_path: Path) -> None:
    write_memory(memory(project, env, home), "feedback_testing.md", CURRENT)
    okfgit("sync", cwd=project)
    okfgit("sync", cwd=project)
    okfgit("ls", cwd=project)
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\np = sys.argv[1]\nopen(p, 'w').write('not frontmatter\\n')\n")
    okfgit("new", "oops", "--edit", cwd=project, extra_env={"EDITOR": f"python3 {editor}"}, expect=2)
    written = {p.name + ("/" if p.is_dir() else "") for p in (project / ".git" / "okf").iterdir()}
    assert written <= set(paths.FILES)
    assert {paths.STATE, paths.FASTPATH_STAMP, paths.SYNC_STAMP, paths.LOCK, paths.DRAFTS + "/"} <= written


def test_the_readme_lists_every_file_in_the_common_dir() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Files okfgit writes outside the KB", 1)[1].split("\n## ", 1)[0]
    listed = section.split("<repo>/.git/okf/", 1)[1].split("\n- ", 1)[0]
    for name in paths.FILES:
        assert f"`{name.rstrip('/')}" in listed, name


def test_no_other_module_spells_the_folder_or_its_files() -> None:
    names = [n.rstrip("/") for n in paths.FILES if n != paths.DRAFTS + "/"]
    spelled = re.compile("|".join(re.escape(f'"{n}"') for n in names) + r'|common\w*\)? / "okf"|"drafts"')
    offenders = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "okfgit").rglob("*.py"))
                 if p.name != "paths.py" and spelled.search(p.read_text())]
    assert offenders == []


def test_the_hook_scripts_log_where_paths_says() -> None:
    line = f'log=$(git rev-parse --git-common-dir 2>/dev/null)/{paths.DIR}/{paths.HOOK_LOG} || exit 0\n'
    for script in sorted((ROOT / "okfgit" / "data" / "githooks").iterdir()):
        assert line in script.read_text(), script


def test_paths_are_under_the_common_dir(tmp_path: Path) -> None:
    common = tmp_path / ".git"
    assert paths.state(common) == common / "okf" / "state.db"
    assert paths.legacy_state(common) == common / "okf" / "state.json"
    assert paths.lock(common) == common / "okf" / "sync.lock"
    assert paths.hook_log(common) == common / "okf" / "hook.log"
    assert paths.fastpath_stamp(common) == str(common / "okf" / "fastpath.json")
    assert paths.sync_stamp(str(common)) == str(common / "okf" / "sync.json")
    assert paths.drafts(common, tmp_path) == common / "okf" / "drafts"
    assert paths.drafts(None, tmp_path) == tmp_path / ".cache" / "okfgit" / "drafts"
