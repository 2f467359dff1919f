"""Tokens per world tool, as the PA's model sees them (a benchmark, not a test; needs the ``embedded`` extra).

Counts are exact for the embedded model: the tools are rendered by the embedded llama.cpp server's
own chat template (``/apply-template``, with the tools exactly as the PA's client sends them,
:func:`~mempa_tui.llm._wire.tools_for`) and tokenized by its own tokenizer (``/tokenize``). The
server is started for the count and stopped right after (nothing is generated).

Printed:
- per tool: tokens of its whole rendered entry, of its description (the JSON string) and of its
  ``parameters`` schema (rendered with the template's own separators), and within the schema the
  arguments' own description strings; the rest of an entry is the
  ``{"type": "function", "function": {"name": ...}}`` frame;
- total, mean, min and max per tool, and the share of description tokens;
- the whole block as the PA sees it: the PA's fixed prefix (instructions and every tool, with the
  template's tool wrapper) minus the same prompt without tools, and the whole fixed prefix.

    python benchmarks/bench_tools.py                 # table of every tool
    python benchmarks/bench_tools.py --top 15        # only the 15 largest tools
    python benchmarks/bench_tools.py --json out.json # also write the counts as JSON

The README's figure for instructions and tools was about 19,350 tokens before issue 12.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mempa_tui.llm import load_profile  # noqa: E402
from mempa_tui.llm._wire import tools_for, wire_messages  # noqa: E402
from mempa_tui.llm.embedded import EmbeddedServer  # noqa: E402
from mempa_tui.llm.types import Role  # noqa: E402

#: The same counts on the code before issue 12 tightened the descriptions (commit e08d871, 0.5B
#: Qwen2.5-Coder GGUF, xllamacpp's template): printed beside the current ones.
BEFORE = {"entries": 18_836, "description": 3_274, "argument_descriptions": 5_121, "block": 18_913,
          "prefix": 19_447}

_TOOLS_BLOCK = re.compile(r"<tools>\n(.*?)\n</tools>", re.S)


async def _tokens(http: httpx.AsyncClient, root: str, text: str) -> int:
    """Number of tokens of ``text`` under the server's tokenizer (no BOS, special tokens parsed)."""
    reply = await http.post(f"{root}/tokenize", json={"content": text, "add_special": False, "parse_special": True})
    reply.raise_for_status()
    return len(reply.json()["tokens"])


async def _template(http: httpx.AsyncClient, root: str, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]] | None) -> str:
    """The prompt text the server's chat template makes of ``messages`` and ``tools``."""
    body: dict[str, Any] = {"messages": messages}
    if tools:
        body["tools"] = tools
    reply = await http.post(f"{root}/apply-template", json=body)
    reply.raise_for_status()
    return str(reply.json()["prompt"])


def _separators(line: str) -> tuple[str, str]:
    """The item and key separators the template's ``tojson`` used in one rendered tool line."""
    item = ", " if '", "' in line or '}, "' in line else ","
    key = ": " if '": ' in line else ":"
    return item, key


def _descriptions(node: Any) -> list[str]:
    """Every ``description`` string inside a parameters schema (the arguments' own texts)."""
    if isinstance(node, dict):
        found = [node["description"]] if isinstance(node.get("description"), str) else []
        for key, value in node.items():
            if key != "description":
                found += _descriptions(value)
        return found
    if isinstance(node, list):
        return [text for item in node for text in _descriptions(item)]
    return []


async def measure(profile_name: str) -> dict[str, Any]:
    """Start the embedded server, count every tool's tokens, stop it.

    Returns:
        ``{"tools": [{"name", "entry", "description", "parameters", "argument_descriptions"}...], "block": int,
        "prefix": int, "no_tools": int, "wrapper": int}`` (token counts).

    Raises:
        RuntimeError: the chat template does not render tools one per line inside ``<tools>``
            (per-tool counts would be wrong; the block total is still exact).
    """
    from mempa_tui.runner.setup import pa_prefix

    profile = load_profile(profile_name)
    fixed = pa_prefix()
    tools = tools_for(list(fixed.tools), None, "llama_cpp") or []
    messages = [*wire_messages(list(fixed.messages)), {"role": "user", "content": "Hello."}]
    async with EmbeddedServer(profile) as ready:
        root = str(ready.spec_for(Role.PA).api_base).removesuffix("/v1")
        async with httpx.AsyncClient(timeout=600) as http:
            with_tools = await _template(http, root, messages, tools)
            without = await _template(http, root, messages, None)
            prefix_tokens = await _tokens(http, root, with_tools)
            no_tools = await _tokens(http, root, without)
            found = _TOOLS_BLOCK.search(with_tools)
            lines = found.group(1).split("\n") if found else []
            if len(lines) != len(tools):
                raise RuntimeError(f"the chat template rendered {len(lines)} tool lines for {len(tools)} tools")
            item, key = _separators(lines[0])
            rows: list[dict[str, Any]] = []
            entries_total = 0
            for tool, line in zip(tools, lines, strict=True):
                fn = tool["function"]
                if json.loads(line)["function"]["name"] != fn["name"]:
                    raise RuntimeError(f"tool line order differs from the tools sent at {fn['name']}")
                entry = await _tokens(http, root, line)
                entries_total += entry
                desc = await _tokens(http, root, json.dumps(fn["description"], ensure_ascii=False))
                params = await _tokens(http, root, json.dumps(fn["parameters"], ensure_ascii=False,
                                                              separators=(item, key)))
                arg_desc = 0
                for text in _descriptions(fn["parameters"]):
                    arg_desc += await _tokens(http, root, json.dumps(text, ensure_ascii=False))
                rows.append({"name": fn["name"], "entry": entry, "description": desc, "parameters": params,
                             "argument_descriptions": arg_desc})
    block = prefix_tokens - no_tools
    return {"tools": rows, "block": block, "prefix": prefix_tokens, "no_tools": no_tools,
            "wrapper": block - entries_total}


def report(counts: dict[str, Any], top: int | None) -> None:
    """Print the table and the totals."""
    rows = sorted(counts["tools"], key=lambda r: -r["entry"])
    shown = rows[:top] if top else rows
    print(f"{'tool':<44} {'entry':>6} {'descr':>6} {'params':>6} {'(arg descr)':>11}")
    for r in shown:
        print(f"{r['name']:<44} {r['entry']:>6} {r['description']:>6} {r['parameters']:>6} "
              f"{r['argument_descriptions']:>11}")
    if top and top < len(rows):
        print(f"... {len(rows) - top} smaller tools not shown")
    entries = [r["entry"] for r in rows]
    desc = sum(r["description"] for r in rows)
    params = sum(r["parameters"] for r in rows)
    arg_desc = sum(r["argument_descriptions"] for r in rows)
    total = sum(entries)
    print()
    print(f"tools: {len(rows)}; tokens per tool entry: total {total:,}, mean {total / len(rows):.1f}, "
          f"min {min(entries)}, max {max(entries)}")
    print(f"description tokens {desc:,} ({desc / total:.0%} of the entries), parameter-schema tokens {params:,} "
          f"({params / total:.0%}; of them argument descriptions {arg_desc:,}); the rest is each entry's name and frame")
    print(f"the tool block as the PA sees it (chat template's wrapper included): {counts['block']:,} tokens "
          f"(wrapper and separators {counts['wrapper']:,})")
    print(f"the PA's fixed prefix (instructions + tools + template), one user word: {counts['prefix']:,} tokens; "
          f"without tools {counts['no_tools']:,}")
    now = {"entries": total, "description": desc, "argument_descriptions": arg_desc, "block": counts["block"],
           "prefix": counts["prefix"]}
    print()
    print(f"{'before issue 12 -> now':<28} {'before':>8} {'now':>8} {'change':>8}")
    for key, was in BEFORE.items():
        print(f"{key:<28} {was:>8,} {now[key]:>8,} {now[key] - was:>+8,}")


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", default="embedded", help="profile (default embedded)")
    parser.add_argument("--top", type=int, default=None, help="show only the N largest tools")
    parser.add_argument("--json", default=None, help="also write the counts to this JSON file")
    args = parser.parse_args()
    counts = asyncio.run(measure(args.model))
    report(counts, args.top)
    if args.json:
        Path(args.json).write_text(json.dumps(counts, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
