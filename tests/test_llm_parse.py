"""Pure reply-normalisation helpers: think blocks, arguments, ids, calls in text, JSON replies."""

from __future__ import annotations

import pytest

from mempa_tui.llm import JSONReplyError, parse_json_reply
from mempa_tui.llm._parse import (
    CallIds,
    RawToolCall,
    normalise_arguments,
    normalise_tool_calls,
    recover_tool_calls,
    split_thinking,
)


@pytest.mark.parametrize(
    ("raw", "text", "thinking"),
    [
        ("<think>plan it</think>Hello", "Hello", "plan it"),
        ("<think></think>\n\nHello", "Hello", ""),
        ("<think>a</think>Hi <think>b</think>there", "Hi there", "a\n\nb"),
        ("<think>still thinking and never closed", "", "still thinking and never closed"),
        ("reasoning opened in the prompt</think>Answer", "Answer", "reasoning opened in the prompt"),
        ("Plain reply", "Plain reply", ""),
        ("<THINK>x</THINK>y", "y", "x"),
    ],
)
def test_split_thinking(raw: str, text: str, thinking: str) -> None:
    assert split_thinking(raw) == (text, thinking)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"a": 1}, {"a": 1}),
        ('{"a": 1}', {"a": 1}),
        ('"{\\"a\\": 1}"', {"a": 1}),
        (None, {}),
        ("", {}),
        ("   ", {}),
    ],
)
def test_normalise_arguments_accepts(raw: object, expected: dict[str, object]) -> None:
    assert normalise_arguments(raw) == (expected, None)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ('{"a": 1', "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ("42", "must be a JSON object, got int"),
        (["x"], "got list"),
    ],
)
def test_normalise_arguments_rejects(raw: object, fragment: str) -> None:
    arguments, error = normalise_arguments(raw)
    assert arguments == {}
    assert error is not None and fragment in error


def test_call_ids_fill_missing_empty_and_duplicate_ids() -> None:
    ids = CallIds(seen={"call_1"})
    calls = normalise_tool_calls(
        [
            RawToolCall(id=None, name="a", arguments={}),
            RawToolCall(id="", name="b", arguments={}),
            RawToolCall(id="x", name="c", arguments={}),
            RawToolCall(id="x", name="d", arguments={}),
        ],
        ids,
    )
    got = [c.id for c in calls]
    assert got[2] == "x"
    assert all(got) and len(set(got) | {"call_1"}) == 5


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "lookup", "arguments": {"q": "tea"}}',
        'Let me check.\n```json\n{"name": "lookup", "arguments": {"q": "tea"}}\n```',
        'Let me check.\n```\n{"name": "lookup", "arguments": {"q": "tea"}}\n```',
        '{"name": "lookup", "parameters": {"q": "tea"}}',
        '{"type": "function", "function": {"name": "lookup", "arguments": "{\\"q\\": \\"tea\\"}"}}',
        '[{"name": "lookup", "arguments": {"q": "tea"}}]',
        '<tool_call>\n{"name": "lookup", "arguments": {"q": "tea"}}\n</tool_call>',
        'Sure <tool_call>{"name": "lookup", "arguments": {"q": "tea"}}',
    ],
)
def test_recover_tool_call_shapes(text: str) -> None:
    remaining, calls = recover_tool_calls(text, CallIds())
    assert [(c.name, c.arguments, c.recovered_from_text) for c in calls] == [("lookup", {"q": "tea"}, True)]
    assert "lookup" not in remaining and "{" not in remaining and "```" not in remaining
    assert calls[0].id


def test_recover_keeps_prose_and_several_calls_in_order() -> None:
    text = 'First {"name": "a", "arguments": {}} then\n```json\n{"name": "b", "arguments": {"n": 2}}\n```\nDone.'
    remaining, calls = recover_tool_calls(text, CallIds())
    assert [c.name for c in calls] == ["a", "b"]
    assert remaining.startswith("First") and remaining.endswith("Done.")
    assert len({c.id for c in calls}) == 2


def test_recover_double_encoded_arguments() -> None:
    # Qwen's GGUF template renders history arguments with `tojson`, so the model echoes them
    # JSON-encoded twice (seen on the real embedded model).
    _, calls = recover_tool_calls('{"name": "get_weather", "arguments": "{\\"city\\": \\"Lisbon\\"}"}', CallIds())
    assert calls[0].arguments == {"city": "Lisbon"} and calls[0].arguments_error is None


def test_recover_keeps_empty_and_unknown_names() -> None:
    _, calls = recover_tool_calls('{"name": "", "arguments": {"x": 1}}', CallIds())
    assert calls[0].name == "" and calls[0].arguments == {"x": 1}
    _, calls = recover_tool_calls('{"name": "no_such_tool", "arguments": {}}', CallIds())
    assert calls[0].name == "no_such_tool"


def test_recover_flags_bad_arguments_in_text() -> None:
    _, calls = recover_tool_calls('{"name": "a", "arguments": "{broken"}', CallIds())
    assert calls[0].arguments == {} and calls[0].arguments_error is not None


@pytest.mark.parametrize(
    "text",
    [
        'The contact is {"name": "Alice", "email": "a@example.org"}.',
        "No JSON here at all.",
        '```python\n{"name": "a", "arguments": {}}\n```',
        '{"arguments": {"x": 1}}',
    ],
)
def test_recover_leaves_other_json_alone(text: str) -> None:
    remaining, calls = recover_tool_calls(text, CallIds())
    assert calls == [] and remaining == text


@pytest.mark.parametrize(
    "text",
    [
        '{"score": 4, "reason": "fine"}',
        '```json\n{"score": 4, "reason": "fine"}\n```',
        'Here you go:\n```\n{"score": 4, "reason": "fine"}\n```\nHope that helps.',
        'My rating: {"score": 4, "reason": "fine"} as asked.',
        '<think>hmm</think>{"score": 4, "reason": "fine"}',
    ],
)
def test_parse_json_reply_tolerates_wrapping(text: str) -> None:
    assert parse_json_reply(text) == {"score": 4, "reason": "fine"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty reply"),
        ("I would rate it four.", "found none"),
        ("[1, 2, 3]", "JSON list"),
        ('{"score": 4, ', "found none"),
    ],
)
def test_parse_json_reply_errors_name_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(JSONReplyError, match=fragment):
        parse_json_reply(text)


# ---- issue 15 point 5: repairs ------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        '"\\"{\\\\\\"a\\\\\\": 1}\\""',  # encoded three times
        '{\\"a\\": 1}',  # an encoded object's body: escaped quotes, no outer quotes
        ' "{\\"a\\": 1}" ',
    ],
)
def test_normalise_arguments_decodes_objects_encoded_more_than_once(raw: str) -> None:
    assert normalise_arguments(raw) == ({"a": 1}, None)


def test_normalise_arguments_still_names_a_plain_string() -> None:
    arguments, error = normalise_arguments('"hello"')
    assert arguments == {} and error is not None and "got str" in error


@pytest.mark.parametrize("wire", ["ollama_chat", "openai"])
async def test_double_encoded_arguments_over_either_wire_are_decoded(wire: str) -> None:
    import json

    from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedToolCall
    from mempa_tui.llm.types import ChatMessage, Role, ToolSpec

    wanted = {"contact": "Colm Averill", "text": "running late"}
    raw = json.dumps(wanted).replace('"', '\\"')  # the encoded body, no outer quotes

    def responder(_request: object) -> ScriptedReply:
        return ScriptedReply(tool_calls=[ScriptedToolCall(name="send", arguments=raw)])

    async with ScriptedModelServer(responder) as server:
        client = LLMClient(server.profile({r: f"{wire}/scripted-{r.value}" for r in Role}))
        tools = [ToolSpec(name="send", description="send", parameters={"type": "object"})]
        got = await client.complete(Role.PA, [ChatMessage(role="user", content="x")], tools=tools)
    assert [(c.arguments, c.arguments_error) for c in got.tool_calls] == [(wanted, None)]


async def test_a_json_reply_sent_as_a_tool_call_is_repaired_not_failed() -> None:
    import json

    from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedReply, ScriptedToolCall
    from mempa_tui.llm.structured import complete_json
    from mempa_tui.llm.types import ChatMessage, Role

    memory = {"memory": "Prefers short replies.", "history": "[2026-03-02] asked for a text."}

    def responder(_request: object) -> ScriptedReply:
        return ScriptedReply(tool_calls=[ScriptedToolCall(name="save_memory", arguments=memory)])

    async with ScriptedModelServer(responder) as server:
        client = LLMClient(server.profile())
        got = await complete_json(
            client,
            Role.MEMORY,
            [ChatMessage(role="user", content="consolidate")],
            schema={"type": "object"},
            read=json.loads,
        )
    assert got.value == memory and got.error is None
    assert got.attempts == 1 and got.repaired == 1
