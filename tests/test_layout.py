"""The import rules of spec/okf-layout.md, checked on every module of the package."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "okfgit"
SHARED = {"errors", "context", "fsutil", "progress", "__init__", "TOOL", "__version__"}
# layer -> okfgit layers it may import (besides itself); anything else is a violation
ALLOWED: dict[str, set[str]] = {
    "format": {"errors"},
    "local": {"errors", "fsutil", "__init__", "TOOL"},
    "git": SHARED | {"local"},
    "transport": SHARED | {"git"},
    "knowledge": SHARED | {"format", "git", "local"},
    "plan": SHARED | {"format", "git", "knowledge", "local"},
    "targets": SHARED | {"format", "git", "knowledge", "local"},
    "flows": SHARED | {"format", "git", "transport", "knowledge", "local", "plan", "targets"},
    "verbs": SHARED | {"format", "git", "transport", "knowledge", "local", "plan", "targets", "flows"},
    "render": SHARED | {"format", "knowledge", "targets", "flows", "verbs"},
    "mcp": SHARED | {"format", "git", "knowledge", "local", "plan", "targets", "flows", "verbs", "render"},
    "commands": SHARED | {"cli", "format", "git", "knowledge", "local", "plan", "targets", "flows", "verbs",
                          "render", "mcp"},
    "cli": {"errors", "__version__"},
    "errors": set(),
    "context": {"progress"},
    "progress": set(),
    "fsutil": {"errors"},
    "__main__": {"cli"},
    "__init__": set(),
}
# third-party packages each layer may import
THIRD_PARTY = {"pygit2": {"git"}, "click": {"cli", "commands"}, "yaml": {"format", "verbs"},
               "frontmatter": {"format"}, "mcp": {"mcp"}}


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


@functools.cache
def tree(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once for all the checks below (none of them changes it)."""
    return ast.parse(path.read_text())


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(tree(path)))


def imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in nodes(path):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            if node.module == "okfgit":
                out += [f"okfgit.{a.name}" for a in node.names]
    return out


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_a_module_imports_only_what_its_layer_may(path: Path) -> None:
    layer = layer_of(path)
    allowed = ALLOWED[layer] | {layer}
    bad = []
    for name in imports(path):
        top, *rest = name.split(".")
        if top == "okfgit":
            if rest and rest[0] not in allowed:
                bad.append(name)
        elif top in THIRD_PARTY and layer not in THIRD_PARTY[top]:
            bad.append(name)
    assert bad == [], f"{path.relative_to(ROOT)} ({layer}/) may not import {bad}"


def test_record_classes_are_dataclasses() -> None:
    """A record class is a ``dataclasses.dataclass``: no module makes code from source text
    (``exec``, ``eval``, ``compile``) or declares a ``dataclass_transform`` of its own, the
    marks of a hand-made ``dataclasses``."""
    made = {}
    for path in MODULES:
        names = {n.id for n in nodes(path) if isinstance(n, ast.Name)}  # exec(...), not re.compile(...)
        names |= {n.attr for n in nodes(path) if isinstance(n, ast.Attribute) and n.attr == "dataclass_transform"}
        found = sorted(names & {"exec", "eval", "compile", "dataclass_transform"})
        if found:
            made[path.relative_to(PACKAGE).as_posix()] = found
    assert made == {}


def test_every_folder_has_its_paragraph_in_the_spec() -> None:
    spec = (ROOT / "spec" / "okf-layout.md").read_text()
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    for name in folders:
        assert f"**`{name}/`**" in spec, name
    for module in ("cli.py", "errors.py", "context.py", "plan.py"):
        assert f"`{module}`" in spec, module
    verbs = spec.split("**`verbs/`**", 1)[1].split("\n\n", 1)[0]
    for path in sorted((PACKAGE / "verbs").iterdir()):
        if path.name != "__init__.py" and (path.suffix == ".py" or (path / "__init__.py").exists()):
            assert f"`{path.stem}`" in verbs, f"verbs/{path.name} is not named in the verbs/ paragraph"


GIT = PACKAGE / "git"
# the git layer's modules that the no-op paths and local/ may load: standard library only
STDLIB_ONLY = {"objects.py", "command.py", "config.py", "__init__.py"}


@pytest.mark.parametrize("path", sorted(GIT.glob("*.py")), ids=lambda p: p.name)
def test_the_git_layers_light_modules_load_no_libgit2(path: Path) -> None:
    """``objects``, ``command`` and ``config`` are what a run that reads no object needs:
    importing them loads neither pygit2 nor a module that does."""
    if path.name not in STDLIB_ONLY:
        return
    heavy = {f"okfgit.git.{p.stem}" for p in GIT.glob("*.py") if p.name not in STDLIB_ONLY}
    bad = [n for n in imports(path) if n.split(".")[0] == "pygit2" or n in heavy]
    assert bad == [], f"{path.name} imports {bad}"


@functools.cache
def _attributes(path: Path) -> tuple[tuple[str, str], ...]:
    """(the expression's source, the attribute) of every attribute read in ``path``."""
    return tuple((ast.unparse(node.value), node.attr) for node in nodes(path) if isinstance(node, ast.Attribute))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_code_touches_pygit2s_private_parts(path: Path) -> None:
    """pygit2's public API only: no cffi (``pygit2.ffi``, ``C``), no private module, and in the
    git layer no private attribute of anything but the module's own objects (``self``,
    ``cls``); outside it, no reach into the layer's pygit2 repository (``Repo.raw``)."""
    names = imports(path)
    names += [f"{node.module}.{a.name}" for node in nodes(path) if isinstance(node, ast.ImportFrom)
              and node.module and node.module.split(".")[0] == "pygit2" for a in node.names]
    bad = [n for n in names if n.split(".")[0] == "pygit2" and any(
        part.startswith("_") or part in ("ffi", "C") for part in n.split(".")[1:])]
    inside = path.is_relative_to(GIT)
    for owner, attr in _attributes(path):
        if inside and attr.startswith("_") and not attr.startswith("__") and owner not in ("self", "cls"):
            bad.append(f"{owner}.{attr}")
        if not inside and attr == "raw":
            bad.append(f"{owner}.raw")
    assert bad == [], f"{path.relative_to(ROOT)} touches {bad}"


def test_one_place_starts_processes() -> None:
    """``git.command.run`` is the one function that starts a process (git, or gh): one
    environment rule for all of them."""
    starts = ("subprocess", "posix_spawn", "posix_spawnp", "fork", "forkpty", "system", "popen", "execv",
              "execvp", "execvpe", "execve", "spawnv", "spawnvp")
    found = []
    for path in MODULES:
        names = imports(path) + [attr for _, attr in _attributes(path)]
        if any(n.split(".")[0] in starts or n in starts for n in names):
            found.append(path.relative_to(PACKAGE).as_posix())
    assert found == ["git/command.py"]


VERBS = sorted(p for p in (PACKAGE / "verbs").rglob("*.py") if p != PACKAGE / "verbs" / "__init__.py")


def verb_of(path: Path) -> str:
    """The verb a module of ``verbs/`` belongs to: ``verbs/X.py`` or any module of ``verbs/X/``."""
    return path.relative_to(PACKAGE / "verbs").parts[0].removesuffix(".py")


@pytest.mark.parametrize("path", VERBS, ids=lambda p: p.relative_to(PACKAGE / "verbs").as_posix())
def test_verbs_are_leaves(path: Path) -> None:
    """A verb module never imports another verb's modules: what two verbs share is a library in
    a layer below (``flows/``, ``knowledge/``), so a second copy of it has nowhere to hide."""
    verb = verb_of(path)
    named = [name.split(".")[2] for name in imports(path) if name.startswith("okfgit.verbs.")]
    named += _from_verbs(path)
    others = sorted({n for n in named if n != verb})
    assert others == [], f"verbs/{path.relative_to(PACKAGE / 'verbs')} imports the verbs {others}"


def _from_verbs(path: Path) -> list[str]:
    """Names imported as ``from okfgit.verbs import x``."""
    return [a.name for node in nodes(path)
            if isinstance(node, ast.ImportFrom) and node.module == "okfgit.verbs" for a in node.names]


def test_every_fast_path_we_keep_names_tests_that_exist() -> None:
    """spec/okf-layout.md lists each fast path with the tests that hold it to its general
    path: each one named there is a test of the suite."""
    spec = (ROOT / "spec" / "okf-layout.md").read_text()
    section = spec.split("## Fast paths we keep", 1)[1]
    named = re.findall(r"`(test_\w+\.py)::(test_\w+)`", section)
    assert len(named) >= 6
    for module, test in named:
        assert f"def {test}(" in (ROOT / "tests" / module).read_text(), f"{module}::{test}"
