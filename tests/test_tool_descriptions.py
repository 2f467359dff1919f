"""Tool descriptions were tightened (issue 12); the tools' schemas and behaviour were not changed.

Each tool's parameters schema with every ``description`` string removed, plus its domain, write
flag and tag, is hashed and compared with the hashes taken before the descriptions were edited:
names, parameters, types, required fields, enums, defaults, bounds and formats are all unchanged.
The description texts themselves must stay meaningful (paper Appendix C.2: every tool tells the
model what it does; arguments say their formats).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mempa_tui.tools import default_registry
from mempa_tui.tools._common import TIME_PATTERN

#: tool name -> sha256[:12] of its description-free schema, domain, write flag and tag, taken on
#: the code before the descriptions were tightened (commit e08d871).
BEFORE: dict[str, str] = {
    "appointment_create": "4f5dce4deca4",
    "appointment_read": "9a3803bc06c6",
    "appointment_search": "4e89de99731b",
    "appointment_update": "25b1d753370b",
    "bill_payment_create": "0f5a930f897a",
    "bill_payment_read": "6814bee7002a",
    "calendar_event_create": "7d84c435fd25",
    "calendar_event_read": "69314ad93018",
    "calendar_event_search": "a089e8513398",
    "calendar_event_update": "dc90cb6b711b",
    "cinema_showtime_search": "1bc6d509de63",
    "cinema_ticket_purchase": "ec8a124e3498",
    "cinema_ticket_read": "905a7fd8434b",
    "club_closure_calendar_read": "85eccb796fc5",
    "comic_store_inventory_read": "0664bd86e307",
    "conference_registration_create": "0867eb0452e3",
    "conference_registration_read": "b2a4092a04c1",
    "contact_create": "550bf175781d",
    "contact_read": "c0348cf46d6d",
    "contact_search": "295b5a405809",
    "contact_update": "ac3ccb4eb0f6",
    "copier_entitlement_read": "b2af10535033",
    "corporate_reporting_submit": "8aad67d3683c",
    "delivery_address_read": "5a4a3ef49340",
    "document_create": "0ee067db49d1",
    "document_delete": "c4d3ab0e8b4a",
    "document_read": "4c8d5c5296d0",
    "document_update": "13da0cc9f573",
    "email_draft_create": "36ca36bf79df",
    "email_draft_read": "2d1e1b562668",
    "email_message_read": "e757766aa653",
    "email_message_search": "af543e09bf37",
    "email_message_send": "33a3b34c8be9",
    "email_sent_read": "d185b6261805",
    "exhibition_search": "680fe0fea55b",
    "exhibition_ticket_purchase": "89217828d2e3",
    "exhibition_ticket_read": "38d985779615",
    "flight_book": "fedf9b0f4248",
    "flight_booking_read": "239c1ac58d43",
    "flight_read": "d8b492cf4524",
    "flight_search": "29e55bd54c6e",
    "grade_submission_create": "e87d32cd66a8",
    "grade_submission_read": "8a31c838224c",
    "hotel_book": "34d11cadef18",
    "hotel_booking_read": "928d5ead19a7",
    "hotel_booking_update": "6d168a2a874a",
    "hotel_search": "3d66156e1195",
    "household_inventory_search": "8995a8d220ed",
    "map_route_search": "200cada142f4",
    "media_transcode_job_create": "cb72e1a1eba3",
    "media_transcode_job_read": "412b54c61ea7",
    "media_transcode_service_search": "537d61a1c129",
    "message_read": "9a36d0ea8e6e",
    "message_search": "f07a04affe0d",
    "message_send": "fb8b5f5defbb",
    "package_delivery_proof_read": "39f9c2d06fa2",
    "package_tracking_read": "aa2e1de8f75a",
    "payment_method_read": "020a912fcbf8",
    "phone_call_dial": "11994f16be6e",
    "phone_call_read": "4e1afe0737c8",
    "place_search": "037d9ec0f49c",
    "recipe_search": "1f1f380e48bb",
    "reimbursement_submission_create": "229b863b3b36",
    "reimbursement_submission_read": "b16ea6fc9667",
    "restaurant_reservation_create": "f25590eed567",
    "restaurant_reservation_read": "e389dc96b4ae",
    "restaurant_reservation_search": "e95f3eba6fa6",
    "restaurant_reservation_update": "ee25686f8e4f",
    "room_booking_create": "8b4cdcfb83ce",
    "room_booking_read": "1e5b4e6c8c73",
    "room_booking_search": "8682dd07198f",
    "room_booking_update": "18a93cfd856f",
    "scholarly_paper_read": "7274449790a4",
    "scholarly_paper_search": "e8c9a53b1f86",
    "shopping_order_create": "a3fe5dba98bc",
    "shopping_order_read": "77b1ab248023",
    "shopping_order_update": "10a05e4f8675",
    "shopping_product_search": "d2ca678f5471",
    "shopping_return_case_read": "6530fcf24a39",
    "shopping_return_case_update": "42b0f7343ec9",
    "utility_account_holder_update": "0752bc53fd7a",
    "utility_bill_read": "01ac8a1e6fad",
    "weather_forecast_read": "ce974f07ffba",
}

#: Characters of every tool description plus every top-level argument description, before.
BEFORE_DESCRIPTION_CHARS = 31_202


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        if node.get("pattern") == TIME_PATTERN:
            # The one deliberate schema change since these hashes: a time argument's schema now
            # states HH:MM as a pattern instead of JSON Schema's RFC 3339 ``format: time``
            # (tests/test_time_schema.py says why); hashed as before, so nothing else may change.
            node = {**{k: v for k, v in node.items() if k != "pattern"}, "format": "time"}
        return {k: _strip(v) for k, v in node.items() if k != "description" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _structure(name: str) -> str:
    tdef = default_registry().get(name)
    assert tdef is not None
    return json.dumps({"schema": _strip(tdef.parameters), "domain": tdef.domain, "write": tdef.write,
                       "tag": tdef.tag}, sort_keys=True)


def _descriptions(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [d for k, v in node.items() if k != "description" for d in _descriptions(v)]
    if isinstance(node, list):
        return [d for v in node for d in _descriptions(v)]
    return []


def test_tool_names_and_schema_structure_are_unchanged() -> None:
    registry = default_registry()
    assert sorted(t.name for t in registry) == sorted(BEFORE)
    changed = {
        t.name: _structure(t.name)
        for t in registry
        if hashlib.sha256(_structure(t.name).encode()).hexdigest()[:12] != BEFORE[t.name]
    }
    assert not changed, f"schema structure changed (descriptions aside): {changed}"


def test_every_tool_and_argument_keeps_a_description() -> None:
    for t in default_registry():
        assert len(t.description.split()) >= 4, (t.name, t.description)
        assert t.description.rstrip().endswith("."), (t.name, t.description)
        for arg, schema in t.parameters["properties"].items():
            assert len(str(schema.get("description", "")).strip()) >= 3, (t.name, arg)


def test_descriptions_are_shorter_than_before() -> None:
    total = sum(
        len(t.description) + sum(len(p.get("description", "")) for p in t.parameters["properties"].values())
        for t in default_registry()
    )
    assert total < BEFORE_DESCRIPTION_CHARS * 0.9, total


def test_non_obvious_facts_stay_in_the_descriptions() -> None:
    """Side effects, approval, formats and units are still said where they matter."""
    by_name = {t.name: t for t in default_registry()}
    send = by_name["email_message_send"].description.lower()
    assert "send" in send
    for t in by_name.values():
        for arg, schema in t.parameters["properties"].items():
            text = str(schema.get("description", ""))
            if schema.get("format") == "date":
                assert "YYYY-MM-DD" in text, (t.name, arg)
            if schema.get("pattern") == TIME_PATTERN:
                assert "HH:MM" in text, (t.name, arg)
