"""Each model call's prompt and reply, kept in the run store (issue 16; store schema 3).

A whole run of user R against the scripted model on loopback stores, for every call, the messages
the server received and the tool names it was offered, and the reply the responder gave; the
in-process call log keeps light records only. A store of schema 2 migrates and its old calls read
"not stored"; listing calls decompresses no prompt.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from test_runner_support import protocol_responder, runner_config

from mempa_tui.llm import LLMClient, LLMError, ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.llm.types import CallPrompt, CallReply, ChatMessage, LLMCallRecord, Role, ToolCall, ToolSpec
from mempa_tui.runner import Runner
from mempa_tui.runner._browse import NOT_STORED, BrowseError, model_call, step_details
from mempa_tui.store import (
    SCHEMA_VERSION,
    CheckpointData,
    LLMCallRow,
    RunRecord,
    RunStore,
    StepAttemptRecord,
    StepRecord,
    StoreError,
    utc_now,
)
from mempa_tui.store import _codec
from mempa_tui.store._codec import sha256_hex
from mempa_tui.tools import default_registry

_Sig = tuple[str, tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...], tuple[str, ...]]


def _sig(model: str, messages: list[ChatMessage], tools: list[str]) -> _Sig:
    """A call's prompt as a hashable value: model, each message's role, content and tool calls."""
    return (
        model,
        tuple((m.role, m.content, tuple((c.name, repr(sorted(c.arguments.items()))) for c in m.tool_calls))
              for m in messages),
        tuple(tools),
    )


class Recorder:
    """``protocol_responder``, remembering each request's prompt and the reply it gave."""

    def __init__(self) -> None:
        self.replies: dict[_Sig, ScriptedReply | str] = {}

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        reply = protocol_responder(request)
        self.replies[_sig(request.model, request.messages, request.tool_names)] = reply
        return reply


@pytest.fixture
async def served() -> AsyncIterator[tuple[ScriptedModelServer, Recorder]]:
    recorder = Recorder()
    async with ScriptedModelServer(recorder) as server:
        yield server, recorder


async def test_a_scripted_run_stores_every_calls_prompt_and_reply(
    served: tuple[ScriptedModelServer, Recorder], tmp_path: Path
) -> None:
    server, recorder = served
    client = LLMClient(server.profile(context_window=131072))
    models = {role: client.profile.spec_for(role).model.split("/", 1)[-1] for role in Role
              if role is not Role.EMBEDDER}
    async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
        runner = Runner(runner_config(), store, client, default_registry(), None,
                        memory_root=tmp_path / "local_memory", resamples=200)
        outcome = await runner.run()
        run_id = outcome.run_id
        listed = await store.llm_calls(run_id)
        assert listed and all(c.prompt_stored and c.call.prompt is None and c.call_id for c in listed)
        received = Counter(_sig(r.model, r.messages, r.tool_names) for r in server.requests)
        stored: Counter[_Sig] = Counter()
        for row in listed:
            assert row.call_id is not None
            full = await store.llm_call(run_id, row.call_id)
            prompt, reply = full.call.prompt, full.call.reply
            assert prompt is not None and reply is not None and prompt.messages, row
            sig = _sig(models[full.call.role], prompt.messages, prompt.tools)
            stored[sig] += 1
            # the reply as the responder gave it: its text, or its tool calls with their arguments
            given = recorder.replies[sig]
            if isinstance(given, str):
                assert reply.text == given.strip() and not reply.tool_calls
            else:
                assert [(c.name, c.arguments) for c in reply.tool_calls] == \
                    [(c.name, c.arguments) for c in given.tool_calls]
            assert reply.finish_reason
        # every stored prompt is one the server received, as often as it received it
        assert stored == received
        # the PA's calls were offered the interaction tools, and the stored names say so
        assert any(sig[0] == models[Role.PA] and any(t.startswith("IX_") for t in sig[2]) for sig in stored)
        n, kept, size = await store.call_sizes(run_id)
        assert n == kept == len(listed) and size > 0
        # the run browser's view of one call names its messages and its reply
        detail = (await step_details(store, run_id, "R-s1"))[0]
        line = next(c for c in detail.calls if c.role == "pa")
        assert line.prompt_stored and line.call_id is not None
        text = (await model_call(store, run_id, line.call_id)).text()
        assert "[1] system:" in text and "-- reply (finish:" in text and "tools offered: " in text
        with pytest.raises(BrowseError, match="no model call 999999"):
            await model_call(store, run_id, 999999)
    # `mempa show RUN STEP --call N` prints the same call in full; a call number not listed is named
    import io

    from mempa_tui.cli._errors import UserError
    from mempa_tui.cli._parser import build_parser
    from mempa_tui.cli._show import cmd_show

    n = next(i for i, c in enumerate(detail.calls, 1) if c.call_id == line.call_id)
    buf = io.StringIO()
    args = build_parser().parse_args(["show", run_id, "R-s1", "--call", str(n), "--saves", str(tmp_path / "saves")])
    assert await cmd_show(args, out=buf) == 0
    assert f"== R-s1: model call {n} ==" in buf.getvalue() and "  [1] system:" in buf.getvalue()
    assert "-- reply (finish:" in buf.getvalue()
    too_far = build_parser().parse_args(["show", run_id, "R-s1", "--call", "9999", "--saves", str(tmp_path / "saves")])
    with pytest.raises(UserError, match="no such model call"):
        await cmd_show(too_far, out=io.StringIO())
    # the in-process log keeps no prompt and no reply (they live in the store)
    assert client.calls and all(c.prompt is None and c.reply is None for c in client.calls)


# ---- schema 2 -> 3 ---------------------------------------------------------------------------

RUN = "A-file-test-s0"


def _run() -> RunRecord:
    return RunRecord(id=RUN, user="A", profile="test", memory="file", seed=0, repeats=1,
                     config_json="{}", config_hash="h", total_steps=2)


def _step(index: int) -> tuple[StepRecord, CheckpointData]:
    now = utc_now()
    files = {"notes.txt": f"step {index}".encode()}
    step = StepRecord(index=index, step_id=f"A-s{index}", kind="accumulation", status="completed",
                      started_at=now, finished_at=now, result_json="{}")
    ckpt = CheckpointData(step_index=index, step_id=step.step_id, story_time=datetime(2025, 3, 1, 9),
                          world_files=files, world_manifest={p: sha256_hex(b) for p, b in files.items()},
                          memory_snapshot=b"m", simulator_memory_json="{}")
    return step, ckpt


def _call(step_id: str, **extra: Any) -> LLMCallRow:
    return LLMCallRow(step_id=step_id, seq=0, call=LLMCallRecord(
        role=Role.PA, model="m", prompt_tokens=10, completion_tokens=2, reused_prefix_tokens=0,
        latency_s=0.1, ok=True, **extra))


def _attempt(step_id: str) -> StepAttemptRecord:
    now = utc_now()
    return StepAttemptRecord(step_id=step_id, attempt=1, status="failed", reason="retried",
                             started_at=now, finished_at=now)


def _downgrade_to_v2(path: Path) -> None:
    """Rewrite the database as schema 2 wrote it: ``llm_calls`` without prompt and reply."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.executescript("BEGIN; ALTER TABLE llm_calls DROP COLUMN prompt; ALTER TABLE llm_calls DROP COLUMN reply; "
                         "UPDATE schema_version SET version = 2; COMMIT;")
        columns = {r[1] for r in db.execute("PRAGMA table_info(llm_calls)")}
        assert "prompt" not in columns and "reply" not in columns
    finally:
        db.close()


async def test_a_schema_2_store_migrates_and_its_old_calls_read_not_stored(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with RunStore(path) as store:
        await store.create_run(_run())
        step, ckpt = _step(0)
        await store.commit_step(RUN, step, [], ckpt, [_call("A-s0")])
    _downgrade_to_v2(path)

    prompt = CallPrompt(messages=[ChatMessage(role="system", content="You help."),
                                  ChatMessage(role="user", content="Book the room.")],
                        tools=["IX_verbosity", "mcp_state_calendar_event_create"])
    reply = CallReply(text="", tool_calls=[ToolCall(id="call_1", name="IX_verbosity",
                                                    arguments={"setting": "concise"})],
                      finish_reason="tool_calls")
    async with RunStore(path) as store:
        async with store.db.execute("SELECT MAX(version) FROM schema_version") as cur:
            assert (await cur.fetchone())[0] == SCHEMA_VERSION == 3  # type: ignore[index]
        [old] = await store.llm_calls(RUN)
        assert not old.prompt_stored and old.call_id is not None
        again = await store.llm_call(RUN, old.call_id)
        assert again.call.prompt is None and again.call.reply is None
        assert NOT_STORED in (await model_call(store, RUN, old.call_id)).text()
        assert [c.prompt_stored for c in (await step_details(store, RUN, "A-s0"))[0].calls] == [False]
        # a call stored after the migration keeps its prompt and reply
        step, ckpt = _step(1)
        await store.commit_step(RUN, step, [], ckpt, [_call("A-s1", prompt=prompt, reply=reply)])
        [new] = await store.llm_calls(RUN, "A-s1")
        assert new.prompt_stored and new.call_id is not None
        full = await store.llm_call(RUN, new.call_id)
        assert full.call.prompt == prompt and full.call.reply == reply
        text = (await model_call(store, RUN, new.call_id)).text()
        assert "[2] user:\nBook the room." in text and 'IX_verbosity({"setting": "concise"})' in text
        assert "tools offered: IX_verbosity, mcp_state_calendar_event_create" in text
        with pytest.raises(StoreError, match="no model call"):
            await store.llm_call("other-run", new.call_id)


async def test_listing_calls_decompresses_no_prompt_and_a_failed_call_keeps_its_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = CallPrompt(messages=[ChatMessage(role="system", content="rules " * 20_000)], tools=["IX_verbosity"])
    async with RunStore(tmp_path / "db.sqlite") as store:
        await store.create_run(_run())
        step, ckpt = _step(0)
        failed = _call("A-s0", prompt=big).model_copy(update={"seq": 1})
        failed.call.ok, failed.call.error = False, "no reply within 5 s"
        await store.commit_step(RUN, step, [], ckpt, [_call("A-s0", prompt=big, reply=CallReply(text="ok")),
                                                      failed])
        n, kept, size = await store.call_sizes(RUN)
        assert (n, kept) == (2, 2) and size < 1000  # each row lists its message keys only

        unpacked: list[object] = []
        real = _codec.unpack_text

        def counting(stored: bytes | None) -> str:
            unpacked.append(stored)
            return real(stored)

        monkeypatch.setattr(_codec, "unpack_text", counting)
        rows = await store.llm_calls(RUN)
        await step_details(store, RUN, "A-s0")
        call_unpacks = len(unpacked)
        assert [r.prompt_stored for r in rows] == [True, True]
        assert all(r.call.prompt is None for r in rows)
        unpacked.clear()
        assert rows[1].call_id is not None
        text = (await model_call(store, RUN, rows[1].call_id)).text()
        assert len(unpacked) == 1  # only that call's prompt (a failed call has no reply to read)
        assert "FAILED no reply within 5 s" in text and "-- no reply (the call failed)" in text
        assert "rules rules" in text
    # step_details unpacks the step's own result JSON, never a call's prompt
    assert call_unpacks <= 1


async def test_calls_share_message_blobs_which_live_as_long_as_a_call_refers_to_them(tmp_path: Path) -> None:
    system = ChatMessage(role="system", content="You are a careful assistant. " * 3000)  # ~90 KB

    def calls(step_id: str, asks: list[str]) -> list[LLMCallRow]:
        out = []
        history = [system]
        for i, ask in enumerate(asks):
            history = [*history, ChatMessage(role="user", content=ask)]
            out.append(_call(step_id, prompt=CallPrompt(messages=list(history), tools=["IX_verbosity"]),
                             reply=CallReply(text=f"answer {i}")).model_copy(update={"seq": i}))
        return out

    async with RunStore(tmp_path / "db.sqlite") as store:
        await store.create_run(_run())
        await store.create_run(_run().model_copy(update={"id": "B-file-test-s0", "user": "B"}))
        n0, bytes0 = await store.blob_stats()
        # three calls re-sending a growing history: four distinct messages, each stored once
        await store.record_attempt(RUN, _attempt("A-s0"), calls("A-s0#attempt1", ["one", "two", "three"]))
        n1, bytes1 = await store.blob_stats()
        assert n1 - n0 == 4 and bytes1 - bytes0 < 5_000  # the 90 KB system prompt once, compressed
        # another run sending the same system prompt adds only its own user message
        await store.record_attempt("B-file-test-s0", _attempt("A-s0"), calls("A-s0#attempt1", ["four"]))
        assert (await store.blob_stats())[0] == n1 + 1
        rows = await store.llm_calls(RUN)
        third = await store.llm_call(RUN, rows[2].call_id or 0)
        assert third.call.prompt is not None
        assert [m.content for m in third.call.prompt.messages] == [system.content, "one", "two", "three"]

        # deleting run A keeps what B's call still refers to, then deleting B frees the rest
        await store.delete_run(RUN)
        assert await store.delete_unreferenced_blobs() == 3
        [b_call] = await store.llm_calls("B-file-test-s0")
        b_full = await store.llm_call("B-file-test-s0", b_call.call_id or 0)
        assert b_full.call.prompt is not None and b_full.call.prompt.messages[0] == system
        await store.delete_run("B-file-test-s0")
        assert await store.delete_unreferenced_blobs() == 2
        assert (await store.blob_stats())[0] == n0


# ---- the client's records ----------------------------------------------------------------------


def _client_responder(request: ScriptedRequest) -> ScriptedReply | str:
    last = request.messages[-1].content if request.messages else ""
    if "fail" in last:
        return ScriptedReply(status=400, error="scripted refusal")
    return "Noted: " + last


async def test_the_client_records_the_prompt_as_sent_and_the_reply_and_a_failed_calls_prompt() -> None:
    async with ScriptedModelServer(_client_responder) as server:
        client = LLMClient(server.profile(num_retries=0))
        messages = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="hello")]
        tool = ToolSpec(name="IX_verbosity", description="Pick a verbosity.",
                        parameters={"type": "object", "properties": {"setting": {"type": "string"}}})
        await client.complete(Role.PA, messages, tools=[tool])
        [ok] = client.calls
        assert ok.prompt == CallPrompt(messages=messages, tools=["IX_verbosity"])
        assert ok.reply == CallReply(text="Noted: hello", finish_reason="stop")
        assert server.requests[-1].messages == messages and server.requests[-1].tool_names == ["IX_verbosity"]
        with pytest.raises(LLMError):
            await client.complete(Role.SIMULATOR, [*messages, ChatMessage(role="user", content="fail now")])
        failed = client.calls[-1]
        assert not failed.ok and failed.reply is None and failed.prompt is not None
        assert [m.content for m in failed.prompt.messages] == ["Be brief.", "hello", "fail now"]
        assert failed.prompt.tools == []
        # light copies drop both (what the runner's long-lived log keeps)
        assert ok.light().prompt is None and ok.light().reply is None and ok.light().prompt_tokens == ok.prompt_tokens
