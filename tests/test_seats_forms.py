"""Forms generated from tool JSON schemas for a person in the PA seat (SPEC §4.11)."""

from __future__ import annotations

import pytest

from mempa_tui.agent.forms import FormError, arguments_from_form, form_fields
from mempa_tui.ix import ix_tool_spec
from mempa_tui.llm.types import ToolSpec
from mempa_tui.tools import default_registry


def _spec(name: str) -> ToolSpec:
    return next(s for s in default_registry().specs() if s.name == name)


def test_world_tool_form_follows_its_schema() -> None:
    spec = _spec("mcp_state_calendar_event_create")
    fields = form_fields(spec)
    by_name = {f.name: f for f in fields}
    assert [f.name for f in fields if f.required] == spec.parameters["required"]
    assert fields[0].required and not fields[-1].required
    assert by_name["attendees"].kind == "list"
    assert by_name["date"].kind == "text" and "YYYY-MM-DD" in by_name["date"].description
    args = arguments_from_form(spec, {
        "title": "Review", "date": "2026-03-02", "start_time": "09:00", "end_time": "10:00",
        "attendees": "Colm Averill, Priya Nandakumar", "location": "",
    })
    assert args == {"title": "Review", "date": "2026-03-02", "start_time": "09:00", "end_time": "10:00",
                    "attendees": ["Colm Averill", "Priya Nandakumar"]}


def test_ix_form_offers_the_settings_and_reads_json_payloads() -> None:
    spec = ix_tool_spec("topic_management")
    fields = {f.name: f for f in form_fields(spec)}
    assert fields["setting"].kind == "choice" and fields["setting"].required
    assert fields["setting"].choices == ["Organize", "One-at-a-time"]
    assert fields["topics"].kind == "json"
    args = arguments_from_form(spec, {"setting": "Organize", "topics": '[{"label": "A", "content": "B"}]'})
    assert args == {"setting": "Organize", "topics": [{"label": "A", "content": "B"}]}


def test_bad_entries_name_the_field_and_the_reason() -> None:
    spec = ix_tool_spec("topic_management")
    with pytest.raises(FormError, match="field 'setting' is required"):
        arguments_from_form(spec, {"setting": ""})
    with pytest.raises(FormError, match="'Maybe' is not one of Organize, One-at-a-time"):
        arguments_from_form(spec, {"setting": "Maybe"})
    with pytest.raises(FormError, match="field 'topics': not valid JSON"):
        arguments_from_form(spec, {"setting": "Organize", "topics": "[{"})
    with pytest.raises(FormError, match="no field named colour"):
        arguments_from_form(spec, {"setting": "Organize", "colour": "red"})
    typed = ToolSpec(name="t", description="", parameters={"type": "object", "properties": {
        "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"}}})
    assert arguments_from_form(typed, {"n": "3", "x": "2.5", "b": "yes"}) == {"n": 3, "x": 2.5, "b": True}
    for name, text, why in (("n", "three", "not a whole number"), ("x", "x", "not a number"), ("b", "perhaps", "not true or false")):
        with pytest.raises(FormError, match=f"field '{name}': .*{why}"):
            arguments_from_form(typed, {name: text})
    with pytest.raises(FormError, match="not an object schema"):
        form_fields(ToolSpec(name="bad", description="", parameters={"type": "string"}))
