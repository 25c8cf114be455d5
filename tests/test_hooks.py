"""okfgit's git hooks, fired by real git commands in real repositories.

Until `okfgit sync` exists the hooks call a stand-in `okfgit` placed first on PATH that
records its arguments; the broken cases use stand-ins that fail, cannot be executed, or
are missing, and git must succeed regardless.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from okfgit.local import noop
from okfgit.flows import hooks
from okfgit.errors import UsageError

SOURCE = Path(__file__).resolve().parent.parent / "githooks"
PACKAGED = Path(hooks.__file__).resolve().parent.parent / "data" / "githooks"
HOOKS = hooks.HOOK_NAMES

RECORDER = '#!/bin/sh\nprintf \'%s|%s|%s\\n\' "$PWD" "${OKFGIT_IN_HOOK-}" "$*" >>"$OKFGIT_CALLS"\n'


# -- helpers --------------------------------------------------------------------------


def standin(tmp_path: Path, body: str, mode: int = 0o755) -> Path:
    """A folder holding a stand-in `okfgit` script."""
    folder = tmp_path / "standin-bin"
    folder.mkdir(exist_ok=True)
    exe = folder / "okfgit"
    exe.write_text(body)
    exe.chmod(mode)
    return folder


def system_path() -> str:
    """A PATH with git and the POSIX tools but without any real okfgit."""
    dirs = []
    for tool in ("git", "sh", "sed", "date"):
        found = shutil.which(tool)
        assert found, tool
        if os.path.dirname(found) not in dirs:
            dirs.append(os.path.dirname(found))
    path = os.pathsep.join(dirs)
    if shutil.which("okfgit", path=path):
        pytest.skip("an okfgit executable sits next to git; cannot test a missing okfgit")
    return path


def recording_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    calls = tmp_path / "calls.txt"
    folder = standin(tmp_path, RECORDER)
    return {"PATH": f"{folder}{os.pathsep}{system_path()}", "OKFGIT_CALLS": str(calls)}, calls


def read_calls(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def hooks_folder(repo: Path) -> Path:
    return repo / ".git" / "hooks"


def snapshot(folder: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every entry in a folder: kind, bytes (or link target), permission bits."""
    out = {}
    for entry in sorted(folder.iterdir()):
        st = entry.lstat()
        if entry.is_symlink():
            out[entry.name] = ("link", os.readlink(entry).encode(), 0)
        else:
            out[entry.name] = ("file", entry.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def commit_file(git, repo: Path, name: str, text: str, message: str, env: dict[str, str] | None = None) -> None:
    (repo / name).write_text(text)
    git("add", name, cwd=repo, extra_env=env)
    git("commit", "-q", "-m", message, cwd=repo, extra_env=env)


def rev(git, repo: Path, name: str = "HEAD") -> str:
    return git("rev-parse", name, cwd=repo).out.strip()


@pytest.fixture
def installed(repo: Path, okfgit) -> Path:
    okfgit("hooks", "install", cwd=repo)
    return repo


# -- the scripts themselves -----------------------------------------------------------


def test_packaged_scripts_are_the_source_scripts() -> None:
    for name in HOOKS:
        source = (SOURCE / name).read_bytes()
        assert (PACKAGED / name).read_bytes() == source, f"okfgit/data/githooks/{name} differs from githooks/{name}"
        assert hooks.script(name) == source
        assert os.access(SOURCE / name, os.X_OK)
        assert hooks.MARKER in source.decode().splitlines()
        # the four scripts differ only in the line naming the hook
        other = (SOURCE / "post-checkout").read_text().replace("hook=post-checkout\n", f"hook={name}\n")
        assert source.decode() == other


def test_scripts_parse_as_posix_sh() -> None:
    for shell in ("sh", "dash", "bash"):
        exe = shutil.which(shell)
        if exe is None:
            continue
        for name in HOOKS:
            proc = subprocess.run([exe, "-n", str(SOURCE / name)], capture_output=True, text=True)
            assert proc.returncode == 0, (shell, name, proc.stderr)


# -- when a hook does work: should_run and the scripts agree ---------------------------

OLD, NEW = "1" * 40, "2" * 40
CASES = [
    # hook, args, rebase state dir, runs
    ("post-checkout", [OLD, NEW, "1"], None, True),
    ("post-checkout", [OLD, NEW, "0"], None, False),
    ("post-checkout", [OLD, NEW, "1"], "rebase-merge", False),
    ("post-checkout", [OLD, NEW, "1"], "rebase-apply", False),
    ("post-commit", [], None, True),
    ("post-commit", [], "rebase-merge", False),
    ("post-commit", [], "rebase-apply", False),
    ("post-merge", ["0"], None, True),
    ("post-merge", ["1"], None, True),
    ("post-rewrite", ["amend"], None, False),
    ("post-rewrite", ["rebase"], None, True),
    ("post-rewrite", ["rebase"], "rebase-merge", True),
    ("post-rewrite", ["rebase"], "rebase-apply", True),
]


@pytest.mark.parametrize("hook,args,state,runs", CASES)
def test_should_run_and_the_script_agree(installed: Path, tmp_path: Path, env: dict[str, str], hook: str,
                                         args: list[str], state: str | None, runs: bool) -> None:
    gitdir = installed / ".git"
    if state:
        (gitdir / state).mkdir()
    assert noop.should_run(hook, args, gitdir) is runs
    extra, calls = recording_env(tmp_path)
    # run the installed script the way git does: from the top level, by its path
    proc = subprocess.run([f".git/hooks/{hook}", *args], cwd=installed, env={**env, **extra},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc
    expected = [f"{installed}|1|sync --repo {installed} --hook {hook} -- {' '.join(args)}".rstrip()]
    assert read_calls(calls) == (expected if runs else [])


def test_should_run_rejects_unknown_hooks(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown hook 'pre-commit'"):
        noop.should_run("pre-commit", [], tmp_path)


# -- hooks fire on real git commands --------------------------------------------------


def test_checkout_commit_merge_fire_with_the_repo_and_arguments(installed: Path, tmp_path: Path, git) -> None:
    repo = installed
    extra, calls = recording_env(tmp_path)
    base = rev(git, repo)
    git("checkout", "-q", "-b", "feature", cwd=repo, extra_env=extra)
    commit_file(git, repo, "f.txt", "f\n", "feature work", extra)
    feature = rev(git, repo)
    git("checkout", "-q", "main", cwd=repo, extra_env=extra)
    (repo / "README.md").write_text("edited\n")
    git("checkout", "-q", "--", "README.md", cwd=repo, extra_env=extra)  # a file checkout: nothing
    git("merge", "-q", "--no-edit", "feature", cwd=repo, extra_env=extra)
    prefix = f"{repo}|1|sync --repo {repo} --hook"
    assert read_calls(calls) == [
        f"{prefix} post-checkout -- {base} {base} 1",
        f"{prefix} post-commit --",
        f"{prefix} post-checkout -- {feature} {base} 1",
        f"{prefix} post-merge -- 0",
    ]


def test_rebase_syncs_once_after_it_finished(installed: Path, tmp_path: Path, git) -> None:
    repo = installed
    git("checkout", "-q", "-b", "feature", cwd=repo)
    commit_file(git, repo, "a.txt", "a\n", "a")
    commit_file(git, repo, "b.txt", "b\n", "b")
    git("checkout", "-q", "main", cwd=repo)
    commit_file(git, repo, "m.txt", "m\n", "m")
    git("checkout", "-q", "feature", cwd=repo)
    extra, calls = recording_env(tmp_path)
    git("rebase", "-q", "main", cwd=repo, extra_env=extra)
    assert read_calls(calls) == [f"{repo}|1|sync --repo {repo} --hook post-rewrite -- rebase"]


def test_amend_syncs_once_and_chained_post_rewrite_gets_stdin(repo: Path, okfgit, tmp_path: Path, git) -> None:
    seen = tmp_path / "legacy-stdin.txt"
    legacy = hooks_folder(repo) / "post-rewrite"
    legacy.write_text(f'#!/bin/sh\necho "args: $*" >>"{seen}"\ncat >>"{seen}"\n')
    legacy.chmod(0o755)
    okfgit("hooks", "install", cwd=repo)
    extra, calls = recording_env(tmp_path)
    old = rev(git, repo)
    git("commit", "-q", "--amend", "-m", "initial, amended", cwd=repo, extra_env=extra)
    new = rev(git, repo)
    assert read_calls(calls) == [f"{repo}|1|sync --repo {repo} --hook post-commit --"]
    assert seen.read_text() == f"args: amend\n{old} {new}\n"


def test_pull_from_a_local_clone_fires(installed: Path, tmp_path: Path, git, okfgit) -> None:
    upstream = installed
    clone = tmp_path / "clone"
    git("clone", "-q", str(upstream), str(clone), cwd=tmp_path)
    okfgit("hooks", "install", cwd=clone)
    commit_file(git, upstream, "u1.txt", "u1\n", "upstream 1")
    extra, calls = recording_env(tmp_path)
    git("pull", "-q", "--no-rebase", cwd=clone, extra_env=extra)
    assert read_calls(calls) == [f"{clone}|1|sync --repo {clone} --hook post-merge -- 0"]
    calls.unlink(missing_ok=True)
    commit_file(git, upstream, "u2.txt", "u2\n", "upstream 2")
    commit_file(git, clone, "c.txt", "c\n", "local")
    calls.unlink(missing_ok=True)
    git("pull", "-q", "--rebase", cwd=clone, extra_env=extra)
    assert read_calls(calls) == [f"{clone}|1|sync --repo {clone} --hook post-rewrite -- rebase"]


def test_okfgit_committing_inside_a_hook_does_not_re_trigger(installed: Path, tmp_path: Path, git) -> None:
    repo = installed
    calls = tmp_path / "calls.txt"
    nested = RECORDER + f'git -C "{repo}" commit -q --allow-empty -m "made by okfgit"\n'
    folder = standin(tmp_path, nested)
    extra = {"PATH": f"{folder}{os.pathsep}{system_path()}", "OKFGIT_CALLS": str(calls)}
    git("commit", "-q", "--allow-empty", "-m", "by a person", cwd=repo, extra_env=extra)
    assert read_calls(calls) == [f"{repo}|1|sync --repo {repo} --hook post-commit --"]
    log = git("log", "--format=%s", cwd=repo).out.splitlines()
    assert log[:2] == ["made by okfgit", "by a person"]


def test_okfgit_skip_disables_every_hook(installed: Path, tmp_path: Path, git) -> None:
    extra, calls = recording_env(tmp_path)
    extra["OKFGIT_SKIP"] = "1"
    git("checkout", "-q", "-b", "x", cwd=installed, extra_env=extra)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=installed, extra_env=extra)
    assert read_calls(calls) == []


def test_success_output_is_cut_to_one_line(installed: Path, tmp_path: Path, git) -> None:
    folder = standin(tmp_path, "#!/bin/sh\necho one\necho two >&2\necho three\n")
    extra = {"PATH": f"{folder}{os.pathsep}{system_path()}"}
    result = git("commit", "-q", "--allow-empty", "-m", "x", cwd=installed, extra_env=extra)
    assert result.err == "one\n"
    assert not (installed / ".git" / "okf" / "hook.log").exists()


# -- a broken okfgit never fails git --------------------------------------------------

BROKEN = {
    "fails": ("#!/bin/sh\necho 'okfgit: error: the sky fell' >&2\nexit 1\n", 0o755, 1,
              "okfgit: error: the sky fell"),
    "not-executable": ("#!/bin/sh\nexit 0\n", 0o644, 127, "okfgit: command not found on PATH"),
    "missing": (None, 0, 127, "okfgit: command not found on PATH"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_okfgit_never_fails_git(kind: str, repo: Path, okfgit, git, tmp_path: Path) -> None:
    body, mode, code, reason = BROKEN[kind]
    path = system_path()
    if body is not None:
        path = f"{standin(tmp_path, body, mode)}{os.pathsep}{path}"
    extra = {"PATH": path}
    okfgit("hooks", "install", cwd=repo)
    clone = tmp_path / "clone"
    git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
    okfgit("hooks", "install", cwd=clone)
    log = repo / ".git" / "okf" / "hook.log"

    def one_line(hook: str) -> str:
        return f"okfgit: {hook} hook failed (exit {code}): {reason} [log: .git/okf/hook.log]\n"

    base = rev(git, repo)
    # every command below must succeed, with okfgit's one line per hook on stderr
    r = git("checkout", "-q", "-b", "feature", cwd=repo, extra_env=extra)
    assert r.err == one_line("post-checkout")
    (repo / "f.txt").write_text("f\n")
    git("add", "f.txt", cwd=repo, extra_env=extra)
    r = git("commit", "-q", "-m", "f", cwd=repo, extra_env=extra)
    assert r.err == one_line("post-commit")
    git("checkout", "-q", "main", cwd=repo, extra_env=extra)
    (repo / "m.txt").write_text("m\n")
    git("add", "m.txt", cwd=repo, extra_env=extra)
    git("commit", "-q", "-m", "m", cwd=repo, extra_env=extra)
    r = git("merge", "-q", "--no-edit", "feature", cwd=repo, extra_env=extra)
    assert r.err.endswith(one_line("post-merge"))
    git("checkout", "-q", "-b", "topic", "main~1", cwd=repo, extra_env=extra)
    (repo / "t.txt").write_text("t\n")
    git("add", "t.txt", cwd=repo, extra_env=extra)
    git("commit", "-q", "-m", "t", cwd=repo, extra_env=extra)
    r = git("rebase", "-q", "main", cwd=repo, extra_env=extra)
    assert r.err == one_line("post-rewrite")
    git("checkout", "-q", "main", cwd=repo, extra_env=extra)
    r = git("pull", "-q", "--no-rebase", cwd=clone, extra_env=extra)
    assert r.err == one_line("post-merge")
    assert (clone / "f.txt").exists()

    entries = [line for line in log.read_text().splitlines() if not line.startswith(" ")]
    assert [e.split(" ", 2)[1] for e in entries] == [
        "post-checkout:", "post-commit:", "post-checkout:", "post-commit:", "post-merge:",
        "post-checkout:", "post-commit:", "post-rewrite:", "post-checkout:",
    ]
    assert entries[0].split(" ", 1)[1] == (
        f"post-checkout: exit {code}: okfgit sync --repo {repo} --hook post-checkout -- {base} {base} 1")
    assert entries[1].split(" ", 1)[1] == f"post-commit: exit {code}: okfgit sync --repo {repo} --hook post-commit --"
    assert f"  {reason}" in log.read_text().splitlines()
    assert (clone / ".git" / "okf" / "hook.log").exists()
    status = okfgit("hooks", "status", "--json", cwd=repo).out
    assert f"| {reason}" in status


def test_a_failing_legacy_hook_does_not_fail_git_and_okfgit_still_runs(repo: Path, okfgit, git,
                                                                       tmp_path: Path) -> None:
    legacy = hooks_folder(repo) / "post-commit"
    legacy.write_text("#!/bin/sh\necho legacy failed >&2\nexit 1\n")
    legacy.chmod(0o755)
    okfgit("hooks", "install", cwd=repo)
    extra, calls = recording_env(tmp_path)
    r = git("commit", "-q", "--allow-empty", "-m", "x", cwd=repo, extra_env=extra)
    assert r.err == "legacy failed\n"
    assert read_calls(calls) == [f"{repo}|1|sync --repo {repo} --hook post-commit --"]


# -- install, uninstall, status -------------------------------------------------------


def test_install_writes_the_scripts_and_is_idempotent(repo: Path, okfgit) -> None:
    folder = hooks_folder(repo)
    before = snapshot(folder)
    first = okfgit("hooks", "install", cwd=repo)
    assert first.out.splitlines()[1:] == [f"  {h:<14} install      install okfgit's hook" for h in HOOKS] + [
        "  merge-driver   install      set up okfgit's merge driver in git config"]
    after = snapshot(folder)
    for name in HOOKS:
        assert after[name] == ("file", hooks.script(name), 0o755)
    assert {k: v for k, v in after.items() if k not in HOOKS} == before
    mtimes = {name: (folder / name).stat().st_mtime_ns for name in HOOKS}
    second = okfgit("hooks", "install", "--json", cwd=repo)
    assert '"action": "install"' not in second.out and second.out.count('"action": "unchanged"') == 5
    assert snapshot(folder) == after
    assert {name: (folder / name).stat().st_mtime_ns for name in HOOKS} == mtimes


def test_dry_run_changes_nothing(repo: Path, okfgit) -> None:
    folder = hooks_folder(repo)
    (folder / "post-merge").write_text("#!/bin/sh\n")
    before = snapshot(folder)
    out = okfgit("hooks", "install", "--dry-run", cwd=repo).out
    assert out.startswith(f"would change {folder}:\n")
    assert "post-merge     chain        keep the existing hook as post-merge.legacy" in out
    assert snapshot(folder) == before


def test_foreign_hooks_are_chained_and_restored_exactly(repo: Path, okfgit, git, tmp_path: Path) -> None:
    folder = hooks_folder(repo)
    ran = tmp_path / "foreign-ran.txt"
    (folder / "post-checkout").write_text(f'#!/bin/sh\necho "checkout $*" >>"{ran}"\n')
    (folder / "post-checkout").chmod(0o750)
    (folder / "post-merge").write_bytes(b"#!/bin/sh\r\n# not executable, so git ignores it\r\n")
    (folder / "post-merge").chmod(0o644)
    target = tmp_path / "shared-hook"
    target.write_text(f'#!/bin/sh\necho "commit" >>"{ran}"\n')
    target.chmod(0o755)
    (folder / "post-commit").symlink_to(target)
    before = snapshot(folder)

    okfgit("hooks", "install", cwd=repo)
    status = okfgit("hooks", "status", cwd=repo).out.splitlines()
    assert status[1:5] == ["  post-checkout  chained", "  post-merge     chained", "  post-commit    chained",
                           "  post-rewrite   ours"]
    assert (folder / "post-commit.legacy").is_symlink()
    extra, calls = recording_env(tmp_path)
    head = rev(git, repo)
    git("checkout", "-q", "-b", "x", cwd=repo, extra_env=extra)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=repo, extra_env=extra)
    assert ran.read_text() == f"checkout {head} {head} 1\ncommit\n"
    assert len(read_calls(calls)) == 2

    out = okfgit("hooks", "uninstall", cwd=repo).out
    assert "post-checkout  restore" in out and "post-rewrite   remove" in out
    assert snapshot(folder) == before


def test_uninstall_leaves_foreign_hooks_alone(repo: Path, okfgit) -> None:
    folder = hooks_folder(repo)
    okfgit("hooks", "install", cwd=repo)
    (folder / "post-merge").write_text("#!/bin/sh\n# replaced by a person\n")
    before = (folder / "post-merge").read_bytes()
    out = okfgit("hooks", "uninstall", cwd=repo).out
    assert "post-merge     keep-foreign not okfgit's hook: left untouched" in out
    assert (folder / "post-merge").read_bytes() == before
    assert not (folder / "post-checkout").exists()


def test_install_refuses_when_a_foreign_hook_cannot_be_kept(repo: Path, okfgit) -> None:
    folder = hooks_folder(repo)
    (folder / "post-commit").write_text("#!/bin/sh\n# new\n")
    (folder / "post-commit.legacy").write_text("#!/bin/sh\n# old\n")
    before = snapshot(folder)
    r = okfgit("hooks", "install", cwd=repo, expect=3)
    assert r.err == (f"okfgit: error: cannot keep the existing hook {folder / 'post-commit'}: post-commit.legacy "
                     "already exists next to it; move one of them away and retry (nothing was changed)\n")
    assert snapshot(folder) == before


def test_an_outdated_hook_is_reported_and_updated(installed: Path, okfgit) -> None:
    path = hooks_folder(installed) / "post-merge"
    path.write_bytes(path.read_bytes().replace(b"exit 0\n", b"exit 0 # older\n", 1))
    assert "post-merge     ours (outdated: run `okfgit hooks install`)" in okfgit("hooks", "status", cwd=installed).out
    out = okfgit("hooks", "install", cwd=installed).out
    assert "post-merge     update" in out
    assert path.read_bytes() == hooks.script("post-merge")


def test_a_left_over_legacy_is_chained_again_and_restored(repo: Path, okfgit) -> None:
    folder = hooks_folder(repo)
    (folder / "post-commit.legacy").write_text("#!/bin/sh\n")
    assert "post-commit    absent (post-commit.legacy present)" in okfgit("hooks", "status", cwd=repo).out
    assert "post-commit    rechain" in okfgit("hooks", "install", cwd=repo).out
    okfgit("hooks", "uninstall", cwd=repo)
    assert (folder / "post-commit").read_text() == "#!/bin/sh\n"
    assert not (folder / "post-commit.legacy").exists()


def test_core_hooks_path_is_respected(repo: Path, okfgit, git, tmp_path: Path) -> None:
    shared = tmp_path / "shared-hooks"
    git("config", "core.hooksPath", str(shared), cwd=repo)
    r = okfgit("hooks", "install", cwd=repo)
    assert r.out.startswith(f"hooks in {shared}:\n")
    assert r.err == (f"okfgit: warning: core.hooksPath is {str(shared)!r}: hooks in {shared} run for every "
                     "repository that uses that folder\n")
    assert sorted(p.name for p in shared.iterdir()) == sorted(HOOKS)
    assert not (hooks_folder(repo) / "post-commit").exists()
    extra, calls = recording_env(tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=repo, extra_env=extra)
    assert read_calls(calls) == [f"{repo}|1|sync --repo {repo} --hook post-commit --"]
    status = okfgit("hooks", "status", cwd=repo).out
    assert status.startswith(f"git hooks in {shared} (core.hooksPath = {shared})\n")


def test_hooks_folder_inside_the_working_tree_is_warned_about(repo: Path, okfgit, git) -> None:
    git("config", "core.hooksPath", ".githooks", cwd=repo)
    r = okfgit("hooks", "install", cwd=repo)
    assert f"okfgit: warning: {repo / '.githooks'} is inside the working tree" in r.err
    assert (repo / ".githooks" / "post-merge").read_bytes() == hooks.script("post-merge")


def test_linked_worktree_uses_the_shared_hooks_and_its_own_top_level(installed: Path, okfgit, git,
                                                                     tmp_path: Path) -> None:
    extra, calls = recording_env(tmp_path)
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "side", str(wt), cwd=installed, extra_env=extra)
    assert read_calls(calls)[-1].startswith(f"{wt}|1|sync --repo {wt} --hook post-checkout -- ")
    status = okfgit("hooks", "status", "--json", cwd=wt).out
    assert f'"hooks_path": "{hooks_folder(installed)}"' in status
    assert f'"log": "{installed / ".git" / "okf" / "hook.log"}"' in status


def test_hooks_outside_a_repository_is_a_usage_error(tmp_path: Path, okfgit) -> None:
    outside = tmp_path / "nowhere"
    outside.mkdir()
    r = okfgit("hooks", "install", cwd=outside, expect=2)
    assert r.err == ("okfgit: error: git hooks need a git repository: run inside one or pass --repo "
                     "(or use --agent claude|gemini)\n")
    assert okfgit("hooks", "status", cwd=outside).out.startswith("git hooks: not in a git repository\n")
