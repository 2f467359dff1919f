"""Helpers shared by the world-tool tests: call a tool through the default registry and check the
result's envelope (a success carries JSON equal to its data; a failure carries its error as content)."""

from __future__ import annotations

import json
from typing import Any

from mempa_tui.tools import ToolResult, default_registry
from mempa_tui.world import WorkingCopy

REG = default_registry()


def ok(wc: WorkingCopy, tool_name: str, /, **args: Any) -> Any:
    """Call ``tool_name`` and return its data; fails the test if the call was rejected."""
    res = REG.call(wc, tool_name, args)
    assert res.ok, res.content
    assert json.loads(res.content) == res.data
    return res.data


def fail(wc: WorkingCopy, tool_name: str, /, **args: Any) -> ToolResult:
    """Call ``tool_name`` and return the rejection; fails the test if the call succeeded."""
    res = REG.call(wc, tool_name, args)
    assert not res.ok and res.error == res.content
    return res
