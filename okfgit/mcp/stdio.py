"""The MCP SDK adapter: ``mcp.tools``' tools and resources served over stdio.

Built on the official Python SDK's low-level ``Server`` (constructor handlers), because
both the tool list and the resources are computed per call from the tiers at HEAD. The
SDK is an optional extra; without it ``okfgit mcp`` is a usage error saying how to
install it. Nothing here may print: stdout is the protocol.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from okfgit.errors import UsageError
from okfgit.mcp import tools

if TYPE_CHECKING:
    from mcp.server import Server

SDK_REQUIREMENT = "mcp>=2.2,<3"  # pyproject.toml's mcp extra
INSTRUCTIONS = (
    "okfgit serves this project's OKF knowledge base (tiers: job > project > global, read at HEAD). "
    "Consult it before you decide: `search` by words, type and tags, then `cat` the concepts that bear "
    "on the task; `ls` and the okf://<tier>/<path> index resources descend the indexes; `links` shows "
    "what a concept links to and what links to it. Cite what you use as tier:path@oid. Write only to "
    "the active run with `note` and `log`; the project and global tiers change through `okfgit promote`."
)


def sdk_missing() -> str | None:
    """None when the MCP SDK can be imported here; else the command that installs it into
    the environment this okfgit runs in: ``pipx inject okfgit`` for pipx's (``pip install
    'okfgit[mcp]'`` would install another okfgit, or be refused: okfgit is not on PyPI and a
    system Python refuses pip, PEP 668), that environment's own pip for any other. The SDK is
    found, not imported: importing it takes seconds, and ``mcp status`` only names it."""
    import sys

    if _sdk_found(sys.modules):
        return None
    import shlex

    parts = os.path.normpath(sys.prefix).split(os.sep)
    if len(parts) >= 3 and parts[-3:-1] == ["pipx", "venvs"]:
        return f"pipx inject {parts[-1]} '{SDK_REQUIREMENT}'"
    return f"{shlex.quote(sys.executable)} -m pip install '{SDK_REQUIREMENT}'"


def _sdk_found(modules: dict[str, Any]) -> bool:
    """Whether ``mcp.server.lowlevel`` is there to import (a module set to None in
    ``sys.modules`` is one Python refuses to import)."""
    import importlib.util

    if any(name in modules and modules[name] is None for name in ("mcp", "mcp.server", "mcp.server.lowlevel")):
        return False
    try:
        spec = importlib.util.find_spec("mcp")
    except (ImportError, ValueError):
        return False
    places = spec.submodule_search_locations if spec is not None else None
    return bool(places) and any(os.path.isfile(os.path.join(p, "server", "lowlevel", "__init__.py"))
                                for p in places or ())


def require_sdk() -> None:
    """UsageError (exit 2) naming the install command when the MCP SDK is missing."""
    missing = sdk_missing()
    if missing is not None:
        raise UsageError(f"`okfgit mcp` needs the MCP Python SDK, which is not installed with this okfgit; "
                         f"install it with: {missing}")


def build(reader: tools.Reader) -> Server[Any]:
    """The SDK server with okfgit's handlers; every failure becomes a tool error."""
    require_sdk()
    import mcp.types as types
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext
    from mcp.shared.exceptions import MCPError

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None,
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=spec.name, description=spec.description, input_schema=spec.schema,
                       annotations=types.ToolAnnotations(read_only_hint=not spec.writes, destructive_hint=False,
                                                         idempotent_hint=not spec.writes, open_world_hint=False))
            for spec in tools.TOOLS
        ])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        client = ctx.session.client_params
        reader.meet(client.client_info.name if client is not None else None)
        try:
            result = tools.call(reader, params.name, params.arguments)
        except Exception as exc:  # never a crashed server: the CLI's message as a tool error
            return types.CallToolResult(content=[types.TextContent(type="text", text=tools.check_error(exc))],
                                        is_error=True)
        content: list[Any] = []
        if result.blob is not None:
            content.append(types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
                uri=tools.resource_uri(result.data["tier"], result.data["path"]),
                blob=base64.b64encode(result.blob).decode("ascii"),
                mime_type="application/octet-stream")))
        else:
            content.append(types.TextContent(type="text", text=result.text))
        content += [types.TextContent(type="text", text=text) for text in result.extra]
        return types.CallToolResult(content=content, structured_content=result.data)

    async def list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None,
                             ) -> types.ListResourcesResult:
        try:
            found = tools.resources(reader)
        except Exception as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=tools.check_error(exc)) from None
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, description=r.description, mime_type="text/markdown")
            for r in found
        ])

    async def read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams,
                            ) -> types.ReadResourceResult:
        try:
            citation, data = tools.read_resource(reader, str(params.uri))
        except Exception as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=tools.check_error(exc)) from None
        meta = {"citation": citation}
        try:
            contents: Any = types.TextResourceContents(uri=params.uri, text=data.decode("utf-8"),
                                                       mime_type="text/markdown", _meta=meta)
        except UnicodeDecodeError:
            contents = types.BlobResourceContents(uri=params.uri, blob=base64.b64encode(data).decode("ascii"),
                                                  mime_type="application/octet-stream", _meta=meta)
        return types.ReadResourceResult(contents=[contents])

    return Server(
        tools.server_name(), version=tools.server_version(), instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=call_tool,
        on_list_resources=list_resources, on_read_resource=read_resource,
    )


def serve(reader: tools.Reader) -> None:
    """Serve over stdin/stdout until the client closes the connection.

    Every line is screened before the SDK reads it (``screen``): the SDK drops a line that is
    not a JSON-RPC 2.0 message without answering, and its client would wait out its whole
    timeout, so such a line is answered here with the error JSON-RPC defines for it."""
    server = build(reader)
    import anyio
    import mcp.types as types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    lines = _ScreenedStdin()

    async def main() -> None:
        try:
            async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
                answers = write_stream.clone()

                async def answer(problem: Problem) -> None:
                    error = types.ErrorData(code=problem.code, message=problem.message)
                    await answers.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=problem.id, error=error)))

                lines.answer = answer
                async with answers:
                    await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            lines.release()

    anyio.run(main)


# -- the JSON-RPC envelope ------------------------------------------------------------------

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


class Problem(NamedTuple):
    """Why a line is not a message the server can take, as its JSON-RPC error response."""

    id: str | int | None  # the request's id when it could be read, else None ("id": null)
    code: int
    message: str


def screen(line: bytes) -> Problem | None:
    """The error a line of the stdio transport is answered with, or None when it is a JSON-RPC
    2.0 message to pass on (a request, a notification, a response). A notification with
    params of the wrong shape gets no answer (JSON-RPC never answers one): None too; the SDK
    drops it."""
    try:
        message = _load(line)
    except RecursionError:  # nested deeper than Python's parser goes: not a message okfgit can read
        return Problem(None, PARSE_ERROR, "Parse error: JSON nested too deeply")
    except ValueError as exc:  # not JSON, not UTF-8
        return Problem(None, PARSE_ERROR, f"Parse error: {exc}")
    if not isinstance(message, dict):
        kind = "a batch (an array), which MCP does not use" if isinstance(message, list) else "not an object"
        return Problem(None, INVALID_REQUEST, f"Invalid Request: the message is {kind}")
    ident = message.get("id")
    valid_id = _usable_id(ident)
    answer_to = ident if valid_id else None
    if message.get("jsonrpc") != "2.0":
        return Problem(answer_to, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "id" in message and not valid_id:
        return Problem(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string (of UTF-8 text) or an '
                                              'integer (of at most 100 digits)')
    if "method" not in message:
        if valid_id and (isinstance(message.get("result"), dict) or isinstance(message.get("error"), dict)):
            return None  # the client's response to a request of the server's
        return Problem(answer_to, INVALID_REQUEST, 'Invalid Request: no "method"')
    if not isinstance(message["method"], str):
        return Problem(answer_to, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    if "params" in message and message["params"] is not None and not isinstance(message["params"], dict):
        if not valid_id:
            return None  # a notification is never answered
        return Problem(answer_to, INVALID_PARAMS, 'Invalid params: "params" must be an object (by name)')
    return None


def _sdk_refuses(line: bytes) -> Problem | None:
    """What ``screen`` passed but the SDK's own reader would drop (its parser stops at about
    200 levels of nesting, for one), as an Invalid Request."""
    from mcp.types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception:  # noqa: BLE001 - whatever the SDK cannot take is answered, never dropped
        ident = _load(line).get("id")
        return Problem(ident if _usable_id(ident) else None, INVALID_REQUEST,
                       "Invalid Request: not a message the MCP SDK can read (nested too deeply, text that is not "
                       "UTF-8, or not an MCP message)")
    return None


def _load(line: bytes) -> Any:
    """``line`` as JSON; an integer of more than 100 digits reads as a float (Python would
    refuse to print one past 4,300 digits), so that it is no usable id."""
    return json.loads(line, parse_int=lambda text: int(text) if len(text) <= 100 else float(text))


def _usable_id(ident: object) -> bool:
    """An id the answer can carry back: an integer, or a string of UTF-8 text (a ``\\ud800``
    escape reads as a lone surrogate, which no UTF-8 output takes)."""
    if type(ident) is str:
        try:
            ident.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return type(ident) in (str, int)


class _ScreenedStdin:
    """The process's stdin as the SDK reads it (``async for line``), without the lines
    ``screen`` refuses, which are answered through ``answer``. As the SDK does for its own
    stdin, fd 0 is pointed at the null device while serving (a git subprocess must not read
    the protocol) and the wire is read from a private duplicate; ``release`` puts it back."""

    def __init__(self) -> None:
        import fcntl

        self._wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self._file: Any = None
        self.answer: Callable[[Problem], Awaitable[None]] | None = None

    def __aiter__(self) -> _ScreenedStdin:
        return self

    async def __anext__(self) -> str:
        import anyio

        if self._file is None:
            self._file = anyio.wrap_file(os.fdopen(self._wire, "rb", closefd=False))
        while True:
            line = await self._file.readline()
            if not line:
                raise StopAsyncIteration
            if not line.strip():
                continue
            problem = screen(line) or _sdk_refuses(line)
            if problem is None:
                return str(line.decode("utf-8", errors="replace"))
            if self.answer is not None:
                await self.answer(problem)

    def release(self) -> None:
        os.dup2(self._wire, 0)
        os.close(self._wire)

