"""Every tool of the first five domains: a round trip, a rejected argument, the future hidden."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tool_test_support import REG, fail, ok

from mempa_tui.world import WorkingCopy, WorldState
from mempa_tui.world.records import Document

FIXTURES = Path(__file__).parent / "fixtures_world" / "valid" / "users" / "T" / "fixtures"
MARCH = datetime(2026, 3, 10, 9, 0)


@pytest.fixture()
def wc() -> WorkingCopy:
    return WorkingCopy(WorldState.from_directory(FIXTURES), MARCH)



# (tool, arguments, words the error must contain) — one rejected argument per tool
REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("email_message_search", {"since": "03/01/2026"}, "since '03/01/2026' is not a date in YYYY-MM-DD form"),
    ("email_message_read", {"message_id": "em_9999"}, "message_id 'em_9999' names no email in the inbox"),
    ("email_draft_read", {"draft_id": "dr_0099"}, "draft_id 'dr_0099' names no draft"),
    ("email_sent_read", {"limit": 0}, "limit 0 is invalid"),
    (
        "email_draft_create",
        {"subject": "x", "body": "y", "to": ["not-an-address"]},
        "to[0] 'not-an-address' is not an email address",
    ),
    ("email_message_send", {"to": [], "subject": "s", "body": "b"}, "no recipient"),
    ("message_search", {"until": "2026-02-30"}, "until '2026-02-30' is not a real calendar date"),
    ("message_read", {"message_id": "msg_9"}, "message_id 'msg_9' names no text message"),
    ("message_send", {"contact": "Rafe Vail", "text": "hi"}, "contact 'Rafe Vail' names no one"),
    (
        "calendar_event_search",
        {"start_date": "2026-03-20", "end_date": "2026-03-10"},
        "end_date '2026-03-10' is before start_date '2026-03-20'",
    ),
    ("calendar_event_read", {"event_id": "ev_0099"}, "event_id 'ev_0099' names no calendar event"),
    (
        "calendar_event_create",
        {"title": "Drill", "date": "2026-03-18", "start_time": "9am", "end_time": "10:00"},
        "start_time '9am' is not a 24-hour HH:MM time",
    ),
    (
        "calendar_event_update",
        {"event_id": "ev_0001", "end_time": "09:00"},
        "is not after start_time '10:00'",
    ),
    ("copier_entitlement_read", {"holder": 5}, "holder 5 is invalid"),
    ("document_read", {"document_id": "doc_0099"}, "document_id 'doc_0099' names no document"),
    (
        "corporate_reporting_submit",
        {"report_type": "timesheet", "period": "Feb 2026", "content": "x"},
        "period 'Feb 2026' is not a reporting period",
    ),
    ("document_create", {"title": "  ", "content": "x"}, "title '  ' must not be empty"),
    (
        "document_update",
        {"document_id": "doc_0001", "heading": "Costs", "body": "x", "mode": "replace"},
        "heading 'Costs' names no section of doc_0001",
    ),
    ("document_delete", {"document_id": "doc_0099"}, "document_id 'doc_0099' names no document"),
    ("contact_search", {"limit": "many"}, "limit 'many' is invalid"),
    ("contact_read", {"contact_id": "ct_0099"}, "contact_id 'ct_0099' names no contact"),
    ("contact_create", {"name": "Dana Oduya"}, "name 'Dana Oduya' is already a contact (ct_0001)"),
    (
        "contact_update",
        {"contact_id": "ct_0001", "email": "dana-at-northfield"},
        "email 'dana-at-northfield' is not an email address",
    ),
]


def test_every_tool_has_a_rejection_case() -> None:
    first_five = {"email", "messages", "calendar", "documents", "contacts"}  # other domains: test_tools_group_*.py
    assert {name for name, _, _ in REJECTED} == {t.name for t in REG if t.domain in first_five}


@pytest.mark.parametrize(("name", "args", "words"), REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_argument(wc: WorkingCopy, name: str, args: dict[str, Any], words: str) -> None:
    before = wc.state
    res = fail(wc, name, **args)
    assert words in res.content
    assert res.content.startswith(name)
    assert wc.change_log == [] and wc.to_state() == before


# (tool, arguments) naming a record that exists only later in the story: must read as missing
FUTURE: list[tuple[str, dict[str, Any], str]] = [
    ("email_message_read", {"message_id": "em_0004"}, "em_9999"),
    ("message_read", {"message_id": "msg_0003"}, "msg_9999"),
    ("calendar_event_read", {"event_id": "ev_0002"}, "ev_9999"),
    ("calendar_event_update", {"event_id": "ev_0002", "title": "x"}, "ev_9999"),
    ("document_read", {"document_id": "doc_0002"}, "doc_9999"),
    ("document_delete", {"document_id": "doc_0002"}, "doc_9999"),
    ("document_update", {"document_id": "doc_0002", "heading": "h", "body": "b"}, "doc_9999"),
    ("contact_read", {"contact_id": "ct_0003"}, "ct_9999"),
    ("contact_update", {"contact_id": "ct_0003", "notes": "x"}, "ct_9999"),
]


@pytest.mark.parametrize(("name", "args", "missing_id"), FUTURE, ids=[f[0] for f in FUTURE])
def test_future_record_reads_as_missing(
    wc: WorkingCopy, name: str, args: dict[str, Any], missing_id: str
) -> None:
    future_id = next(v for k, v in args.items() if k.endswith("_id"))
    future = fail(wc, name, **args).content
    missing = fail(wc, name, **{**args, next(k for k in args if k.endswith("_id")): missing_id}).content
    assert future.replace(future_id, "ID") == missing.replace(missing_id, "ID")


def test_searches_and_lists_hide_the_future(wc: WorkingCopy) -> None:
    assert ok(wc, "email_message_search", query="summer")["count"] == 0
    assert ok(wc, "message_search", query="birthday")["count"] == 0
    assert ok(wc, "calendar_event_search", query="summer planning")["count"] == 0
    assert ok(wc, "document_read", query="timetable")["count"] == 0
    assert ok(wc, "contact_search", query="Ines")["count"] == 0
    assert fail(wc, "message_send", contact="Ines Marlow", text="hi").error is not None
    doc = ok(wc, "document_read", document_id="doc_0001")
    assert [s["heading"] for s in doc["sections"]] == ["Findings"]
    assert "emergency lighting" not in json.dumps(doc)


# ---- round trips ---------------------------------------------------------------------------


def test_email_round_trip(wc: WorkingCopy) -> None:
    found = ok(wc, "email_message_search", query="boiler", since="2026-03-01")
    assert [m["id"] for m in found["messages"]] == ["em_0002", "em_0001"]
    assert ok(wc, "email_message_search", sender="dana")["messages"][0]["id"] == "em_0003"
    mail = ok(wc, "email_message_read", message_id="em_0001")
    assert mail["subject"] == "Boiler inspection results" and mail["received_at"] == "2026-03-01T08:15"
    draft = ok(
        wc,
        "email_draft_create",
        subject="Flue seal",
        body="12 March works.",
        to="colm@pricehvac.example.com",
        in_reply_to="em_0002",
    )
    assert draft["draft_id"] == "dr_0002"
    assert ok(wc, "email_draft_read", draft_id="dr_0002")["to"] == ["colm@pricehvac.example.com"]
    assert ok(wc, "email_draft_read")["count"] == 2
    sent = ok(wc, "email_message_send", draft_id="dr_0002")
    assert sent["sent_id"] == "sent_0002" and sent["sent"]["body"] == "12 March works."
    assert ok(wc, "email_draft_read")["count"] == 1
    assert ok(wc, "email_sent_read", sent_id="sent_0002")["sent_at"] == "2026-03-10T09:00"
    assert ok(wc, "email_sent_read", query="flue")["count"] == 1
    assert [(c.op, c.collection) for c in wc.change_log] == [
        ("insert", "email/drafts"),
        ("insert", "email/sent"),
        ("delete", "email/drafts"),
    ]
    direct = ok(wc, "email_message_send", to=["dana@northfield.org"], subject="Hall", body="Fine.")
    assert direct["sent_id"] == "sent_0003"


def test_messages_round_trip(wc: WorkingCopy) -> None:
    sent = ok(wc, "message_send", contact="rafe vale", text="See you Sunday")
    assert sent["message"]["contact"] == "Rafe Vale" and sent["message"]["direction"] == "out"
    thread = ok(wc, "message_search", contact="Rafe")
    assert [m["id"] for m in thread["messages"]] == ["msg_0001", "msg_0002", sent["message_id"]]
    assert ok(wc, "message_read", message_id=sent["message_id"])["text"] == "See you Sunday"
    assert ok(wc, "message_send", contact="Dana Oduya", text="hi")["message_id"] == "msg_0005"


def test_calendar_round_trip(wc: WorkingCopy) -> None:
    new = ok(
        wc,
        "calendar_event_create",
        title="Fire drill",
        date="2026-03-18",
        start_time="14:00",
        end_time="14:30",
        attendees="Dana Oduya",
    )
    assert new["event_id"] == "ev_0003" and new["event"]["attendees"] == ["Dana Oduya"]
    day = ok(wc, "calendar_event_search", start_date="2026-03-18", end_date="2026-03-18")
    assert [e["id"] for e in day["events"]] == ["ev_0001", "ev_0003"]
    assert ok(wc, "calendar_event_search", query="drill")["count"] == 1
    moved = ok(wc, "calendar_event_update", event_id="ev_0003", date="2026-03-19", start_time="09:00")
    assert (moved["event"]["start"], moved["event"]["end"]) == ("2026-03-19T09:00", "2026-03-19T09:30")
    assert ok(wc, "calendar_event_read", event_id="ev_0003")["start"] == "2026-03-19T09:00"
    assert wc.change_log[-1].op == "replace" and wc.change_log[-1].tool == "calendar_event_update"
    assert fail(wc, "calendar_event_update", event_id="ev_0003").error is not None  # nothing to change


def test_documents_round_trip(wc: WorkingCopy) -> None:
    quota = ok(wc, "copier_entitlement_read", holder="tamsin")
    assert quota["entitlements"][0]["pages_left"] == 380
    doc = ok(wc, "document_create", title="Drill plan", content="Meet at the car park.", folder="work/safety")
    did = doc["document_id"]
    assert did == "doc_0003"
    ok(wc, "document_update", document_id=did, heading="Wardens", body="Dana and Tamsin.")
    ok(wc, "document_update", document_id=did, heading="Drill plan", body="Meet at the gate.", mode="replace")
    read = ok(wc, "document_read", document_id=did)
    assert [(s["heading"], s["body"]) for s in read["sections"]] == [
        ("Drill plan", "Meet at the gate."),
        ("Wardens", "Dana and Tamsin."),
    ]
    assert fail(wc, "document_update", document_id=did, heading="wardens", body="x").error is not None
    # a section still to come survives an update of the same document
    ok(wc, "document_update", document_id="doc_0001", heading="Costs", body="£40.")
    stored = wc.stored("documents/documents", "doc_0001")
    assert isinstance(stored, Document)
    assert [s.heading for s in stored.sections] == ["Findings", "Follow-up visit", "Costs"]
    assert ok(wc, "document_read", folder="safety")["documents"][0]["id"] == did
    assert ok(wc, "document_delete", document_id=did)["deleted"] == did
    assert fail(wc, "document_read", document_id=did).error is not None
    rep = ok(wc, "corporate_reporting_submit", report_type="Timesheet", period="2026-03", content="160 h")
    assert rep["report_id"] == "rep_0002" and rep["report"]["period"] == "2026-03"
    again = fail(wc, "corporate_reporting_submit", report_type="timesheet", period="2026-03", content="x")
    assert "already has" in again.content
    assert (
        fail(wc, "corporate_reporting_submit", report_type="timesheet", period="2026-02", content="x").error
        is not None
    )


def test_contacts_round_trip(wc: WorkingCopy) -> None:
    new = ok(
        wc,
        "contact_create",
        name="Colm Price",
        email="colm@pricehvac.example.com",
        phone="+44 1632 960222",
        relation="heating contractor",
    )
    assert new["contact_id"] == "ct_0004"
    assert [c["name"] for c in ok(wc, "contact_search", query="heating")["contacts"]] == ["Colm Price"]
    ok(wc, "contact_update", contact_id="ct_0004", notes="Prefers email.")
    read = ok(wc, "contact_read", contact_id="ct_0004")
    assert read["notes"] == "Prefers email." and read["relation"] == "heating contractor"
    assert fail(wc, "contact_update", contact_id="ct_0004", name="Dana Oduya").error is not None
    assert fail(wc, "contact_create", name="Bob", phone="call me").error is not None


def test_commit_carries_writes_into_the_next_step(wc: WorkingCopy) -> None:
    ok(wc, "contact_create", name="Colm Price")
    next_step = WorkingCopy(wc.to_state(), datetime(2026, 3, 12))
    assert ok(next_step, "contact_search", query="colm")["count"] == 1


def test_a_text_needs_a_number_or_a_thread(wc: WorkingCopy) -> None:
    created = ok(wc, "contact_create", name="Oona Pike", email="oona@example.org")
    refused = fail(wc, "message_send", contact="Oona Pike", text="hi")
    assert refused.error is not None and "no phone number" in refused.error
    assert not [m for m in ok(wc, "message_search", contact="Oona")["messages"]]  # nothing written
    ok(wc, "contact_update", contact_id=created["contact_id"], phone="+44 1632 960999")
    assert ok(wc, "message_send", contact="Oona Pike", text="hi")["message"]["direction"] == "out"
