"""``okfgit mcp`` through the official SDK's stdio client, against real repositories."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import Runner, trailers_by_git

Session = Callable[[ClientSession], Awaitable[None]]


def serve(cwd: Path, env: dict[str, str], body: Session, *args: str, client: str | None = None) -> None:
    """Start `okfgit mcp` in ``cwd`` as an agent would (named ``client`` in its ``initialize``),
    and run ``body`` against it."""
    from mcp import types

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "okfgit", "mcp", *args], cwd=cwd, env=env)
        with open(cwd.parent / "mcp-server.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                info = types.Implementation(name=client, version="1.0") if client else None
                async with ClientSession(read, write, client_info=info) as session:
                    await session.initialize()
                    await body(session)

    anyio.run(main)


def serve_here(okfgit: Runner, cwd: Path, body: Session, *args: str, client: str | None = None,
               extra_env: dict[str, str] | None = None) -> None:
    """`okfgit mcp` run in this process as the CLI runs it (its options, the workspace and
    reader it opens, the server ``stdio.build`` makes of them), with the SDK's in-memory
    streams in place of stdin and stdout; ``body`` runs against it as in ``serve``.

    What only a process shows (the stdio transport, the screened stdin, a stdout that carries
    nothing but the protocol) is held by ``serve``'s test and the raw-pipe test; the others
    need not start a Python that imports the SDK again (two seconds of CPU each)."""
    from mcp import types
    from mcp.shared.memory import create_client_server_memory_streams

    from okfgit.mcp import stdio

    failed: list[BaseException] = []

    def over_memory(reader: Any) -> None:
        server = stdio.build(reader)

        async def main() -> None:
            async with create_client_server_memory_streams() as ((client_read, client_write), (read, write)):
                async with anyio.create_task_group() as group:
                    group.start_soon(lambda: server.run(read, write, server.create_initialization_options()))
                    info = types.Implementation(name=client, version="1.0") if client else None
                    async with ClientSession(client_read, client_write, client_info=info) as session:
                        await session.initialize()
                        try:
                            await body(session)
                        except BaseException as exc:  # the test's own failure, not okfgit's
                            failed.append(exc)
                    group.cancel_scope.cancel()

        anyio.run(main)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stdio, "serve", over_memory)
        result = okfgit("mcp", *args, cwd=cwd, extra_env=extra_env, expect=None)
    if failed:
        raise failed[0]
    assert result.code == 0 and result.out == "", result


async def call(session: ClientSession, tool: str, **args: Any) -> tuple[bool, list[str], dict[str, Any] | None]:
    result = await session.call_tool(tool, args)
    texts = [c.text for c in result.content if c.type == "text"]
    return result.is_error, texts, result.structured_content


def _with_run(project: Path, okfgit: Runner) -> Path:
    okfgit("new", "cache-policy", "--type", "Decision", "--title", "Cache policy", "--description",
           "We cache responses for a day.", "--tag", "perf", "--dir", "decisions", "--no-edit", cwd=project)
    okfgit("run", "start", "r1", "--task", "Make the cache faster.", cwd=project)
    return project / "runstate" / "r1" / "okf"


def test_tools_resources_search_cat_and_note(project: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    job = _with_run(project, okfgit)
    cli_search = json.loads(okfgit("search", "cache", "--json", cwd=project).out)
    cli_cat = json.loads(okfgit("cat", "cache-policy", "--json", cwd=project).out)
    blob = git("cat-file", "blob", "HEAD:.okf/decisions/cache-policy.md", cwd=project).out
    project_head = git("rev-parse", "HEAD", cwd=project).out
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["tools"] = {t.name for t in (await session.list_tools()).tools}
        seen["resources"] = {str(r.uri) for r in (await session.list_resources()).resources}
        index = await session.read_resource("okf://project/decisions/index.md")
        seen["index"] = index.contents[0].text  # type: ignore[union-attr]
        seen["search"] = await call(session, "search", words=["cache"])
        seen["cat"] = await call(session, "cat", ref="cache-policy")
        seen["note"] = await call(session, "note", type="lesson", title="Warm the cache first",
                                  claim="Cold runs vary threefold.", generalizes="yes", tags=["perf"],
                                  cites="cache-policy", relation="refines")
        seen["found"] = await call(session, "search", words=["warm"])
        seen["log"] = await call(session, "log", text="Measured the cold start.")
        seen["state"] = await call(session, "state", where="Cold start measured; warming next.",
                                   next=["Warm the cache in CI", "Measure again"])

    serve(project, env, body)
    assert seen["tools"] == {"search", "cat", "ls", "links", "status", "note", "log", "state"}
    assert {"okf://project/index.md", "okf://project/decisions/index.md", "okf://job/r1/index.md",
            "okf://job/r1/notes/index.md"} <= seen["resources"]
    assert seen["index"] == git("cat-file", "blob", "HEAD:.okf/decisions/index.md", cwd=project).out

    error, texts, data = seen["search"]
    assert not error and data == {"results": cli_search, "more": 0}
    assert texts[0].startswith(cli_search[0]["citation"] + "  [Decision] Cache policy")

    error, texts, data = seen["cat"]
    assert not error and data == cli_cat
    assert texts == [blob, f"citation: {cli_cat['citation']}"]

    error, texts, data = seen["note"]
    assert not error and data is not None
    assert data["path"] == "notes/warm-the-cache-first.md" and data["citation"].startswith("job/r1:notes/warm")
    assert "relation: refines" in (job / data["path"]).read_text()
    assert ("Okf-Operation", "note") in trailers_by_git(git, job, "HEAD~2")
    assert any(key == "Okf-Tool" for key, _ in trailers_by_git(git, job, "HEAD~2"))
    assert ("Okf-Operation", "log") in trailers_by_git(git, job, "HEAD~1")
    assert git("rev-parse", "HEAD", cwd=project).out == project_head  # the project tier is never written
    assert seen["found"][2]["results"][0]["citation"] == data["citation"]  # the next call sees the new commit
    assert "Measured the cold start." in (job / "log.md").read_text()
    error, texts, data = seen["state"]  # STATE.md rewritten as one commit; the task it had stays
    assert not error and data is not None and data["commit"] == git("rev-parse", "HEAD", cwd=job).out.strip()
    assert texts == [f"rewrote {data['citation']} ({data['commit'][:7]})"]
    state = (job / "STATE.md").read_text()
    assert "## Task\n\nMake the cache faster.\n\n## Where it stands\n\nCold start measured; warming next.\n" in state
    assert "## Next steps\n\n- Warm the cache in CI\n- Measure again\n" in state
    assert ("Okf-Operation", "state") in trailers_by_git(git, job)
    assert git("status", "--porcelain", cwd=job).out == ""


def test_errors_are_tool_errors_and_the_server_lives_on(project: Path, okfgit: Runner, git: Runner,
                                                        env: dict[str, str]) -> None:
    okfgit("new", "cache-policy", "--type", "Decision", "--description", "We cache.", "--no-edit", cwd=project)
    (project / ".okf" / "latin1.md").write_bytes(b"---\ntype: Note\n---\ncaf\xe9\n")
    git("add", ".okf/latin1.md", cwd=project)
    git("commit", "-q", "-m", "not UTF-8", cwd=project)
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        binary = await session.call_tool("cat", {"ref": "project:latin1.md"})
        seen["binary"] = (binary.is_error, binary.content[0], binary.structured_content)
        seen["note"] = await call(session, "note", type="Lesson", title="x")
        seen["log"] = await call(session, "log", text="x")
        seen["unknown"] = await call(session, "cat", ref="cache-polcy")
        seen["bad"] = await call(session, "search", words=[1])
        seen["extra"] = await call(session, "ls", nope="x")
        seen["scope"] = await call(session, "ls", scope="job")
        seen["after"] = await call(session, "cat", ref="cache-policy")

    serve_here(okfgit, project, body)
    for key in ("note", "log"):
        error, texts, _ = seen[key]
        assert error and "no active run" in texts[0] and "okfgit run start" in texts[0]
    error, texts, _ = seen["unknown"]
    assert error and texts[0].startswith("no concept or file matches 'cache-polcy'")
    assert "did you mean: cache-policy (project:cache-policy.md@" in texts[0]
    assert seen["bad"][0] and seen["extra"][0] and seen["scope"][0]
    error, block, data = seen["binary"]
    assert not error and block.type == "resource" and block.resource.uri == "okf://project/latin1.md"
    assert base64.b64decode(block.resource.blob) == b"---\ntype: Note\n---\ncaf\xe9\n"
    assert data["content_base64"] == block.resource.blob and "UTF-8" in " ".join(data["warnings"])
    assert not seen["after"][0]


def test_a_commit_by_someone_else_is_seen_by_the_next_call(project: Path, okfgit: Runner, git: Runner,
                                                          env: dict[str, str]) -> None:
    okfgit("new", "first", "--description", "The first one.", "--no-edit", cwd=project)
    okfgit("new", "third", "--description", "The third one.", "--no-edit", cwd=project)
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["before"] = await call(session, "search", words=["second"])
        seen["ls_before"] = await call(session, "ls")
        (project / ".okf" / "second.md").write_text(
            "---\ntype: Note\ntitle: Second\ndescription: The second one, by hand.\n---\n\nBody.\n")
        first = project / ".okf" / "first.md"
        first.write_text(first.read_text().replace("The first one.", "The first one, edited."))
        git("add", ".okf/second.md", ".okf/first.md", cwd=project)
        git("commit", "-q", "-m", "a hand-written concept", cwd=project)
        seen["after"] = await call(session, "search", words=["second"])
        seen["all"] = await call(session, "search", words=["one"])
        seen["edited"] = await call(session, "search", words=["edited"])
        seen["cat"] = await call(session, "cat", ref="second")
        git("rm", "-q", ".okf/third.md", cwd=project)
        git("commit", "-q", "-m", "third goes", cwd=project)
        seen["gone"] = await call(session, "search", words=["one"])

    serve_here(okfgit, project, body)
    assert seen["before"][2] == {"results": [], "more": 0}
    assert [r["path"] for r in seen["after"][2]["results"]] == ["second.md"]
    assert seen["cat"][1][0].endswith("Body.\n")
    assert [r["path"] for r in seen["all"][2]["results"]] == ["first.md", "second.md", "third.md"]
    assert seen["all"][2]["results"][0]["description"] == "The first one, edited."
    assert [r["path"] for r in seen["edited"][2]["results"]] == ["first.md"]  # the new words are searched
    assert seen["gone"][2] == {"results": json.loads(okfgit("search", "one", "--json", cwd=project).out), "more": 0}
    assert [r["path"] for r in seen["gone"][2]["results"]] == ["first.md", "second.md"]


def test_search_shows_the_limit_and_counts_the_rest_as_the_cli_does(project: Path, okfgit: Runner,
                                                                   env: dict[str, str]) -> None:
    for n in range(5):
        okfgit("new", f"cache-{n}", "--description", f"Cache rule {n}.", "--no-edit", cwd=project)
    cli = okfgit("search", "cache", "--limit", "2", "--json", cwd=project)
    cli_text = okfgit("search", "cache", "--limit", "2", cwd=project)
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["two"] = await call(session, "search", words=["cache"], limit=2)
        seen["all"] = await call(session, "search", words=["cache"], limit=0)
        seen["bad"] = await call(session, "search", words=["cache"], limit=-1)

    serve_here(okfgit, project, body)
    error, texts, data = seen["two"]
    assert not error and data == {"results": json.loads(cli.out), "more": 3}
    assert texts[0] == cli_text.out + cli_text.err.rstrip("\n")
    assert cli_text.err == "3 more matching concepts not shown: add words, a type or a tag to narrow, " \
                           "or a limit of 0 for all\n"
    assert len(seen["all"][2]["results"]) == 5 and seen["all"][2]["more"] == 0
    assert seen["bad"][0]


def test_ls_links_and_status(project: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    _with_run(project, okfgit)
    (project / ".okf" / "old-cache.md").write_text(
        "---\ntype: Decision\ntitle: Old cache rule\ndescription: We cached for an hour.\nstatus: deprecated\n"
        "superseded_by: decisions/cache-policy.md\n---\n\nBody.\n")
    git("add", ".okf/old-cache.md", cwd=project)
    git("commit", "-q", "-m", "a deprecated rule", cwd=project)
    okfgit("new", "storage", "--description", "Blobs live in sqlite, see [[cache-policy]].", "--no-edit",
           cwd=project)
    cli_ls = json.loads(okfgit("ls", "--json", cwd=project).out)
    cli_links = json.loads(okfgit("links", "cache-policy", "--json", cwd=project).out)
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["ls"] = await call(session, "ls")
        seen["links"] = await call(session, "links", ref="cache-policy")
        seen["status"] = await call(session, "status")
        seen["search"] = await call(session, "search", words=["cache"])
        seen["old"] = await call(session, "cat", ref="old-cache")

    serve_here(okfgit, project, body)
    assert seen["ls"][2] == cli_ls and seen["links"][2] == cli_links
    assert seen["ls"][1][0].startswith("# /  (tiers: job/r1, project)")
    error, texts, data = seen["status"]
    assert not error and data is not None and data["run"] == "r1" and data["tiers"] == ["job/r1", "project"]
    assert texts[0].startswith("active run: r1")
    error, texts, data = seen["search"]
    assert data["results"][-1]["status"] == "deprecated" and data["results"][-1]["path"] == "old-cache.md"
    assert "[deprecated \u2192 decisions/cache-policy.md]" in texts[0].splitlines()[-1]
    assert "deprecated: superseded by decisions/cache-policy.md" in seen["old"][1][1]


def test_without_the_sdk_mcp_and_mcp_status_name_the_command_that_installs_it(
        project: Path, okfgit: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    assert okfgit("mcp", "status", cwd=project).out.endswith("MCP SDK: installed\n")
    for name in {"mcp", *(n for n in sys.modules if n.startswith("mcp."))}:
        monkeypatch.setitem(sys.modules, name, None)  # no MCP SDK to import from here on, as if not installed
    install = f"{sys.executable} -m pip install 'mcp>=2.2,<3'"  # into the environment this okfgit runs in
    result = okfgit("mcp", cwd=project, expect=2)
    assert result.err == ("okfgit: error: `okfgit mcp` needs the MCP Python SDK, which is not installed with this "
                          f"okfgit; install it with: {install}\n")
    status = okfgit("mcp", "status", cwd=project)
    assert status.out.endswith(f"MCP SDK: missing, so `okfgit mcp` cannot serve; install it with: {install}\n")
    data = json.loads(okfgit("mcp", "status", "--json", cwd=project).out)
    assert data["sdk"] == {"installed": False, "install": install}
    registered = okfgit("mcp", "install", "--agent", "claude", cwd=project)
    assert "the MCP SDK is not installed with this okfgit" in registered.err and install in registered.err


def test_inside_pipx_the_sdk_is_injected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pipx keeps okfgit in <pipx home>/venvs/okfgit: the SDK goes there with pipx inject."""
    from okfgit.mcp import stdio

    monkeypatch.setitem(sys.modules, "mcp.server.lowlevel", None)  # the SDK, as if it were not installed
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".local" / "share" / "pipx" / "venvs" / "okfgit"))
    assert stdio.sdk_missing() == "pipx inject okfgit 'mcp>=2.2,<3'"


def test_notes_written_through_mcp_are_the_clients_not_a_persons(project: Path, okfgit: Runner, git: Runner,
                                                                  env: dict[str, str]) -> None:
    job = _with_run(project, okfgit)
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["refused"] = await call(session, "note", type="lesson", title="Huge", claim="x" * 70_000)
        seen["note"] = await call(session, "note", type="lesson", title="Warm the cache first")
        seen["log"] = await call(session, "log", text="Measured the cold start.")
        seen["state"] = await call(session, "state", where="Cold start measured.")

    # even with the person's override set in the server's environment: the client writes
    before = git("rev-parse", "HEAD", cwd=job).out
    serve_here(okfgit, project, body, client="Claude Code", extra_env={"OKF_ACTOR": "human:alice@example.com"})
    error, texts, _ = seen["refused"]  # a note no reader could read back is never committed
    assert error and texts[0] == ("job/r1:notes/huge.md: invalid YAML frontmatter (line 3): a value of 70,000 "
                                  "characters; okfgit reads values of at most 65,536; nothing was written")
    assert git("rev-parse", "HEAD~3", cwd=job).out == before and not (job / "notes" / "huge.md").exists()
    error, _, data = seen["note"]
    assert not error and data is not None
    note = (job / data["path"]).read_text()
    assert "  by: agent:claude-code\n" in note and "human:" not in note
    for commit in ("HEAD~2", "HEAD~1", "HEAD"):  # the note, the log entry, STATE.md
        assert ("Okf-Actor", "agent:claude-code") in trailers_by_git(git, job, commit)
    assert not seen["state"][0] and ("Okf-Operation", "state") in trailers_by_git(git, job)

    # a person verifies the run's state: no agent rewrites it any more
    state = job / "STATE.md"
    state.write_text(state.read_text().replace("okf_source:", "verified:\n  by: human:alice@example.com\nokf_source:"))
    git("commit", "-q", "-am", "Checked the state", cwd=job)
    verified = state.read_bytes()
    unnamed: dict[str, Any] = {}

    async def second(session: ClientSession) -> None:
        unnamed["log"] = await call(session, "log", text="Another entry.")
        unnamed["state"] = await call(session, "state", where="Rewritten by an agent.")

    serve_here(okfgit, project, second, client=" ")
    assert ("Okf-Actor", "agent:mcp") in trailers_by_git(git, job)
    error, texts, _ = unnamed["state"]
    assert error and "rewriting job/r1:STATE.md (verified by human:alice@example.com) is a person's act, and this " \
        "runs as agent:mcp" in texts[0]
    assert state.read_bytes() == verified and git("status", "--porcelain", cwd=job).out == ""


# -- the protocol, through a raw pipe ----------------------------------------------------------


def test_every_request_is_answered_with_the_json_rpc_error_it_calls_for(project: Path, env: dict[str, str]) -> None:
    """A line that is not a message the server can take gets JSON-RPC's error for it, not
    silence (a client would wait out its whole timeout): sent byte for byte through the pipe."""
    import select
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "okfgit", "mcp"], cwd=project, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None

    def ask(line: bytes) -> dict[str, Any]:
        proc.stdin.write(line + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        ready, _, _ = select.select([proc.stdout], [], [], 60)  # a hang detector, not a timing check
        assert ready, f"no answer to {line[:80]!r}"
        return json.loads(proc.stdout.readline())  # type: ignore[union-attr]

    def request(ident: int, method: str, **more: Any) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, **more}).encode()

    try:
        init = ask(request(1, "initialize", params={"protocolVersion": "2025-06-18", "capabilities": {},
                                                    "clientInfo": {"name": "raw", "version": "1"}}))
        assert init["id"] == 1 and "result" in init
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        cases = [
            (b'{"jsonrpc": "2.0", "id": 2, "method": ', None, -32700),  # malformed
            (b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": ' + b"[" * 100_000 + b"]" * 100_000
             + b"}", None, -32700),  # nested 100,000 deep
            (b"\xff\xfe not UTF-8", None, -32700),
            (json.dumps({"jsonrpc": "1.0", "id": 4, "method": "tools/list"}).encode(), 4, -32600),
            (request(5, "tools/call", params=["search", {"words": ["x"]}]), 5, -32602),  # params by position
            (json.dumps({"jsonrpc": "2.0", "id": 6}).encode(), 6, -32600),  # no method
            (json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}).encode(), None, -32600),
            (b"[]", None, -32600),
            (b"42", None, -32600),
            (b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"a": ' + b"[" * 300 + b"]" * 300
             + b"}}", 8, -32600),  # too deep for the SDK's own parser
            (request(9, "no/such/method"), 9, -32601),
            (request(10, "tools/call", params={"name": "search", "arguments": "words"}), 10, -32602),
            (b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/list"}', None, -32600),  # no UTF-8 answer carries it
            (b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "tools/list"}', None, -32600),
            (b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "cat", "arguments": '
             b'{"ref": "\\udce9"}}}', 12, -32600),  # a byte of a name that is not UTF-8, as a JSON escape
        ]
        for line, ident, code in cases:
            answer = ask(line)
            assert answer["jsonrpc"] == "2.0" and answer["id"] == ident and answer["error"]["code"] == code, \
                (line[:60], answer)
        # and the server goes on serving
        tools_list = ask(request(11, "tools/list"))
        assert tools_list["id"] == 11 and {t["name"] for t in tools_list["result"]["tools"]} >= {"search", "cat"}
    finally:
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()
