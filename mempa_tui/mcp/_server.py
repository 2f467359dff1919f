"""The world tools as an MCP server (official ``mcp`` SDK, low-level ``Server``), over stdio.

Source: paper Appendix C.2: the tools run in a separate server the PA reaches through the Model
Context Protocol, and the PA sees each one under the prefix ``mcp_state_``. The server is named
``state`` and lists the bare Table 7 names (``calendar_event_create``); a host that prefixes tools
with ``mcp_<server>_`` shows them to its model as ``mcp_state_calendar_event_create``, the names
the in-process registry gives the PA. Calls are accepted under either name.

Schemas, descriptions and write tags come from the registry; nothing is declared twice. A call the
registry rejects (bad argument, unknown tool, unknown id) comes back as a tool result with
``is_error`` set and the registry's message as its text, so the agent can correct it.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from mempa_tui.mcp._session import WorldSession
from mempa_tui.tools import ToolDef

__all__ = ["SERVER_NAME", "build_server", "mcp_tool", "serve_stdio"]

#: The MCP server name; hosts that prefix ``mcp_<server>_`` show tools as ``mcp_state_<name>``.
SERVER_NAME = "state"


def mcp_tool(tdef: ToolDef) -> types.Tool:
    """The MCP description of one registry tool.

    The write tag is stated in ``_meta`` (``mempa/write_tag``: draft, routine, key, outward or
    null for reads) and mirrored in the standard hints: ``read_only_hint`` for reads and
    ``open_world_hint`` for outward writes.
    """
    return types.Tool(
        name=tdef.name,
        description=tdef.description,
        input_schema=dict(tdef.parameters),
        annotations=types.ToolAnnotations(
            read_only_hint=not tdef.write,
            open_world_hint=tdef.outward,
            destructive_hint=tdef.write and tdef.tag in ("key", "outward"),
        ),
        _meta={"mempa/domain": tdef.domain, "mempa/write_tag": tdef.tag},
    )


def build_server(session: WorldSession) -> Server[Any]:
    """A low-level MCP server whose tools run on ``session``'s working copy.

    Args:
        session: the opened world.

    Returns:
        The server; run it with :func:`serve_stdio` or any MCP transport.
    """
    tools = [mcp_tool(t) for t in session.registry.tools()]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments: object = params.arguments if params.arguments is not None else {}
        result = session.call(params.name, arguments)
        structured = result.data if result.ok and isinstance(result.data, dict) else None
        return types.CallToolResult(
            content=[types.TextContent(text=result.content)],
            structured_content=structured,
            is_error=not result.ok,
        )

    return Server(
        SERVER_NAME,
        version="1",
        instructions=(
            f"World tools of one MemPABench user at story time {session.at:%Y-%m-%dT%H:%M}. "
            "Dates are YYYY-MM-DD, times 24-hour HH:MM. A rejected call changes nothing; "
            "its message says which value failed and why."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(session: WorldSession) -> None:
    """Serve ``session``'s tools over this process's stdin/stdout until the client closes stdin."""
    server = build_server(session)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
