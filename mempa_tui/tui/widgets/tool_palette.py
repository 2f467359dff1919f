"""The PA seat's tool palette entries: each tool by domain and bare name, filtered by what the
person types (issue 16.6), instead of one long list of ``mcp_state_*`` names.

A world tool ``mcp_state_email_message_send`` shows as ``Email · message_send`` (its paper Table 7
domain, from :func:`mempa_tui.tools.catalog`, and its name without the prefix and the domain); an
interaction tool ``IX_verbosity`` as ``Interaction · verbosity``; a tool the catalog does not know
(a memory plugin's, say) as ``Other · <name>``. The value a palette entry stands for is always the
full tool name the PA calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from pydantic import BaseModel

from mempa_tui.tools import catalog
from mempa_tui.world.working_copy import strip_tool_prefix

__all__ = ["PaletteEntry", "filter_palette", "palette_entry"]


class PaletteEntry(BaseModel):
    """One tool as the palette lists it."""

    name: str
    """The full tool name (``mcp_state_<tool>`` or ``IX_<attribute>``), what is called."""
    domain: str
    """The domain's title (``Email``, ``Calendar``...), ``Interaction`` or ``Other``."""
    bare: str
    """The name without prefix and domain (``message_send``)."""

    @property
    def label(self) -> str:
        """``<domain> · <bare name>``."""
        return f"{self.domain} · {self.bare}"


@cache
def _domains() -> dict[str, tuple[str, str]]:
    """Tool name without prefix -> (domain key, domain title)."""
    return {e.name: (e.domain, e.domain_title) for e in catalog()}


def palette_entry(name: str) -> PaletteEntry:
    """The palette entry of tool ``name`` (see the module docstring)."""
    if name.startswith("IX_"):
        return PaletteEntry(name=name, domain="Interaction", bare=name.removeprefix("IX_"))
    short = strip_tool_prefix(name)
    found = _domains().get(short)
    if found is None:
        return PaletteEntry(name=name, domain="Other", bare=short)
    key, title = found
    bare = short
    for prefix in (f"{key}_", f"{key.removesuffix('s')}_"):
        if short.startswith(prefix) and len(short) > len(prefix):
            bare = short[len(prefix):]
            break
    return PaletteEntry(name=name, domain=title, bare=bare)


def filter_palette(names: Iterable[str], query: str) -> list[PaletteEntry]:
    """The tools whose domain or name holds every word of ``query`` (case-insensitive, in any
    order; ``_`` and spaces alike), in the order given; all of them for an empty query.

    Example: ``"email send"`` keeps ``Email · message_send`` and ``Email · draft_send``.
    """
    words = query.lower().replace("_", " ").split()
    out = []
    for name in names:
        entry = palette_entry(name)
        haystack = f"{entry.domain} {entry.bare} {strip_tool_prefix(name)}".lower().replace("_", " ")
        if all(word in haystack for word in words):
            out.append(entry)
    return out
