"""The demo model (``python -m mempa_tui.tui.demo``): a profile that loads, and a responder that
drives a PA turn (IX call, then the reply) and a simulated user turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mempa_tui.llm import LLMClient, ScriptedModelServer, load_profile
from mempa_tui.llm.types import ChatMessage, Role, ToolSpec
from mempa_tui.tui.demo import (
    DEMO_PA_REPLY,
    DEMO_USER_LINE,
    demo_responder,
    write_demo_profile,
)
from mempa_tui.tui.demo import main as demo_main

_IX = ToolSpec(name="IX_verbosity", description="pick", parameters={
    "type": "object", "properties": {"setting": {"type": "string", "enum": ["Terse", "Detailed"]}},
    "required": ["setting"]})


async def test_the_demo_profile_loads_and_every_role_answers(tmp_path: Path) -> None:
    async with ScriptedModelServer(demo_responder) as server:
        path = write_demo_profile(server, tmp_path)
        profile = load_profile("demo", tmp_path)
        assert path.name == "demo.yaml" and profile.name == "demo" and "demo" in profile.description
        client = LLMClient(profile)
        ask = [ChatMessage(role="user", content="hello")]
        first = await client.complete(Role.PA, ask, tools=[_IX])
        assert [(c.name, c.arguments) for c in first.tool_calls] == [("IX_verbosity", {"setting": "Terse"})]
        answered = [*ask, ChatMessage(role="assistant", content="", tool_calls=first.tool_calls),
                    ChatMessage(role="tool", content="ok", tool_call_id=first.tool_calls[0].id)]
        second = await client.complete(Role.PA, answered, tools=[_IX])
        assert second.text == DEMO_PA_REPLY and not second.tool_calls
        user = await client.complete(Role.SIMULATOR, ask)
        assert f"<message>{DEMO_USER_LINE}</message>" in user.text
        schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5},
                                                    "entry": {"type": "string"}}}
        scored = json.loads((await client.complete(Role.JUDGE, ask, json_schema=schema)).text)
        assert scored["score"] == 3 and scored["entry"].count(".") == 2


def test_a_models_path_that_is_a_file_is_a_usage_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "models"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as info:
        demo_main(["--models", str(blocker)])
    assert info.value.code == 2
    assert f"--models {blocker}: a file, not a folder" in capsys.readouterr().err
