"""complete_json: one retry that names the problem, never an invented value."""

from __future__ import annotations

import json

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest
from mempa_tui.llm.structured import complete_json
from mempa_tui.llm.types import ChatMessage, Role

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def read(text: str) -> int:
    value = json.loads(text.strip().removeprefix("```json").removesuffix("```"))["n"]
    if not isinstance(value, int):
        raise ValueError("n is not an integer")
    return value


async def _run(replies: list[str]) -> tuple[object, list[ScriptedRequest]]:
    queue = list(replies)
    async with ScriptedModelServer(lambda _request: queue.pop(0)) as server:
        got = await complete_json(LLMClient(server.profile()), Role.JUDGE,
                                  [ChatMessage(role="user", content="give n")], schema=SCHEMA, read=read)
        return got, list(server.requests)


async def test_second_reply_used_after_the_problem_is_named() -> None:
    got, requests = await _run(['{"n": "three"}', '```json\n{"n": 3}\n```'])
    assert got.value == 3 and got.attempts == 2 and got.error is None  # type: ignore[attr-defined]
    assert "n is not an integer" in requests[1].messages[-1].content
    assert requests[0].json_schema == SCHEMA


async def test_two_bad_replies_give_no_value_and_keep_both() -> None:
    got, _ = await _run(["", "not json"])
    assert got.value is None and got.error and got.replies == ["", "not json"]  # type: ignore[attr-defined]
