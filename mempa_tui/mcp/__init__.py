"""The world tools served over the Model Context Protocol (paper Appendix C.2).

``mempa mcp --user A --at 2026-03-10T09:00`` opens that user's fixture tree on a working copy at
that story time and serves every registry tool over stdio; the copy is discarded on exit unless
``--commit`` is given. See :mod:`mempa_tui.mcp._server` for the naming on each side.
"""

from __future__ import annotations

from mempa_tui.mcp._server import SERVER_NAME, build_server, mcp_tool, serve_stdio
from mempa_tui.mcp._session import CommitReport, WorldSession

__all__ = ["SERVER_NAME", "CommitReport", "WorldSession", "build_server", "mcp_tool", "serve_stdio"]
