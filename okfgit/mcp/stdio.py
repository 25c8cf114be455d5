"""The MCP SDK adapter: ``mcp.tools``' tools and resources served over stdio.

Built on the official Python SDK's low-level ``Server`` (constructor handlers), because
both the tool list and the resources are computed per call from the tiers at HEAD. The
SDK is an optional extra; without it ``okfgit mcp`` is a usage error saying how to
install it. Nothing here may print: stdout is the protocol.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from okfgit.errors import UsageError
from okfgit.mcp import tools

if TYPE_CHECKING:
    from mcp.server import Server

INSTALL_HINT = "pip install 'okfgit[mcp]'"
INSTRUCTIONS = (
    "okfgit serves this project's OKF knowledge base (tiers: job > project > global, read at HEAD). "
    "Consult it before you decide: `search` by words, type and tags, then `cat` the concepts that bear "
    "on the task; `ls` and the okf://<tier>/<path> index resources descend the indexes; `links` shows "
    "what a concept links to and what links to it. Cite what you use as tier:path@oid. Write only to "
    "the active run with `note` and `log`; the project and global tiers change through `okfgit promote`."
)


def require_sdk() -> None:
    """UsageError (exit 2) naming the install command when the MCP SDK is missing."""
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError:
        raise UsageError(f"`okfgit mcp` needs the MCP Python SDK: {INSTALL_HINT}") from None


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
    """Serve over stdin/stdout until the client closes the connection."""
    server = build(reader)
    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)

