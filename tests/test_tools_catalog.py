"""The catalog against the paper's Table 7: 83 tools, 26 domains, 51 read, 32 write, 24 outward.

Fails until every domain of Table 7 is built (issue 3); that is intended.
"""

from __future__ import annotations

import argparse
import io
import json

from mempa_tui.cli._commands import cmd_tools
from mempa_tui.tools import DOMAINS, catalog, default_registry

# Table 7, domain by domain: (name, write, outward). Written out by hand from the paper.
R, W, O = (False, False), (True, False), (True, True)
TABLE_7: dict[str, list[tuple[str, tuple[bool, bool]]]] = {
    "email": [
        ("email_message_search", R), ("email_message_read", R), ("email_draft_read", R),
        ("email_sent_read", R), ("email_draft_create", W), ("email_message_send", O),
    ],
    "messages": [("message_search", R), ("message_read", R), ("message_send", O)],
    "calendar": [
        ("calendar_event_search", R), ("calendar_event_read", R),
        ("calendar_event_create", W), ("calendar_event_update", W),
    ],
    "documents": [
        ("copier_entitlement_read", R), ("document_read", R), ("corporate_reporting_submit", O),
        ("document_create", W), ("document_update", W), ("document_delete", W),
    ],
    "contacts": [("contact_search", R), ("contact_read", R), ("contact_create", W), ("contact_update", W)],
    "phone": [("phone_call_read", R), ("phone_call_dial", O)],
    "maps_places": [("club_closure_calendar_read", R), ("map_route_search", R), ("place_search", R)],
    "weather": [("weather_forecast_read", R)],
    "shopping": [
        ("shopping_product_search", R), ("shopping_order_read", R), ("shopping_return_case_read", R),
        ("shopping_order_create", O), ("shopping_order_update", O), ("shopping_return_case_update", O),
    ],
    "shipping": [("delivery_address_read", R), ("package_delivery_proof_read", R), ("package_tracking_read", R)],
    "finance": [
        ("utility_bill_read", R), ("payment_method_read", R), ("bill_payment_read", R),
        ("utility_account_holder_update", O), ("bill_payment_create", O),
    ],
    "appointments": [
        ("appointment_search", R), ("appointment_read", R), ("appointment_create", O), ("appointment_update", O),
    ],
    "restaurants": [
        ("restaurant_reservation_search", R), ("restaurant_reservation_read", R),
        ("restaurant_reservation_create", O), ("restaurant_reservation_update", O),
    ],
    "room_booking": [
        ("room_booking_search", R), ("room_booking_read", R), ("room_booking_create", O), ("room_booking_update", O),
    ],
    "hotels": [("hotel_search", R), ("hotel_booking_read", R), ("hotel_book", O), ("hotel_booking_update", O)],
    "reimbursement": [("reimbursement_submission_read", R), ("reimbursement_submission_create", O)],
    "conference_registration": [("conference_registration_read", R), ("conference_registration_create", O)],
    "grade_submission": [("grade_submission_read", R), ("grade_submission_create", O)],
    "flights": [("flight_search", R), ("flight_read", R), ("flight_booking_read", R), ("flight_book", O)],
    "scholarly_papers": [("scholarly_paper_search", R), ("scholarly_paper_read", R)],
    "recipes": [("recipe_search", R)],
    "comic_store": [("comic_store_inventory_read", R)],
    "cinema": [("cinema_showtime_search", R), ("cinema_ticket_read", R), ("cinema_ticket_purchase", O)],
    "exhibitions": [("exhibition_search", R), ("exhibition_ticket_read", R), ("exhibition_ticket_purchase", O)],
    "media_transcoding": [
        ("media_transcode_service_search", R), ("media_transcode_job_read", R), ("media_transcode_job_create", O),
    ],
    "household": [("household_inventory_search", R)],
}


def test_table_7_written_out_correctly() -> None:
    """The expected table itself adds up to the paper's totals (guards typos in this file)."""
    rows = [kind for tools in TABLE_7.values() for _, kind in tools]
    assert (len(TABLE_7), len(rows)) == (26, 83)
    assert sum(not w for w, _ in rows) == 51
    assert sum(w for w, _ in rows) == 32
    assert sum(o for _, o in rows) == 24
    assert list(TABLE_7) == [key for key, _ in DOMAINS]


def test_counts_match_the_paper() -> None:
    rows = catalog()
    assert len(rows) == 83
    assert len({r.domain for r in rows}) == 26
    assert sum(not r.write for r in rows) == 51
    assert sum(r.write for r in rows) == 32
    assert sum(r.outward for r in rows) == 24


def test_every_name_domain_and_kind_of_table_7() -> None:
    got = {r.name: (r.domain, (r.write, r.outward)) for r in catalog()}
    expected = {name: (domain, kind) for domain, tools in TABLE_7.items() for name, kind in tools}
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing, f"tools of Table 7 not built: {missing}"
    assert not extra, f"tools not in Table 7: {extra}"
    wrong = {n: (got[n], expected[n]) for n in expected if got[n] != expected[n]}
    assert not wrong, f"domain or read/write/outward differs from Table 7: {wrong}"


def test_own_record_writes_are_draft_routine_or_key() -> None:
    """Outward tools are tagged outward; the 8 own-record writes carry draft, routine or key."""
    for t in default_registry().tools():
        if t.write and not t.outward:
            assert t.tag in ("draft", "routine", "key"), t.name
        if not t.write:
            assert t.tag is None, t.name


def test_tools_list_command_prints_every_tool_with_its_tag() -> None:
    out = io.StringIO()
    assert cmd_tools(argparse.Namespace(json=False), out) == 0
    text = out.getvalue()
    for row in catalog():
        line = next(ln for ln in text.splitlines() if ln.split()[:1] == [row.name])
        assert line.split()[1:] == (["write", str(row.tag)] if row.write else ["read"])
    rows = catalog()
    assert text.splitlines()[-1].startswith(f"{len(rows)} tools in {len({r.domain for r in rows})} domains")
    out = io.StringIO()
    cmd_tools(argparse.Namespace(json=True), out)
    assert [r["name"] for r in json.loads(out.getvalue())] == [r.name for r in rows]


def test_readme_tag_table_matches_the_registry() -> None:
    """The README's World tools section states every write's tag as the registry holds it."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = text.split("## World tools", 1)[1].split("\n## ", 1)[0]
    table, outward_part = section.split("Every other write", 1)
    stated: dict[str, str] = {}
    for name, tag in re.findall(r"`(\w+)` \| (draft|routine|key) \|", table):
        stated[name] = tag
    for name in re.findall(r"`(\w+_\w+)`", outward_part.split("**Names.**", 1)[0]):
        stated[name] = "outward"
    actual = {t.name: str(t.tag) for t in default_registry().tools() if t.write}
    assert stated == actual
