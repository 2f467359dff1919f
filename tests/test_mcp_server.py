"""The MCP server as a real subprocess over stdio, driven by the official SDK client."""

from __future__ import annotations

import json
import shutil
import sys
from datetime import datetime
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mempa_tui.mcp import SERVER_NAME, WorldSession, mcp_tool
from mempa_tui.tools import default_registry

SOURCE = Path(__file__).parent / "fixtures_world" / "valid" / "users" / "T" / "fixtures"
AT = "2026-03-10T09:00"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """A private copy of the T fixture tree (the server may write into it)."""
    target = tmp_path / "fixtures"
    shutil.copytree(SOURCE, target)
    return target


def server(tree: Path, *extra: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mempa_tui.cli.main", "mcp", "--user", "T", "--at", AT, "--world", str(tree), *extra],
    )
    return Client(params)


CREATE = {"title": "Board call", "date": "2026-03-12", "start_time": "15:00", "end_time": "15:30"}


async def test_lists_every_registry_tool_with_its_schema(tree: Path) -> None:
    async with server(tree) as client:
        listed = (await client.list_tools()).tools
    registry = default_registry()
    assert sorted(t.name for t in listed) == sorted(t.name for t in registry.tools())
    by_name = {t.name: t for t in listed}
    create = by_name["calendar_event_create"]
    assert create.input_schema == registry.get("calendar_event_create").parameters  # type: ignore[union-attr]
    assert create.annotations is not None and create.annotations.read_only_hint is False
    assert create.meta == {"mempa/domain": "calendar", "mempa/write_tag": "routine"}
    assert by_name["calendar_event_search"].annotations.read_only_hint is True  # type: ignore[union-attr]


async def test_read_write_and_rejected_call_then_discard(tree: Path) -> None:
    before = (tree / "calendar" / "events.yaml").read_bytes()
    async with server(tree) as client:
        found = await client.call_tool("calendar_event_search", {"query": "lift"})
        assert not found.is_error
        data = json.loads(found.content[0].text)  # type: ignore[union-attr]
        assert [e["id"] for e in data["events"]] == ["ev_0001"]
        assert found.structured_content == data

        # ev_0002 enters the world on 2026-04-01, after the session time: hidden.
        hidden = await client.call_tool("calendar_event_read", {"event_id": "ev_0002"})
        assert hidden.is_error

        made = await client.call_tool("mcp_state_calendar_event_create", CREATE)
        assert not made.is_error, made.content
        new_id = json.loads(made.content[0].text)["event_id"]  # type: ignore[union-attr]
        again = await client.call_tool("calendar_event_read", {"event_id": new_id})
        assert json.loads(again.content[0].text)["title"] == "Board call"  # type: ignore[union-attr]

        bad = await client.call_tool("calendar_event_create", {**CREATE, "start_time": "3pm"})
        assert bad.is_error
        assert "start_time '3pm' is not a 24-hour HH:MM time" in bad.content[0].text  # type: ignore[union-attr]
    assert (tree / "calendar" / "events.yaml").read_bytes() == before


async def test_commit_writes_changes_back_and_logs(tree: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.json"
    async with server(tree, "--commit", "--log", str(log)) as client:
        made = await client.call_tool("calendar_event_create", CREATE)
        assert not made.is_error, made.content
        await client.call_tool("calendar_event_read", {"event_id": "ev_0099"})
    text = (tree / "calendar" / "events.yaml").read_text()
    assert "Board call" in text and "Lift service visit" in text
    logged = json.loads(log.read_text())
    assert [(c["tool"], c["ok"]) for c in logged["calls"]] == [
        ("calendar_event_create", True),
        ("calendar_event_read", False),
    ]
    assert [(c["tool"], c["op"], c["collection"]) for c in logged["changes"]] == [
        ("calendar_event_create", "insert", "calendar/events")
    ]


def test_session_in_process_matches_names() -> None:
    session = WorldSession(SOURCE, datetime.fromisoformat(AT))
    assert SERVER_NAME == "state"
    tdef = session.registry.get("mcp_state_email_message_send")
    assert tdef is not None and mcp_tool(tdef).name == "email_message_send"
    assert session.finish(commit=False).committed is False


def test_broken_world_fails_at_start(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "cinema").mkdir()
    (tree / "cinema" / "tickets.yaml").write_text("- id: ctk_0001\n  entered_at: 2026-03-01T00:00\n")
    from mempa_tui.cli.main import main

    assert main(["mcp", "--user", "T", "--at", AT, "--world", str(tree)]) == 2
    assert "cinema/tickets.yaml record 0 (id 'ctk_0001')" in capsys.readouterr().err
