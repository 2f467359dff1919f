"""Real-model checks of the embedded default through LLMClient (not part of the test suite).

Starts the embedded llama.cpp server with the packaged Qwen2.5-Coder-0.5B GGUF and runs, through
the same client the app uses: a plain reply, a forced tool call, tools with ``auto``, a JSON
reply under a schema, and a follow-up call that extends the previous prompt (prefix reuse). It
prints what came back, token counts and generation speed, what the server does with history
tool-call arguments as an object or a string, and the ratio of Qwen tokens to the client's
counter on the prompts used.

    python benchmarks/embedded_model.py                      # chat format from models/embedded.yaml
    python benchmarks/embedded_model.py --chat-format chatml-function-calling   # compare formats

Measured on a busy 2-core machine (llama-cpp-python 0.3.36, 1 thread): about 6-7 tokens/s for
plain text, ~2 s for a tool call whose prompt shares 183 of 253 tokens with the previous call
against ~12 s cold; the GGUF template forces calls and its auto calls are recovered from text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from mempa_tui.llm import (
    ChatMessage,
    LLMClient,
    Role,
    ToolSpec,
    load_profile,
    parse_json_reply,
)
from mempa_tui.llm.embedded import EmbeddedServer, ensure_weights

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    },
)
SEND = ToolSpec(
    name="send_email",
    description="Send an email.",
    parameters={
        "type": "object",
        "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
        "required": ["to", "subject", "body"],
    },
)
SYSTEM = ChatMessage(role="system", content="You are a personal assistant. Use the tools when they help.")
RATING = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
}


def show(label: str, client: LLMClient, started: float, completion: object) -> None:
    record = client.calls[-1]
    elapsed = time.perf_counter() - started
    rate = record.completion_tokens / elapsed if elapsed else 0.0
    print(f"\n== {label}  ({elapsed:.1f} s, prompt {record.prompt_tokens} tok, reused {record.reused_prefix_tokens}, "
          f"completion {record.completion_tokens} tok, {rate:.1f} completion tok/s overall)")
    print(completion)


def tokenizer_ratio(weights: Path, client: LLMClient, texts: list[str]) -> None:
    """Qwen's own token count vs the client's counter (the budget check's factor should cover it)."""
    try:
        from llama_cpp import Llama
    except ImportError:
        print("llama_cpp not importable here; skipping the tokenizer comparison")
        return
    vocab = Llama(model_path=str(weights), vocab_only=True, verbose=False)
    for text in texts:
        qwen = len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        ours = client.count_tokens(text)
        print(f"tokens: qwen {qwen:5d}  counter {ours:5d}  ratio {qwen / max(ours, 1):.2f}  ({text[:40]!r}...)")


async def history_argument_forms(base: str) -> None:
    """What llama.cpp's server does with history tool-call arguments as an object vs a string."""
    import httpx

    for arguments in ({"city": "Lisbon"}, '{"city": "Lisbon"}'):
        call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
        body = {
            "model": "m",
            "max_tokens": 24,
            "messages": [
                {"role": "user", "content": "Weather in Lisbon?"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
            ],
        }
        async with httpx.AsyncClient(timeout=300) as http:
            answer = await http.post(f"{base}/chat/completions", json=body)
        print(f"history arguments as {type(arguments).__name__}: HTTP {answer.status_code} {answer.text[:160]!r}")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chat-format", default=None, help="llama-cpp-python chat format, or 'gguf' for the GGUF template")
    parser.add_argument("--weights-dir", default="models/weights")
    args = parser.parse_args()
    profile = load_profile("embedded")
    if args.chat_format is not None:
        embedded = profile.options.embedded.model_copy(
            update={"chat_format": None if args.chat_format == "gguf" else args.chat_format}
        )
        profile = profile.model_copy(update={"options": profile.options.model_copy(update={"embedded": embedded})})
    started = time.perf_counter()
    weights = ensure_weights(args.weights_dir)
    print(f"weights ready at {weights} in {time.perf_counter() - started:.1f} s")
    print(f"chat format: {profile.options.embedded.chat_format or 'GGUF template'}")
    started = time.perf_counter()
    async with EmbeddedServer(profile, weights=weights) as ready:
        print(f"server up in {time.perf_counter() - started:.1f} s at {ready.default.api_base}")
        client = LLMClient(ready)
        ask = [SYSTEM, ChatMessage(role="user", content="What's the weather in Lisbon right now?")]

        t = time.perf_counter()
        plain = await client.complete(Role.PA, [SYSTEM, ChatMessage(role="user", content="Write two sentences about tea.")])
        show("plain reply", client, t, plain)

        t = time.perf_counter()
        forced = await client.complete(Role.PA, ask, tools=[WEATHER, SEND], tool_choice="get_weather")
        show("forced tool_choice=get_weather", client, t, forced)

        t = time.perf_counter()
        auto = await client.complete(Role.PA, ask, tools=[WEATHER, SEND], tool_choice="auto")
        show("tools with auto", client, t, auto)

        t = time.perf_counter()
        follow = [*ask, ChatMessage(role="assistant", tool_calls=forced.tool_calls)]
        follow += [ChatMessage(role="tool", tool_call_id=c.id, content="18 C, light rain") for c in forced.tool_calls]
        answer = await client.complete(Role.PA, follow, tools=[WEATHER, SEND], tool_choice="auto")
        show("follow-up after the tool result (prompt extends the previous one)", client, t, answer)

        t = time.perf_counter()
        rating = await client.complete(
            Role.JUDGE,
            [ChatMessage(role="user", content="Rate this reply from 1 to 5 and say why: 'Sure, done.' Answer in JSON.")],
            json_schema=RATING,
        )
        show("json_schema (json_object + schema on llama.cpp)", client, t, rating)
        try:
            print("parsed:", parse_json_reply(rating.text))
        except ValueError as exc:
            print("JSON reply did not parse:", exc)

        await history_argument_forms(str(ready.default.api_base))

        prompt_texts = [m.content for m in ask] + [json.dumps([WEATHER.model_dump(), SEND.model_dump()])]
        prompt_texts.append("On 2025-03-14 at 09:30 the invoice #48213 for 1,250.75 EUR was paid.")
        tokenizer_ratio(weights, client, prompt_texts)
        print("\ncalls:")
        for record in client.calls:
            print(" ", record.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
