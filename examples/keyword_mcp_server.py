"""The keyword memory of keyword_memory.py as an MCP server: the reference for ``--memory mcp:keyword``.

    python examples/keyword_mcp_server.py --data DIR              # stdio
    python examples/keyword_mcp_server.py --data DIR --http PORT  # streamable HTTP on 127.0.0.1

Tools: ``remember(text, context)`` stores one turn, ``recall(query, context, limit)`` returns the
stored turns sharing the most words with the query, ``export_store()`` / ``import_store(data)``
dump and replace the whole store. Every write is saved to ``DIR/store.json`` before the tool
returns, so a copy of DIR is a copy of the store. It knows nothing of mempa.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from mcp.server.mcpserver import MCPServer

__version__ = "0.1.0"

_WORD = re.compile(r"[a-z0-9']{3,}")
_COMMON = frozenset("the and for you your with this that have from are was can will would please about".split())


def keywords(text: str) -> set[str]:
    """Lower-case words of three letters or more, less a few very common ones."""
    return set(_WORD.findall(text.lower())) - _COMMON


def build(data: Path) -> MCPServer:
    """The server over the store in ``data/store.json`` (created when missing)."""
    data.mkdir(parents=True, exist_ok=True)
    path = data / "store.json"
    turns: list[dict[str, str]] = json.loads(path.read_text("utf-8"))["turns"] if path.exists() else []
    server = MCPServer("keyword-memory", version=__version__, log_level="WARNING")

    def save() -> None:
        path.write_text(json.dumps({"turns": turns}), "utf-8")

    @server.tool()
    def remember(text: str, context: str = "") -> str:
        """Store one conversation turn."""
        turns.append({"context": context, "text": text})
        save()
        return json.dumps({"stored": len(turns)})

    @server.tool()
    def recall(query: str, context: str = "", limit: int = 5) -> str:
        """Stored turns of the context sharing the most words with the query, best first."""
        wanted = keywords(query)
        scored = [(len(wanted & keywords(t["text"])), i) for i, t in enumerate(turns) if t["context"] == context]
        best = sorted((s for s in scored if s[0] > 0), reverse=True)[:limit]
        return json.dumps({"results": [{"id": f"turn-{i}", "text": turns[i]["text"], "score": n} for n, i in best]})

    @server.tool()
    def export_store() -> str:
        """The whole store as JSON text."""
        return json.dumps({"turns": turns})

    @server.tool()
    def import_store(data: str) -> str:
        """Replace the whole store with an export."""
        turns[:] = json.loads(data)["turns"]
        save()
        return json.dumps({"stored": len(turns)})

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="folder of the store")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT")
    args = parser.parse_args()
    if args.http:
        build(args.data).run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        build(args.data).run("stdio")
