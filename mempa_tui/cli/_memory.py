"""``mempa memory list``: the memory conditions a run can name (built-in, plugins, MCP profiles)."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

__all__ = ["cmd_memory_list"]


def cmd_memory_list(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Print the built-in conditions, the ``mempa.memory`` entry points and the MCP memory profiles.

    A plugin or profile that cannot be loaded is listed with its error (exit code 1), so a broken
    package is found before a run.
    """
    from mempa_tui.memory import ENTRY_POINT_GROUP, MEMORY_BUILDERS, MEMORY_OPTION_NAMES, entry_point_plugins
    from mempa_tui.memory._mcp import load_mcp_profile, mcp_profile_dirs
    from mempa_tui.memory._plugin import plugin_identity
    from mempa_tui.scoring import condition_label

    out = out or sys.stdout
    code = 0
    print("built-in conditions (--memory NAME):", file=out)
    for name in MEMORY_BUILDERS:
        options = ", ".join(MEMORY_OPTION_NAMES.get(name, ())) or "no options"
        print(f"  {name:<10} {condition_label(name)} ({options})", file=out)
    print(f"\nplugins declared as entry points in the {ENTRY_POINT_GROUP} group (--memory NAME):", file=out)
    found = entry_point_plugins()
    for name, ep in sorted(found.items()):
        try:
            print(f"  {name:<10} {plugin_identity(name)}", file=out)
        except ValueError as exc:
            print(f"  {name:<10} {ep.value}  BROKEN: {exc}", file=out)
            code = 1
    if not found:
        print("  (none installed)", file=out)
    folders = ", ".join(str(d) for d in mcp_profile_dirs())
    print(f"\nMCP memory profiles in {folders} (--memory mcp:NAME):", file=out)
    listed = 0
    for folder in mcp_profile_dirs():
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            listed += 1
            try:
                profile, _ = load_mcp_profile(str(path))
            except ValueError as exc:
                print(f"  mcp:{path.stem:<14} BROKEN: {exc}", file=out)
                code = 1
                continue
            transport = "streamable HTTP" if profile.server.url else "stdio"
            print(f"  mcp:{path.stem:<14} {path}  ({transport}; write {profile.write.tool}, search "
                  f"{profile.search.tool}; snapshots by {profile.snapshot.mode})", file=out)
    if not listed:
        print("  (none)", file=out)
    print("\nany class by import path: --memory pkg.module:ClassName or path/to/file.py:ClassName "
          "(the adapter: docs/memory-plugins.md)", file=out)
    return code
