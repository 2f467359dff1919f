"""The scripted model server speaks both wire formats and rejects what real servers reject."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mempa_tui.llm import (
    Role,
    ScriptedModelServer,
    ScriptedReply,
    ScriptedRequest,
    ScriptedToolCall,
)


def echo(request: ScriptedRequest) -> ScriptedReply:
    return ScriptedReply(text=f"{request.wire}:{request.model}:{len(request.messages)}")


def history(arguments: object, *, openai_type: bool) -> list[dict[str, Any]]:
    call: dict[str, Any] = {"id": "c1", "function": {"name": "lookup", "arguments": arguments}}
    if openai_type:
        call["type"] = "function"
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
    ]


def test_ollama_chat_accepts_object_arguments_and_rejects_strings() -> None:
    with ScriptedModelServer(echo) as server:
        ok = httpx.post(f"{server.url}/api/chat", json={"model": "m", "messages": history({"q": 1}, openai_type=False), "stream": False})
        assert ok.status_code == 200
        assert ok.json()["message"]["content"] == "ollama:m:3"
        bad = httpx.post(f"{server.url}/api/chat", json={"model": "m", "messages": history('{"q": 1}', openai_type=False)})
        assert bad.status_code == 400
        assert "cannot unmarshal string" in bad.json()["error"]
        assert len(server.requests) == 1 and len(server.rejected) == 1


def test_openai_chat_accepts_string_arguments_and_rejects_objects() -> None:
    with ScriptedModelServer(echo) as server:
        ok = httpx.post(f"{server.openai_base}/chat/completions", json={"model": "m", "messages": history('{"q": 1}', openai_type=True)})
        assert ok.status_code == 200
        assert ok.json()["choices"][0]["message"]["content"] == "openai:m:3"
        bad = httpx.post(f"{server.openai_base}/chat/completions", json={"model": "m", "messages": history({"q": 1}, openai_type=True)})
        assert bad.status_code == 400
        assert "expected a string" in bad.json()["error"]["message"]


def test_llama_cpp_emulation_rejects_json_schema_format() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    with ScriptedModelServer(echo, emulate_llama_cpp=True) as server:
        schema_form = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
        refused = httpx.post(f"{server.openai_base}/chat/completions", json={**body, "response_format": schema_form})
        assert refused.status_code == 422
        accepted = httpx.post(
            f"{server.openai_base}/chat/completions",
            json={**body, "response_format": {"type": "json_object", "schema": {"type": "object"}}},
        )
        assert accepted.status_code == 200
        assert server.requests[-1].json_schema == {"type": "object"}


def test_listing_and_show_endpoints() -> None:
    with ScriptedModelServer(echo, models=["qwen2.5:7b-instruct"]) as server:
        assert httpx.get(f"{server.url}/api/version").json()["version"]
        tags = httpx.get(f"{server.url}/api/tags").json()
        assert [m["name"] for m in tags["models"]] == ["qwen2.5:7b-instruct"]
        assert httpx.post(f"{server.url}/api/show", json={"model": "qwen2.5:7b-instruct"}).status_code == 200
        assert httpx.post(f"{server.url}/api/show", json={"model": "absent"}).status_code == 404
        models = httpx.get(f"{server.openai_base}/models").json()
        assert models["data"][0]["id"] == "qwen2.5:7b-instruct"
        chat = httpx.post(f"{server.url}/api/chat", json={"model": "absent", "messages": []})
        assert chat.status_code == 404
        assert server.paths[:2] == ["/api/version", "/api/tags"]


def test_bad_outputs_are_sent_as_scripted() -> None:
    calls = [
        ScriptedToolCall(name="a", arguments='{"broken', id=None),
        ScriptedToolCall(name=None, arguments=None, id=""),
        ScriptedToolCall(name="b", arguments={"x": 1}, send_as="string"),
    ]
    with ScriptedModelServer(lambda request: ScriptedReply(text="<think>t</think>", tool_calls=calls)) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": False}
        sent = httpx.post(f"{server.url}/api/chat", json=body).json()["message"]
    first, second, third = sent["tool_calls"]
    assert "id" not in first and first["function"]["arguments"] == '{"broken'
    assert second["id"] == "" and second["function"] == {}
    assert third["function"]["arguments"] == json.dumps({"x": 1})
    assert sent["content"] == "<think>t</think>"


def test_request_normalisation_for_responders() -> None:
    seen: list[ScriptedRequest] = []

    def keep(request: ScriptedRequest) -> str:
        seen.append(request)
        return "fine"

    tool = {"type": "function", "function": {"name": "lookup", "description": "d", "parameters": {"type": "object"}}}
    with ScriptedModelServer(keep) as server:
        httpx.post(
            f"{server.openai_base}/chat/completions",
            json={
                "model": "scripted-judge",
                "messages": history('{"q": 2}', openai_type=True),
                "tools": [tool],
                "tool_choice": {"type": "function", "function": {"name": "lookup"}},
                "temperature": 0.1,
            },
        )
    request = seen[0]
    assert request.tool_names == ["lookup"] and request.tool_choice == "lookup"
    assert request.messages[1].tool_calls[0].arguments == {"q": 2}
    assert request.options == {"temperature": 0.1}


def test_responder_errors_become_http_500_and_are_recorded() -> None:
    def broken(request: ScriptedRequest) -> str:
        raise KeyError("no script for this")

    with ScriptedModelServer(broken) as server:
        answer = httpx.post(f"{server.url}/api/chat", json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
        assert answer.status_code == 500
        assert server.errors and "KeyError" in server.errors[0]


def test_profile_points_roles_at_the_server() -> None:
    with ScriptedModelServer(echo) as server:
        profile = server.profile({Role.PA: "ollama_chat/scripted-pa", Role.JUDGE: "openai/scripted-judge"}, max_tokens=64)
        assert profile.spec_for(Role.PA).api_base == server.url
        assert profile.spec_for(Role.JUDGE).api_base == server.openai_base
        assert profile.spec_for(Role.JUDGE).max_tokens == 64
        assert profile.spec_for(Role.MEMORY).model == "ollama_chat/scripted-default"
        everyone = server.profile()
        assert everyone.spec_for(Role.SIMULATOR).model == "ollama_chat/scripted-simulator"


async def test_async_context_manager_stops_the_server() -> None:
    async with httpx.AsyncClient() as http:
        async with ScriptedModelServer(echo) as server:
            url = server.url
            assert (await http.get(f"{url}/api/version")).status_code == 200
        with pytest.raises(httpx.ConnectError):
            await http.get(f"{url}/api/version")
