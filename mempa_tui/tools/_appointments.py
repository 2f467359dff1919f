"""Appointments tools (paper Table 7, domain Appointments: 2 reads, 2 outward writes).

Collections: ``appointments/slots`` (times providers offer) and ``appointments/appointments`` (the
user's bookings). Both writes are outward: they book with, or change a booking at, a provider.

Decisions: ``appointment_search`` finds free bookable slots (not taken, not held by a booked
appointment, starting after the step's time) and ``appointment_read`` reads the user's own
appointments; booking and rescheduling need a free future slot, and a reschedule must stay with
the same provider; an appointment that has already started cannot be changed or cancelled; a
cancelled appointment frees its slot; cancelling and rescheduling in one call is refused.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from mempa_tui.tools._common import (
    DateArg,
    Limit,
    ToolError,
    check_range,
    in_date_range,
    known_name,
    matches,
    require,
    view,
)
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_appointments import Appointment, AppointmentSlot

__all__ = ["appointment_create", "appointment_read", "appointment_search", "appointment_update"]

SLOTS, APPOINTMENTS = "appointments/slots", "appointments/appointments"


def _held(wc: WorkingCopy, other_than: str | None = None) -> set[str]:
    return {
        a.slot_id
        for a in wc.records_as(APPOINTMENTS, Appointment)
        if a.status == "booked" and a.slot_id is not None and a.id != other_than
    }


def _free_slot(wc: WorkingCopy, slot_id: str, arg: str, other_than: str | None = None) -> AppointmentSlot:
    slot = require(wc, SLOTS, AppointmentSlot, slot_id, arg, "appointment slot")
    if slot.taken or slot.id in _held(wc, other_than):
        raise ToolError(f"{arg} {slot_id!r} is already booked; search for another slot")
    if slot.start <= wc.now:
        raise ToolError(f"{arg} {slot_id!r} starts {slot.start:%Y-%m-%d %H:%M}, which is not after now")
    return slot


@tool(domain="appointments")
def appointment_search(
    wc: WorkingCopy,
    query: str = "",
    provider: str = "",
    start_date: DateArg | None = None,
    end_date: DateArg | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Find free appointment slots that can be booked, earliest first.

    Args:
        query: words that must all appear in the provider, service or location; empty for all.
        provider: the provider's name (must be a known provider); empty for any.
        start_date: first day to include, YYYY-MM-DD.
        end_date: last day to include, YYYY-MM-DD.
        limit: most slots to return.

    Returns:
        the number of free slots and the slots.
    """
    check_range(start_date, end_date, "start_date", "end_date")
    slots = wc.records_as(SLOTS, AppointmentSlot)
    if provider.strip():
        names = [s.provider for s in slots] + [a.provider for a in wc.records_as(APPOINTMENTS, Appointment)]
        provider = known_name(provider, names, "provider", "appointment provider")
    held = _held(wc)
    found = [
        s
        for s in slots
        if not s.taken
        and s.id not in held
        and s.start > wc.now
        and (not provider or s.provider == provider)
        and matches(query, s.provider, s.service, s.location)
        and in_date_range(s.start, s.end, start_date, end_date)
    ]
    found.sort(key=lambda s: s.start)
    shown: list[JsonValue] = []
    for s in found[:limit]:
        one = view(s, None)
        one.pop("taken")
        shown.append(one)
    return {"count": len(found), "slots": shown}


@tool(domain="appointments")
def appointment_read(
    wc: WorkingCopy,
    appointment_id: str | None = None,
    query: str = "",
    include_cancelled: bool = False,
    limit: Limit = 10,
) -> JsonValue:
    """Read one of the user's appointments, or list them in start order when no id is given.

    Args:
        appointment_id: the appointment's id; leave out to list.
        query: when listing, words that must all appear in the provider, service, location,
            person or notes.
        include_cancelled: when listing, also show cancelled appointments.
        limit: when listing, most appointments to return.

    Returns:
        the appointment, or the number of matches and the appointments.
    """
    if appointment_id is not None:
        return view(
            require(wc, APPOINTMENTS, Appointment, appointment_id, "appointment_id", "appointment"),
            "booked_at",
        )
    found = [
        a
        for a in wc.records_as(APPOINTMENTS, Appointment)
        if (include_cancelled or a.status == "booked")
        and matches(query, a.provider, a.service, a.location, a.for_person, a.notes)
    ]
    found.sort(key=lambda a: a.start)
    return {"count": len(found), "appointments": [view(a, "booked_at") for a in found[:limit]]}


@tool(domain="appointments", write=True, tag="outward")
def appointment_create(wc: WorkingCopy, slot_id: str, for_person: str = "", notes: str = "") -> JsonValue:
    """Book a free appointment slot with its provider.

    Args:
        slot_id: the free slot's id, from appointment_search.
        for_person: who the appointment is for, if not the user.
        notes: a note for the provider.

    Returns:
        the new appointment's id and the appointment.
    """
    slot = _free_slot(wc, slot_id, "slot_id")
    appt = wc.create(
        APPOINTMENTS,
        {
            "provider": slot.provider,
            "service": slot.service,
            "start": slot.start,
            "end": slot.end,
            "location": slot.location,
            "slot_id": slot.id,
            "status": "booked",
            "for_person": for_person,
            "notes": notes,
        },
    )
    return {"appointment_id": appt.id, "appointment": view(appt, "booked_at")}


@tool(domain="appointments", write=True, tag="outward")
def appointment_update(
    wc: WorkingCopy,
    appointment_id: str,
    new_slot_id: str | None = None,
    notes: str | None = None,
    cancel: bool = False,
) -> JsonValue:
    """Move a booked appointment to another free slot of the same provider, change its note, or cancel it.

    Args:
        appointment_id: the appointment's id.
        new_slot_id: a free slot of the same provider to move to.
        notes: a new note for the provider (replaces the old one).
        cancel: true to cancel the appointment; then give no new slot.

    Returns:
        the appointment as it stands after the change.
    """
    appt = require(wc, APPOINTMENTS, Appointment, appointment_id, "appointment_id", "appointment")
    if cancel and new_slot_id is not None:
        raise ToolError("cancel true cannot be combined with new_slot_id; cancel or move, not both")
    if not cancel and new_slot_id is None and notes is None:
        raise ToolError("no change was given; pass new_slot_id, notes or cancel true")
    if appt.status == "cancelled":
        raise ToolError(
            f"appointment_id {appointment_id!r} is cancelled; book a new slot with appointment_create"
        )
    if appt.start <= wc.now:
        raise ToolError(
            f"appointment_id {appointment_id!r} started at {appt.start:%Y-%m-%d %H:%M} and can no longer be changed"
        )
    update: dict[str, Any] = {}
    if new_slot_id is not None:
        slot = _free_slot(wc, new_slot_id, "new_slot_id", other_than=appt.id)
        if slot.provider != appt.provider:
            raise ToolError(
                f"new_slot_id {new_slot_id!r} is with {slot.provider}, not {appt.provider}; "
                "book a different provider with appointment_create"
            )
        if slot.id == appt.slot_id:
            raise ToolError(f"new_slot_id {new_slot_id!r} is the slot the appointment already holds")
        update.update(
            {
                "slot_id": slot.id,
                "start": slot.start,
                "end": slot.end,
                "location": slot.location,
                "service": slot.service,
            }
        )
    if notes is not None:
        update["notes"] = notes
    if cancel:
        update["status"] = "cancelled"
    new = Appointment.model_validate({**appt.model_dump(), **update})
    wc.replace(APPOINTMENTS, new)
    return {"appointment_id": new.id, "appointment": view(new, "booked_at")}
