"""WorkingCopy: time visibility, logs, ids, atomic writes, commit, write locks (Appendix C.2, C.3)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from mempa_tui.scripts.schema import WriteLock
from mempa_tui.world import (
    FixtureError,
    UnknownCollectionError,
    WorkingCopy,
    WorldPathError,
    WorldState,
)
from mempa_tui.world.records import Contact, Document, EmailDraft

FIXTURES = Path(__file__).parent / "fixtures_world" / "valid" / "users" / "T" / "fixtures"
MARCH = datetime(2026, 3, 10, 9, 0)


@pytest.fixture()
def state() -> WorldState:
    return WorldState.from_directory(FIXTURES)


def test_records_hide_the_future(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    ids = [r.id for r in wc.records("email/inbox")]
    assert ids == ["em_0001", "em_0002", "em_0003"]
    assert wc.get("email/inbox", "em_0004") is None
    assert wc.get("email/inbox", "em_9999") is None
    wc.now = datetime(2026, 5, 2)
    assert wc.get("email/inbox", "em_0004") is not None


def test_document_sections_are_dated(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    doc = wc.get("documents/documents", "doc_0001")
    assert isinstance(doc, Document)
    assert [s.heading for s in doc.sections] == ["Findings"]
    stored = wc.stored("documents/documents", "doc_0001")
    assert isinstance(stored, Document) and len(stored.sections) == 2
    assert len(wc._all_records("documents/documents")) == 2


def test_clock_moves_forward_only(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    wc.now = datetime(2026, 3, 11)
    with pytest.raises(ValueError, match="forward"):
        wc.now = datetime(2026, 3, 1)


def test_new_ids_count_hidden_records_and_take_now(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    assert wc.new_id("email/inbox") == "em_0005"  # em_0004 is still in the future
    draft = wc.create("email/drafts", {"subject": "s", "body": "b"})
    assert draft.id == "dr_0002" and draft.entered_at == MARCH
    assert wc.new_id("calendar/events") == "ev_0003"
    assert wc.new_id("contacts/contacts") == "ct_0004"


def test_change_log_records_every_write(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    draft = wc.create("email/drafts", {"subject": "s", "body": "b"}, tool="email_draft_create")
    old = wc.get("contacts/contacts", "ct_0002")
    assert isinstance(old, Contact)
    wc.replace("contacts/contacts", old.model_copy(update={"phone": "123"}), tool="contact_update")
    wc.delete("email/drafts", "dr_0001", tool="x")
    ops = [(c.tool, c.collection, c.op, c.record_id) for c in wc.change_log]
    assert ops == [
        ("email_draft_create", "email/drafts", "insert", draft.id),
        ("contact_update", "contacts/contacts", "replace", "ct_0002"),
        ("x", "email/drafts", "delete", "dr_0001"),
    ]
    assert wc.change_log[1].before is not None and wc.change_log[1].before["phone"] == ""
    assert wc.change_log[1].after is not None and wc.change_log[1].after["phone"] == "123"
    assert wc.change_log[2].after is None


def test_future_records_cannot_be_changed(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    with pytest.raises(KeyError):
        wc.delete("contacts/contacts", "ct_0003")
    with pytest.raises(ValueError, match="already"):
        wc.insert("contacts/contacts", Contact(id="ct_0003", entered_at=MARCH, name="X"))


@pytest.mark.parametrize("name", ["../secrets", "/etc/passwd", "email/../../x", "_notes/canon"])
def test_collection_paths_are_checked(state: WorldState, name: str) -> None:
    wc = WorkingCopy(state, MARCH)
    with pytest.raises((WorldPathError, UnknownCollectionError)):
        wc.records(name)


def test_path_escape_is_a_path_error(state: WorldState) -> None:
    with pytest.raises(WorldPathError):
        WorkingCopy(state, MARCH).records("../../etc/passwd")


def test_transaction_rolls_back_everything(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    with pytest.raises(RuntimeError), wc.transaction(tool="t"):
        wc.create("email/drafts", {"subject": "s", "body": "b"})
        wc.delete("email/drafts", "dr_0001")
        raise RuntimeError("boom")
    assert [d.id for d in wc.records("email/drafts")] == ["dr_0001"]
    assert wc.change_log == [] and not wc.dirty
    assert wc.to_state() is state


def test_to_state_writes_only_changed_collections(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    wc.records("email/inbox")  # read only
    wc.create("email/drafts", {"subject": "Line", "body": "two\nlines", "to": ["a@b.org"]})
    new = wc.to_state()
    changed = {p for p in new if new[p] != state.get(p)}
    assert changed == {"email/drafts.yaml"}
    assert new.files["email/inbox.yaml"] is state.files["email/inbox.yaml"]
    again = WorkingCopy(new, MARCH)
    drafts = again.records("email/drafts")
    assert isinstance(drafts[-1], EmailDraft) and drafts[-1].body == "two\nlines"
    assert drafts[-1].entered_at == MARCH


def test_new_collection_file_is_created(state: WorldState) -> None:
    wc = WorkingCopy(WorldState({}), MARCH)
    wc.create("contacts/contacts", {"name": "Ada"})
    assert "contacts/contacts.yaml" in wc.to_state()


def test_bad_fixture_names_file_record_and_field() -> None:
    bad = WorldState(
        {"contacts/contacts.yaml": b"- id: ct_0001\n  entered_at: 2026-01-01T00:00\n  nmae: X\n"}
    )
    with pytest.raises(FixtureError) as info:
        WorkingCopy(bad, MARCH).records("contacts/contacts")
    err = info.value
    assert err.path == "contacts/contacts.yaml" and err.record_id == "ct_0001"
    assert "name" in str(err) or "nmae" in str(err)


def test_duplicate_fixture_ids_are_refused() -> None:
    rec = b"- id: ct_0001\n  entered_at: 2026-01-01T00:00\n  name: X\n"
    with pytest.raises(FixtureError, match="duplicate id 'ct_0001'"):
        WorkingCopy(WorldState({"contacts/contacts.yaml": rec + rec}), MARCH).records("contacts/contacts")


def test_write_locks(state: WorldState) -> None:
    wc = WorkingCopy(state, MARCH)
    lock = WriteLock(tool="email_message_send", match={"to": ["dana@northfield.org"]}, unlocked_by="reply")
    wc.add_write_lock(lock)
    assert wc.locked_by("mcp_state_email_message_send", {"to": ["Dana@Northfield.org", "x@y.org"]}) == lock
    assert wc.locked_by("email_message_send", {"to": ["other@y.org"]}) is None
    assert wc.locked_by("email_draft_create", {"to": ["dana@northfield.org"]}) is None
    wc.release_fact("reply")
    assert wc.locked_by("email_message_send", {"to": ["dana@northfield.org"]}) is None
    assert wc.released_facts == frozenset({"reply"})
