"""Where Gemini CLI 0.61.0 keeps a project's files (``targets/gemini_home.py``): its registry
``projects.json``, the ``.project_root`` owner file, ``context.fileName``; and what okfgit
does when any of them holds something Gemini CLI would never write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from okfgit.targets import gemini_home


def registered(home: Path, project: Path, short_id: object, owner: bytes | None = None) -> Path:
    """``home/.gemini`` with ``project`` registered under ``short_id`` (and its owner file)."""
    gemini = home / ".gemini"
    gemini.mkdir(parents=True, exist_ok=True)
    (gemini / "projects.json").write_text(json.dumps({"projects": {str(project): short_id}}))
    if isinstance(short_id, str) and owner is not None:
        (gemini / "tmp" / short_id).mkdir(parents=True)
        (gemini / "tmp" / short_id / ".project_root").write_bytes(owner)
    return gemini


def test_the_memory_folder_is_the_registered_short_ids(tmp_path: Path) -> None:
    project = tmp_path / "work" / "proj"
    gemini = registered(tmp_path, project, "proj-1", f"{project}\n".encode())
    found = gemini_home.memory_folder(project, {}, tmp_path)
    assert (found.path, found.short_id, found.registry) == (gemini / "tmp" / "proj-1" / "memory", "proj-1",
                                                             gemini / "projects.json")
    moved = gemini_home.memory_folder(project, {"GEMINI_CLI_HOME": str(tmp_path / "other")}, tmp_path)
    assert moved.path is None and moved.registry == tmp_path / "other" / ".gemini" / "projects.json"
    sandboxed = gemini_home.memory_folder(project, {"SANDBOX": "sandbox-exec"}, tmp_path)
    assert sandboxed.registry == tmp_path / ".cache" / ".gemini" / "projects.json"


@pytest.mark.parametrize(("short_id", "why"), [
    (None, "has not run in"), (5, "has not run in"), ("", "has not run in"), ("..", "has not run in"),
    ("a/b", "has not run in"), ("a\x00b", "has not run in"), ("a\nb", "has not run in"),
])
def test_a_short_id_gemini_would_not_write_is_no_folder(tmp_path: Path, short_id: object, why: str) -> None:
    project = tmp_path / "proj"
    registered(tmp_path, project, short_id)
    found = gemini_home.memory_folder(project, {}, tmp_path)
    assert (found.path, found.short_id) == (None, None) and why in found.why


@pytest.mark.parametrize(("registry", "why"), [
    (None, "no projects.json"), (b"\xff\xfe", "cannot be read"), (b"{", "cannot be read"),
    (b"[1, 2]", "has not run in"), (b'{"projects": [1]}', "has not run in"),
])
def test_a_registry_that_cannot_be_read_is_no_folder(tmp_path: Path, registry: bytes | None, why: str) -> None:
    (tmp_path / ".gemini").mkdir()
    if registry is not None:
        (tmp_path / ".gemini" / "projects.json").write_bytes(registry)
    found = gemini_home.memory_folder(tmp_path / "proj", {}, tmp_path)
    assert found.path is None and why in found.why


@pytest.mark.parametrize(("owner", "why"), [(b"/somewhere/else\n", "says the short id 'proj' is /somewhere/else's"),
                                            (b"\xff\n", "cannot be read")])
def test_a_short_id_another_folder_owns_is_no_folder(tmp_path: Path, owner: bytes, why: str) -> None:
    project = tmp_path / "proj"
    registered(tmp_path, project, "proj", owner)
    found = gemini_home.memory_folder(project, {}, tmp_path)
    assert found.path is None and why in found.why


@pytest.mark.parametrize(("setting", "names"), [
    ("CONTEXT.md", ["CONTEXT.md"]), (["A.md", "B.md"], ["A.md", "B.md"]), ([], ["GEMINI.md"]), (7, ["GEMINI.md"]),
    (["..", "A.md"], ["A.md"]), ("sub/GEMINI.md", ["GEMINI.md"]), ("G\x00.md", ["GEMINI.md"]), (".", ["GEMINI.md"]),
    ("  X.md  ", ["X.md"]),
])
def test_context_file_names_as_gemini_reads_them(tmp_path: Path, setting: object, names: list[str]) -> None:
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps({"context": {"fileName": setting}}))
    assert gemini_home.context_file_names(None, {}, tmp_path) == names


def test_settings_gemini_cannot_parse_set_no_context_file_name(tmp_path: Path) -> None:
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text('{"context": {"fileName": "X.md"}, "n": Infinity}')
    assert gemini_home.context_file_names(None, {}, tmp_path) == ["GEMINI.md"]


def test_the_projects_context_file_name_comes_first(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".gemini").mkdir(parents=True)
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps({"context": {"fileName": "USER.md"}}))
    assert gemini_home.context_file_names(project, {}, tmp_path) == ["USER.md"]
    (project / ".gemini" / "settings.json").write_text(json.dumps({"context": {"fileName": "PROJECT.md"}}))
    assert gemini_home.context_file_names(project, {}, tmp_path) == ["PROJECT.md"]
