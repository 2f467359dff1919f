"""The tool registry: generated schemas, catalog, safe calls, atomic writes, write locks."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from pydantic import JsonValue

from mempa_tui.scripts.schema import WriteLock
from mempa_tui.tools import ToolError, ToolRegistry, catalog, default_registry, tool
from mempa_tui.world import WorkingCopy, WorldState

FIXTURES = Path(__file__).parent / "fixtures_world" / "valid" / "users" / "T" / "fixtures"
MARCH = datetime(2026, 3, 10, 9, 0)

# Table 7 rows for the domains built so far: name -> (domain, write, outward)
TABLE7 = {
    "email_message_search": ("email", False, False),
    "email_message_read": ("email", False, False),
    "email_draft_read": ("email", False, False),
    "email_sent_read": ("email", False, False),
    "email_draft_create": ("email", True, False),
    "email_message_send": ("email", True, True),
    "message_search": ("messages", False, False),
    "message_read": ("messages", False, False),
    "message_send": ("messages", True, True),
    "calendar_event_search": ("calendar", False, False),
    "calendar_event_read": ("calendar", False, False),
    "calendar_event_create": ("calendar", True, False),
    "calendar_event_update": ("calendar", True, False),
    "copier_entitlement_read": ("documents", False, False),
    "document_read": ("documents", False, False),
    "corporate_reporting_submit": ("documents", True, True),
    "document_create": ("documents", True, False),
    "document_update": ("documents", True, False),
    "document_delete": ("documents", True, False),
    "contact_search": ("contacts", False, False),
    "contact_read": ("contacts", False, False),
    "contact_create": ("contacts", True, False),
    "contact_update": ("contacts", True, False),
}


@pytest.fixture()
def wc() -> WorkingCopy:
    return WorkingCopy(WorldState.from_directory(FIXTURES), MARCH)


def test_registry_matches_table7() -> None:
    reg = default_registry()
    first_five = [t for t in reg if t.domain in {"email", "messages", "calendar", "documents", "contacts"}]
    assert {t.name for t in first_five} == set(TABLE7)  # the whole catalog: test_tools_catalog.py
    for t in first_five:
        assert (t.domain, t.write, t.outward) == TABLE7[t.name], t.name
    for t in reg:
        assert (t.tag is None) == (not t.write)
    own_writes = [t.name for t in reg if t.write and not t.outward]
    assert len(own_writes) == 8  # Table 7: eight writes change the user's own records
    assert {t.tag for t in reg if t.write and not t.outward} == {"draft", "routine", "key"}


def test_specs_are_prefixed_sorted_and_generated() -> None:
    reg = default_registry()
    specs = reg.specs()
    assert all(s.name.startswith("mcp_state_") for s in specs)
    keys = [(reg.get(s.name).domain, s.name) for s in specs]  # type: ignore[union-attr]
    assert keys == sorted(keys)
    create = next(s for s in specs if s.name == "mcp_state_calendar_event_create")
    props = create.parameters["properties"]
    assert set(create.parameters["required"]) == {"title", "date", "start_time", "end_time"}
    assert "YYYY-MM-DD" in props["date"]["description"]
    assert "HH:MM" in props["start_time"]["description"]
    assert create.parameters["additionalProperties"] is False
    assert "title" not in props["title"] or props["title"].get("type") == "string"
    for spec in specs:
        assert spec.description
        for name, prop in spec.parameters["properties"].items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"
            assert "anyOf" not in prop and "$ref" not in prop


def test_schema_comes_from_signature_and_docstring() -> None:
    @tool(domain="email")
    def sample(wc: WorkingCopy, word: str, count: int = 2) -> JsonValue:
        """Repeat a word.

        Args:
            word: the word to repeat.
            count: how many times,
                at least one.

        Returns:
            the repeated word.
        """
        return word * count

    assert sample.parameters["required"] == ["word"]
    assert sample.parameters["properties"]["count"] == {
        "type": "integer",
        "default": 2,
        "description": "how many times, at least one.",
    }
    assert sample.description.startswith("Repeat a word.")


def test_undocumented_parameter_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="no description"):

        @tool(domain="email")
        def bad(wc: WorkingCopy, word: str) -> JsonValue:
            """Do something."""
            return word

    with pytest.raises(TypeError, match="tag"):
        tool(domain="email", write=True)
    with pytest.raises(TypeError, match="domain"):
        tool(domain="nowhere")


def test_catalog_rows() -> None:
    rows = catalog()
    assert [r.domain_title for r in rows][:1] == ["Email"]
    send = next(r for r in rows if r.name == "email_message_send")
    assert send.write and send.outward and send.tag == "outward"
    assert all(r.summary.endswith(".") for r in rows)


def test_prefix_is_optional(wc: WorkingCopy) -> None:
    reg = default_registry()
    a = reg.call(wc, "mcp_state_contact_read", {"contact_id": "ct_0001"})
    b = reg.call(wc, "contact_read", {"contact_id": "ct_0001"})
    assert a.ok and b.ok and a.content == b.content


def test_unknown_tool_lists_closest(wc: WorkingCopy) -> None:
    res = default_registry().call(wc, "mcp_state_calender_event_create", {})
    assert not res.ok and res.error == res.content
    assert "unknown tool" in res.content and "calendar_event_create" in res.content
    assert wc.call_log[-1].ok is False


def test_bad_argument_shapes_never_raise(wc: WorkingCopy) -> None:
    reg = default_registry()
    for args in (None, [], "x", 3):
        res = reg.call(wc, "contact_read", args)
        assert not res.ok and "JSON object" in res.content
    res = reg.call(wc, "contact_read", {})
    assert "missing required argument 'contact_id'" in res.content
    res = reg.call(wc, "contact_read", {"contact_id": "ct_0001", "verbose": True})
    assert "unknown argument 'verbose'" in res.content and "contact_id" in res.content


def test_rejected_call_writes_nothing_even_after_a_partial_write(wc: WorkingCopy) -> None:
    @tool(domain="contacts", write=True, tag="routine")
    def half_write(wc: WorkingCopy, name: str) -> JsonValue:
        """Create a contact, then reject.

        Args:
            name: the name.
        """
        wc.create("contacts/contacts", {"name": name})
        raise ToolError(f"name {name!r} is refused after writing")

    reg = ToolRegistry([half_write])
    before = wc.to_state()
    res = reg.call(wc, "half_write", {"name": "Zed"})
    assert not res.ok and "refused" in res.content
    assert wc.change_log == [] and wc.to_state() == before
    assert [r.id for r in wc.records("contacts/contacts")] == ["ct_0001", "ct_0002"]


def test_write_lock_refuses_until_released(wc: WorkingCopy) -> None:
    reg = default_registry()
    wc.add_write_lock(
        WriteLock(tool="email_message_send", match={"to": ["dana@northfield.org"]}, unlocked_by="reply_text")
    )
    args = {"to": ["dana@northfield.org"], "subject": "Venue", "body": "Fine."}
    res = reg.call(wc, "mcp_state_email_message_send", args)
    assert not res.ok and "ask the user" in res.content and "not provided" in res.content
    assert wc.change_log == [] and wc.records("email/sent")[-1].id == "sent_0001"
    other = reg.call(wc, "email_message_send", {**args, "to": ["rafe.vale@example.net"]})
    assert other.ok, other.content
    wc.release_fact("reply_text")
    res = reg.call(wc, "email_message_send", args)
    assert res.ok and wc.records("email/sent")[-1].to == ["dana@northfield.org"]


def test_call_log_keeps_every_call(wc: WorkingCopy) -> None:
    reg = default_registry()
    reg.call(wc, "contact_read", {"contact_id": "ct_0001"})
    reg.call(wc, "contact_read", {"contact_id": "nope"})
    assert [(c.tool, c.ok) for c in wc.call_log] == [("contact_read", True), ("contact_read", False)]
    assert wc.call_log[1].error is not None and "'nope'" in wc.call_log[1].error
    assert wc.call_log[0].arguments == {"contact_id": "ct_0001"}
