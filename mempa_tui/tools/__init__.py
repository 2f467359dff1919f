"""World tools: typed functions over the working copy, exposed to the PA as ``mcp_state_<name>``.

Paper Section 3.3 'World and Tools', Appendix C.2 and Table 7. Each domain lives in its own private
module (``_email.py`` ...) and lists its tools in ``__all__``; :func:`default_registry` collects
every domain module named in ``_DOMAIN_MODULES``: all 26 domains and 83 tools of Table 7. The
write tags the Autonomy Level wrapper holds by are set on each tool (``@tool(tag=...)``) and listed
by :func:`catalog` (``mempa tools list``); ``mempa_tui.mcp`` serves the same registry over MCP.
"""

from __future__ import annotations

import importlib
from functools import cache

from mempa_tui.tools._common import DOMAINS, ToolError
from mempa_tui.tools._registry import CatalogEntry, ToolDef, ToolRegistry, ToolResult, ToolTag, tool

__all__ = [
    "DOMAINS",
    "CatalogEntry",
    "ToolDef",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolTag",
    "catalog",
    "default_registry",
    "domain_tools",
    "tool",
]

#: Domain modules (under mempa_tui.tools) whose ``__all__`` lists ToolDefs, in Table 7 order.
_DOMAIN_MODULES: tuple[str, ...] = (
    "_email",
    "_messages",
    "_calendar",
    "_documents",
    "_contacts",
    "_phone",
    "_maps_places",
    "_weather",
    "_shopping",
    "_shipping",
    "_finance",
    "_appointments",
    "_restaurants",
    "_room_booking",
    "_hotels",
    "_reimbursement",
    "_conference_registration",
    "_grade_submission",
    "_flights",
    "_scholarly_papers",
    "_recipes",
    "_comic_store",
    "_cinema",
    "_exhibitions",
    "_media_transcoding",
    "_household",
)


def domain_tools() -> list[ToolDef]:
    """Every ToolDef of the domain modules, in module order.

    Raises:
        TypeError: a module lists something in ``__all__`` that is not a ToolDef.
    """
    found: list[ToolDef] = []
    for name in _DOMAIN_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        for attr in module.__all__:
            value = getattr(module, attr)
            if not isinstance(value, ToolDef):
                raise TypeError(f"{module.__name__}.{attr} is listed in __all__ but is not a tool")
            found.append(value)
    return found


@cache
def _default() -> ToolRegistry:
    return ToolRegistry(domain_tools())


def default_registry() -> ToolRegistry:
    """The registry of every built tool (shared; registries hold no per-run state)."""
    return _default()


def catalog() -> list[CatalogEntry]:
    """The tool catalog by Table 7 domain order (for ``mempa tools list``)."""
    return default_registry().catalog()
