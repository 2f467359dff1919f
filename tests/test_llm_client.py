"""LLMClient end to end through litellm against the scripted model over loopback HTTP.

Every reply-normalisation case runs through both wire formats: Ollama native (``ollama_chat/``)
and OpenAI-compatible (``openai/``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from mempa_tui.llm import (
    ChatMessage,
    LLMClient,
    Role,
    ScriptedModelServer,
    ScriptedReply,
    ScriptedRequest,
    ScriptedToolCall,
    ToolCall,
    ToolSpec,
)

LOOKUP = ToolSpec(
    name="lookup",
    description="Look a word up.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)
SEND = ToolSpec(name="send", description="Send it.", parameters={"type": "object", "properties": {}})
WIRES = {"ollama": "ollama_chat/scripted-pa", "openai": "openai/scripted-pa"}


class Script:
    """Responder that plays queued replies (then ``default``) and keeps every request."""

    def __init__(self) -> None:
        self.replies: list[ScriptedReply | str] = []
        self.default: ScriptedReply | str = ScriptedReply(text="ok")
        self.seen: list[ScriptedRequest] = []

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        self.seen.append(request)
        return self.replies.pop(0) if self.replies else self.default


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
async def server(script: Script) -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer(script) as running:
        yield running
    assert running.errors == []


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_client(server: ScriptedModelServer, wire: str) -> Callable[..., LLMClient]:
    def make(**fields: Any) -> LLMClient:
        return LLMClient(server.profile({Role.PA: WIRES[wire], Role.JUDGE: WIRES[wire].replace("-pa", "-judge")}, **fields))

    return make


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


SYSTEM = ChatMessage(role="system", content="You are a careful assistant.")


async def ask(client: LLMClient, reply: ScriptedReply, script: Script, **kwargs: Any) -> Any:
    script.replies.append(reply)
    return await client.complete(Role.PA, [SYSTEM, user("hello")], **kwargs)


# -- think blocks -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "text", "thinking"),
    [
        ("<think>weigh options</think>Here it is.", "Here it is.", "weigh options"),
        ("<think></think>Here it is.", "Here it is.", ""),
        ("<think>never closed, all reasoning", "", "never closed, all reasoning"),
    ],
)
async def test_think_blocks_are_stripped(make_client: Callable[..., LLMClient], script: Script, raw: str, text: str, thinking: str) -> None:
    completion = await ask(make_client(), ScriptedReply(text=raw), script)
    assert completion.text == text
    assert completion.thinking == thinking
    assert "<think>" not in completion.text and "</think>" not in completion.text


async def test_separate_reasoning_field_goes_to_thinking(make_client: Callable[..., LLMClient], script: Script) -> None:
    completion = await ask(make_client(), ScriptedReply(text="Answer.", thinking="private steps"), script)
    assert completion.text == "Answer."
    assert "private steps" in completion.thinking


# -- tool-call arguments ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "arguments", "has_error"),
    [
        (ScriptedToolCall(name="lookup", arguments={"q": "tea"}, send_as="string"), {"q": "tea"}, False),
        pytest.param(
            ScriptedToolCall(name="lookup", arguments={"q": "tea"}, send_as="object"),
            {"q": "tea"},
            False,
            # litellm's response model warns when an OpenAI-wire server sends an object; harmless
            # at run time, but this suite turns warnings into errors.
            marks=pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
        ),
        (ScriptedToolCall(name="lookup", arguments='{"q": "tea"'), {}, True),
        (ScriptedToolCall(name="lookup", arguments="[1, 2]"), {}, True),
        (ScriptedToolCall(name="lookup", arguments=""), {}, False),
        (ScriptedToolCall(name="lookup", arguments=None), {}, False),
    ],
    ids=["string", "object", "invalid-json", "not-object", "empty", "none"],
)
async def test_tool_call_arguments_are_normalised(
    make_client: Callable[..., LLMClient], script: Script, call: ScriptedToolCall, arguments: dict[str, Any], has_error: bool
) -> None:
    completion = await ask(make_client(), ScriptedReply(tool_calls=[call]), script, tools=[LOOKUP])
    assert len(completion.tool_calls) == 1
    got = completion.tool_calls[0]
    assert got.name == "lookup"
    assert got.arguments == arguments
    assert (got.arguments_error is not None) == has_error
    assert not got.recovered_from_text


@pytest.mark.parametrize("bad_id", [None, ""], ids=["missing", "empty"])
async def test_missing_or_empty_ids_get_unique_ids(make_client: Callable[..., LLMClient], script: Script, bad_id: str | None) -> None:
    calls = [ScriptedToolCall(name="lookup", arguments={"q": str(i)}, id=bad_id) for i in range(3)]
    completion = await ask(make_client(), ScriptedReply(tool_calls=calls), script, tools=[LOOKUP])
    ids = [c.id for c in completion.tool_calls]
    assert len(ids) == 3 and all(i.strip() for i in ids) and len(set(ids)) == 3


# -- calls written as text ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"name": "lookup", "arguments": {"q": "tea"}}',
        'I will look it up.\n```json\n{"name": "lookup", "arguments": {"q": "tea"}}\n```',
        '```\n{"name": "lookup", "parameters": {"q": "tea"}}\n```',
        '<tool_call>\n{"name": "lookup", "arguments": {"q": "tea"}}\n</tool_call>',
        '[{"function": {"name": "lookup", "arguments": {"q": "tea"}}}]',
    ],
    ids=["bare", "json-fence", "plain-fence-parameters", "tool-call-tag", "function-list"],
)
async def test_call_written_as_text_is_recovered(make_client: Callable[..., LLMClient], script: Script, text: str) -> None:
    completion = await ask(make_client(), ScriptedReply(text=text), script, tools=[LOOKUP])
    assert [(c.name, c.arguments, c.recovered_from_text) for c in completion.tool_calls] == [("lookup", {"q": "tea"}, True)]
    assert "lookup" not in completion.text and "```" not in completion.text
    assert completion.tool_calls[0].id


async def test_recovered_call_with_empty_name_is_kept(make_client: Callable[..., LLMClient], script: Script) -> None:
    completion = await ask(make_client(), ScriptedReply(text='{"name": "", "arguments": {"q": "x"}}'), script, tools=[LOOKUP])
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [("", {"q": "x"})]


async def test_structured_call_with_empty_name_is_kept(make_client: Callable[..., LLMClient], script: Script) -> None:
    completion = await ask(make_client(), ScriptedReply(tool_calls=[ScriptedToolCall(name="", arguments={})]), script, tools=[LOOKUP])
    assert [c.name for c in completion.tool_calls] == [""]


async def test_no_recovery_without_tools_or_with_json_schema(make_client: Callable[..., LLMClient], script: Script) -> None:
    text = '{"name": "lookup", "arguments": {"q": "tea"}}'
    client = make_client()
    plain = await ask(client, ScriptedReply(text=text), script)
    assert plain.tool_calls == [] and plain.text == text
    schema = {"type": "object"}
    structured = await ask(client, ScriptedReply(text=text), script, tools=[LOOKUP], json_schema=schema)
    assert structured.tool_calls == [] and structured.text == text


# -- history wire shapes ----------------------------------------------------------------------------
def history_with_call() -> list[ChatMessage]:
    call = ToolCall(id="call_a", name="lookup", arguments={"q": "tea", "n": 2})
    empty = ToolCall(id="call_b", name="send", arguments={})
    return [
        SYSTEM,
        user("look up tea"),
        ChatMessage(role="assistant", tool_calls=[call, empty]),
        ChatMessage(role="tool", tool_call_id="call_a", name="lookup", content="a drink"),
        ChatMessage(role="tool", tool_call_id="call_b", name="send", content="sent"),
        user("thanks"),
    ]


async def test_history_arguments_use_each_wire_form(make_client: Callable[..., LLMClient], server: ScriptedModelServer, wire: str) -> None:
    await make_client().complete(Role.PA, history_with_call(), tools=[LOOKUP, SEND])
    assert server.rejected == []
    sent = server.requests[-1].body["messages"][2]["tool_calls"]
    raw = [c["function"]["arguments"] for c in sent]
    if wire == "ollama":
        assert raw == [{"q": "tea", "n": 2}, {}]
    else:
        assert [json.loads(r) for r in raw] == [{"q": "tea", "n": 2}, {}]
        assert all(isinstance(r, str) for r in raw)
    assert server.requests[-1].messages[2].tool_calls[0].arguments == {"q": "tea", "n": 2}


# -- tool choice ------------------------------------------------------------------------------------
async def test_forced_tool_choice_shape(make_client: Callable[..., LLMClient], server: ScriptedModelServer, wire: str) -> None:
    await make_client().complete(Role.PA, [SYSTEM, user("go")], tools=[LOOKUP, SEND], tool_choice="send")
    request = server.requests[-1]
    if wire == "ollama":
        assert request.tool_names == ["send"]
        assert "tool_choice" not in request.body
    else:
        assert request.tool_names == ["lookup", "send"]
        assert request.body["tool_choice"] == {"type": "function", "function": {"name": "send"}}


@pytest.mark.parametrize("choice", ["auto", "required"])
async def test_string_tool_choices(make_client: Callable[..., LLMClient], server: ScriptedModelServer, wire: str, choice: str) -> None:
    await make_client().complete(Role.PA, [SYSTEM, user("go")], tools=[LOOKUP, SEND], tool_choice=choice)
    request = server.requests[-1]
    assert request.tool_names == ["lookup", "send"]
    assert request.body.get("tool_choice") == (None if wire == "ollama" else choice)


async def test_unknown_forced_tool_is_refused_before_sending(make_client: Callable[..., LLMClient], server: ScriptedModelServer) -> None:
    with pytest.raises(ValueError, match="names no offered tool"):
        await make_client().complete(Role.PA, [user("go")], tools=[LOOKUP], tool_choice="nope")
    assert server.requests == []


# -- JSON output ------------------------------------------------------------------------------------
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


async def test_json_schema_request_per_wire(make_client: Callable[..., LLMClient], server: ScriptedModelServer, script: Script, wire: str) -> None:
    script.replies.append(ScriptedReply(text='```json\n{"score": 3}\n```'))
    completion = await make_client().complete(Role.PA, [user("rate")], json_schema=SCHEMA)
    request = server.requests[-1]
    if wire == "ollama":
        assert request.body["format"] == SCHEMA
    else:
        assert request.body["response_format"]["type"] == "json_schema"
        assert request.body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert request.json_schema == SCHEMA
    from mempa_tui.llm import parse_json_reply

    assert parse_json_reply(completion.text) == {"score": 3}


async def test_json_schema_for_llama_cpp_uses_json_object(script: Script) -> None:
    async with ScriptedModelServer(script, emulate_llama_cpp=True) as server:
        client = LLMClient(server.profile({Role.JUDGE: "openai/scripted-judge"}, wire="llama_cpp"))
        script.replies.append(ScriptedReply(text='{"score": 5}'))
        completion = await client.complete(Role.JUDGE, [user("rate")], json_schema=SCHEMA)
        assert server.rejected == []
        assert server.requests[-1].body["response_format"] == {"type": "json_object", "schema": SCHEMA}
        assert completion.text == '{"score": 5}'


# -- context window -------------------------------------------------------------------------------------
def long_history(turns: int, words: int = 120) -> list[ChatMessage]:
    messages = [SYSTEM]
    for i in range(turns):
        messages.append(user(f"question {i} " + "word " * words))
        call = ToolCall(id=f"c{i}", name="lookup", arguments={"q": f"item {i}"})
        messages.append(ChatMessage(role="assistant", tool_calls=[call]))
        messages.append(ChatMessage(role="tool", tool_call_id=f"c{i}", content="result " * words))
        messages.append(ChatMessage(role="assistant", content=f"answer {i} " + "text " * words))
    messages.append(user("the latest question"))
    return messages


async def test_over_long_prompt_is_trimmed_oldest_first(make_client: Callable[..., LLMClient], server: ScriptedModelServer) -> None:
    client = make_client(context_window=1500, max_tokens=200)
    messages = long_history(6)
    completion = await client.complete(Role.PA, messages, tools=[LOOKUP])
    sent = server.requests[-1].messages
    assert completion.trimmed_messages > 0
    assert client.calls[-1].trimmed_messages == completion.trimmed_messages
    assert len(sent) == len(messages) - completion.trimmed_messages
    assert sent[0].content == SYSTEM.content
    assert sent[-1].content == "the latest question"
    kept_tail = messages[len(messages) - (len(sent) - 1) :]
    assert [(m.role, m.content) for m in sent[1:]] == [(m.role, m.content) for m in kept_tail]
    assert sent[1].role == "user"
    answered = {c.id for m in sent for c in m.tool_calls}
    assert all(m.tool_call_id in answered for m in sent if m.role == "tool")
    kept_questions = [m.content.split()[1] for m in sent if m.role == "user" and m.content.startswith("question")]
    assert kept_questions == sorted(kept_questions) and "0" not in kept_questions


async def test_prompt_that_cannot_fit_is_refused(make_client: Callable[..., LLMClient], server: ScriptedModelServer) -> None:
    from mempa_tui.llm import ContextWindowError

    client = make_client(context_window=400, max_tokens=200)
    messages = [SYSTEM, user("word " * 600)]
    with pytest.raises(ContextWindowError) as caught:
        await client.complete(Role.PA, messages)
    error = caught.value
    assert error.context_window == 400 and error.max_tokens == 200 and error.prompt_tokens > 600
    assert "400" in str(error) and "200" in str(error)
    assert server.requests == []
    assert client.calls[-1].ok is False


async def test_ollama_gets_num_ctx_equal_to_the_window(server: ScriptedModelServer) -> None:
    client = LLMClient(server.profile({Role.PA: WIRES["ollama"]}, context_window=6000))
    await client.complete(Role.PA, [user("hi")])
    assert server.requests[-1].options["num_ctx"] == 6000


# -- accounting ----------------------------------------------------------------------------------------
async def test_call_records_and_reused_prefix(make_client: Callable[..., LLMClient], script: Script) -> None:
    client = make_client()
    script.default = ScriptedReply(text="ok", prompt_tokens=900, completion_tokens=7)
    first = [SYSTEM, user("one")]
    await client.complete(Role.PA, first, tools=[LOOKUP])
    second = [*first, ChatMessage(role="assistant", content="ok"), user("two")]
    await client.complete(Role.PA, second, tools=[LOOKUP])
    await client.complete(Role.JUDGE, second, tools=[LOOKUP])
    changed = [ChatMessage(role="system", content="A different system prompt."), user("one")]
    await client.complete(Role.PA, changed, tools=[LOOKUP])
    records = client.calls
    assert [r.role for r in records] == [Role.PA, Role.PA, Role.JUDGE, Role.PA]
    assert all(r.ok and r.prompt_tokens == 900 and r.completion_tokens == 7 for r in records)
    assert records[0].reused_prefix_tokens == 0
    assert 0 < records[1].reused_prefix_tokens < 900
    assert records[2].reused_prefix_tokens == 0
    assert records[3].reused_prefix_tokens == 0


# -- failures --------------------------------------------------------------------------------------------
async def test_transient_error_is_retried(make_client: Callable[..., LLMClient], script: Script, server: ScriptedModelServer) -> None:
    script.replies += [ScriptedReply(status=503, error="loading model"), ScriptedReply(text="ready")]
    completion = await make_client(num_retries=2).complete(Role.PA, [user("hi")])
    assert completion.text == "ready"
    assert len(server.requests) == 2


async def test_persistent_transient_error_gives_up_after_retries(make_client: Callable[..., LLMClient], script: Script, server: ScriptedModelServer) -> None:
    from mempa_tui.llm import LLMProviderError

    script.default = ScriptedReply(status=503, error="overloaded")
    client = make_client(num_retries=2)
    with pytest.raises(LLMProviderError) as caught:
        await client.complete(Role.PA, [user("hi")])
    assert len(server.requests) == 3
    assert caught.value.role == "pa" and "scripted-pa" in caught.value.model
    assert "3 attempts" in str(caught.value) and "Traceback" not in str(caught.value)
    assert caught.value.__cause__ is None and client.calls[-1].ok is False


async def test_bad_request_is_not_retried(make_client: Callable[..., LLMClient], script: Script, server: ScriptedModelServer) -> None:
    from mempa_tui.llm import LLMRequestError

    script.default = ScriptedReply(status=400, error="unsupported parameter")
    with pytest.raises(LLMRequestError, match="400"):
        await make_client(num_retries=3).complete(Role.PA, [user("hi")])
    assert len(server.requests) == 1


async def test_unreachable_server_is_a_connection_error(wire: str) -> None:
    from mempa_tui.llm import LLMConnectionError

    with ScriptedModelServer(Script()) as gone:
        profile = gone.profile({Role.PA: WIRES[wire]}, num_retries=1)
    with pytest.raises(LLMConnectionError, match="cannot reach"):
        await LLMClient(profile).complete(Role.PA, [user("hi")])


async def test_missing_api_key_variable_is_a_config_error(server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from mempa_tui.llm import LLMConfigError

    monkeypatch.delenv("MEMPA_TEST_KEY", raising=False)
    client = LLMClient(server.profile({Role.PA: WIRES["openai"]}, api_key_env="MEMPA_TEST_KEY"))
    with pytest.raises(LLMConfigError, match="MEMPA_TEST_KEY"):
        await client.complete(Role.PA, [user("hi")])
    assert server.requests == []
    monkeypatch.setenv("MEMPA_TEST_KEY", "sk-test")
    await client.complete(Role.PA, [user("hi")])
    assert server.requests[-1].body["messages"][0]["content"] == "hi"


async def test_slow_reply_times_out(wire: str) -> None:
    import threading

    from mempa_tui.llm import LLMTimeoutError

    release = threading.Event()

    def stall(request: ScriptedRequest) -> ScriptedReply:
        release.wait(timeout=600)  # a hang guard, not a deadline
        return ScriptedReply(text="late")

    try:
        async with ScriptedModelServer(stall) as server:
            client = LLMClient(server.profile({Role.PA: WIRES[wire]}, timeout_s=0.5, num_retries=0))
            with pytest.raises(LLMTimeoutError, match="no reply within 0.5 s"):
                await client.complete(Role.PA, [user("hi")])
            assert client.calls[-1].ok is False and "0.5 s" in (client.calls[-1].error or "")
            release.set()
    finally:
        release.set()


async def test_concurrency_is_limited_per_endpoint() -> None:
    import threading

    import anyio

    lock = threading.Lock()
    state = {"in_flight": 0, "peak": 0}
    two_in = threading.Event()

    def gate(request: ScriptedRequest) -> ScriptedReply:
        with lock:
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
            if state["in_flight"] >= 2:
                two_in.set()
        two_in.wait(timeout=600)  # a hang guard, not a deadline
        with lock:
            state["in_flight"] -= 1
        return ScriptedReply(text="done")

    async with ScriptedModelServer(gate) as server:
        profile = server.profile({Role.PA: WIRES["ollama"], Role.JUDGE: "ollama_chat/scripted-judge"}, max_concurrency=2)
        client = LLMClient(profile)
        async with anyio.create_task_group() as group:
            for i in range(6):
                group.start_soon(client.complete, Role.PA if i % 2 else Role.JUDGE, [user(f"q{i}")])
    assert state["peak"] == 2
    assert len(client.calls) == 6 and all(r.ok for r in client.calls)


@pytest.mark.parametrize(
    ("choice", "tools", "sent"),
    [
        (None, [LOOKUP, SEND], "auto"),
        ("required", [LOOKUP, SEND], "auto"),
        ("required", [SEND], {"type": "function", "function": {"name": "send"}}),
        ("lookup", [LOOKUP, SEND], {"type": "function", "function": {"name": "lookup"}}),
    ],
)
async def test_llama_cpp_tool_choice_shapes(script: Script, choice: str | None, tools: list[ToolSpec], sent: object) -> None:
    async with ScriptedModelServer(script, emulate_llama_cpp=True) as server:
        client = LLMClient(server.profile({Role.PA: "openai/scripted-pa"}, wire="llama_cpp"))
        await client.complete(Role.PA, [user("go")], tools=tools, tool_choice=choice)
        assert server.requests[-1].body["tool_choice"] == sent


async def test_text_calls_are_not_recovered_next_to_structured_ones(make_client: Callable[..., LLMClient], script: Script) -> None:
    echoed = '{"name": "lookup", "arguments": {"q": "tea"}}'
    reply = ScriptedReply(text=echoed, tool_calls=[ScriptedToolCall(name="lookup", arguments={"q": "tea"})])
    completion = await ask(make_client(), reply, script, tools=[LOOKUP])
    assert [(c.name, c.recovered_from_text) for c in completion.tool_calls] == [("lookup", False)]
    assert completion.text == echoed


async def test_tool_choice_none(make_client: Callable[..., LLMClient], server: ScriptedModelServer, wire: str) -> None:
    await make_client().complete(Role.PA, [user("just talk")], tools=[LOOKUP], tool_choice="none")
    request = server.requests[-1]
    if wire == "ollama":
        assert request.tools == [] and "tool_choice" not in request.body
    else:
        assert request.tool_names == ["lookup"] and request.body["tool_choice"] == "none"
