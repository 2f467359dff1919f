"""Record types of the fixture tree, one pydantic model per collection.

A user's fixture tree (``worlds/users/<label>/fixtures/``) holds one YAML file per collection,
``<collection>.yaml``, each a list of records. Every record has an ``id`` unique in its collection
and an ``entered_at`` story time: the tools hide a record whose ``entered_at`` is after the step's
time (paper Appendix C.2, 'Visibility rules'). A document's sections carry their own
``entered_at`` and are hidden the same way.

Collections for the domains of Table 7 arrive with the tool domains; a collection a user's
storyline does not use may be absent from the fixture tree and reads as empty.

All times are naive story-time datetimes, written ``YYYY-MM-DDTHH:MM`` in YAML.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "COLLECTIONS",
    "CalendarEvent",
    "Contact",
    "CopierEntitlement",
    "CorporateReport",
    "Document",
    "DocumentSection",
    "EmailDraft",
    "EmailMessage",
    "ID_PREFIXES",
    "Record",
    "SentEmail",
    "TextMessage",
]


class Record(BaseModel):
    """Base of every world record.

    Attributes:
        id: unique within its collection, e.g. ``em_0012``.
        entered_at: when the record enters the world; hidden from steps before this time.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    entered_at: datetime


# ---- Email (Table 7: Email) -----------------------------------------------------------------


class EmailMessage(Record):
    """A message in the user's inbox (collection ``email/inbox``)."""

    sender_name: str
    sender_address: str
    to: list[str] = Field(min_length=1, description="Recipient addresses.")
    cc: list[str] = Field(default_factory=list)
    subject: str
    body: str
    thread_id: str | None = None


class EmailDraft(Record):
    """An unsent draft (collection ``email/drafts``)."""

    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    subject: str
    body: str
    in_reply_to: str | None = Field(default=None, description="Inbox message id replied to.")


class SentEmail(Record):
    """A sent email (collection ``email/sent``); ``entered_at`` is when it was sent."""

    to: list[str] = Field(min_length=1)
    cc: list[str] = Field(default_factory=list)
    subject: str
    body: str
    in_reply_to: str | None = None


# ---- Messages (Table 7: Messages) ------------------------------------------------------------


class TextMessage(Record):
    """A chat/SMS message with one contact (collection ``messages/messages``).

    ``direction`` is ``in`` for a message the user received and ``out`` for one the user (or the
    PA on the user's behalf) sent; ``contact`` is the other party's name as in contacts.
    """

    contact: str
    direction: Literal["in", "out"]
    text: str


# ---- Calendar ---------------------------------------------------------------------------------


class CalendarEvent(Record):
    """An event in the user's calendar (collection ``calendar/events``)."""

    title: str
    start: datetime
    end: datetime
    location: str = ""
    attendees: list[str] = Field(default_factory=list, description="Names of other attendees.")
    notes: str = ""


# ---- Documents --------------------------------------------------------------------------------


class DocumentSection(BaseModel):
    """A dated section of a document; hidden before its ``entered_at``."""

    model_config = ConfigDict(extra="forbid")

    heading: str
    body: str
    entered_at: datetime


class Document(Record):
    """A document in the user's files (collection ``documents/documents``)."""

    title: str
    folder: str = Field(default="", description="Folder path for display, e.g. 'work/reports'.")
    sections: list[DocumentSection] = Field(default_factory=list)


class CopierEntitlement(Record):
    """A print/copy quota held by the user (collection ``documents/copier_entitlements``)."""

    holder: str
    department: str
    pages_per_month: int = Field(ge=0)
    pages_used: int = Field(ge=0)
    color_allowed: bool
    valid_until: date


class CorporateReport(Record):
    """A report submitted to the employer's reporting system (``documents/corporate_reports``)."""

    report_type: str
    period: str = Field(description="Reporting period, e.g. '2026-03' or '2026-Q1'.")
    content: str


# ---- Contacts ---------------------------------------------------------------------------------


class Contact(Record):
    """A person in the user's address book (collection ``contacts/contacts``)."""

    name: str
    email: str = ""
    phone: str = Field(default="", description="Phone number, digits and + - ( ) only.")
    organization: str = ""
    relation: str = ""
    notes: str = ""


# ---- Table 7 domains kept in their own modules (imported here, after Record exists) ----------

from mempa_tui.world._records_appointments import Appointment, AppointmentSlot  # noqa: E402
from mempa_tui.world._records_finance import (  # noqa: E402
    BillPayment,
    PaymentMethod,
    UtilityAccount,
    UtilityBill,
)
from mempa_tui.world._records_maps_places import ClubClosure, Place, Route  # noqa: E402
from mempa_tui.world._records_phone import PhoneCall  # noqa: E402
from mempa_tui.world._records_shipping import DeliveryAddress, DeliveryProof, Package  # noqa: E402
from mempa_tui.world._records_shopping import Order, Product, ReturnCase  # noqa: E402
from mempa_tui.world._records_weather import Forecast  # noqa: E402
from mempa_tui.world._records_conference_registration import (  # noqa: E402
    Conference,
    ConferenceRegistration,
)
from mempa_tui.world._records_flights import Flight, FlightBooking  # noqa: E402
from mempa_tui.world._records_grade_submission import Course, GradeSubmission  # noqa: E402
from mempa_tui.world._records_hotels import Hotel, HotelBooking  # noqa: E402
from mempa_tui.world._records_reimbursement import ReimbursementPolicy, ReimbursementSubmission  # noqa: E402
from mempa_tui.world._records_restaurants import Restaurant, RestaurantReservation  # noqa: E402
from mempa_tui.world._records_room_booking import BookableRoom, RoomBooking  # noqa: E402
from mempa_tui.world._records_cinema import CinemaTicket, Showtime  # noqa: E402
from mempa_tui.world._records_comic_store import ComicItem  # noqa: E402
from mempa_tui.world._records_exhibitions import Exhibition, ExhibitionTicket  # noqa: E402
from mempa_tui.world._records_household import HouseholdItem  # noqa: E402
from mempa_tui.world._records_media_transcoding import TranscodeJob, TranscodeService  # noqa: E402
from mempa_tui.world._records_recipes import Recipe  # noqa: E402
from mempa_tui.world._records_scholarly_papers import ScholarlyPaper  # noqa: E402

#: Collection path -> record model, for the domains built so far.
COLLECTIONS: dict[str, type[Record]] = {
    "email/inbox": EmailMessage,
    "email/drafts": EmailDraft,
    "email/sent": SentEmail,
    "messages/messages": TextMessage,
    "calendar/events": CalendarEvent,
    "documents/documents": Document,
    "documents/copier_entitlements": CopierEntitlement,
    "documents/corporate_reports": CorporateReport,
    "contacts/contacts": Contact,
    "phone/calls": PhoneCall,
    "maps_places/places": Place,
    "maps_places/routes": Route,
    "maps_places/club_closures": ClubClosure,
    "weather/forecasts": Forecast,
    "shopping/products": Product,
    "shopping/orders": Order,
    "shopping/return_cases": ReturnCase,
    "shipping/addresses": DeliveryAddress,
    "shipping/packages": Package,
    "shipping/delivery_proofs": DeliveryProof,
    "finance/utility_accounts": UtilityAccount,
    "finance/utility_bills": UtilityBill,
    "finance/payment_methods": PaymentMethod,
    "finance/bill_payments": BillPayment,
    "appointments/slots": AppointmentSlot,
    "appointments/appointments": Appointment,
    "restaurants/restaurants": Restaurant,
    "restaurants/reservations": RestaurantReservation,
    "room_booking/rooms": BookableRoom,
    "room_booking/bookings": RoomBooking,
    "hotels/hotels": Hotel,
    "hotels/bookings": HotelBooking,
    "reimbursement/policies": ReimbursementPolicy,
    "reimbursement/submissions": ReimbursementSubmission,
    "conference_registration/conferences": Conference,
    "conference_registration/registrations": ConferenceRegistration,
    "grade_submission/courses": Course,
    "grade_submission/submissions": GradeSubmission,
    "flights/flights": Flight,
    "flights/bookings": FlightBooking,
    "scholarly_papers/papers": ScholarlyPaper,
    "recipes/recipes": Recipe,
    "comic_store/inventory": ComicItem,
    "cinema/showtimes": Showtime,
    "cinema/tickets": CinemaTicket,
    "exhibitions/exhibitions": Exhibition,
    "exhibitions/tickets": ExhibitionTicket,
    "media_transcoding/services": TranscodeService,
    "media_transcoding/jobs": TranscodeJob,
    "household/inventory": HouseholdItem,
}

#: Collection path -> prefix of the ids the tools give new records (``<prefix><4 digits>``,
#: e.g. ``em_0013``). Every collection of :data:`COLLECTIONS` has one.
ID_PREFIXES: dict[str, str] = {
    "email/inbox": "em_",
    "email/drafts": "dr_",
    "email/sent": "sent_",
    "messages/messages": "msg_",
    "calendar/events": "ev_",
    "documents/documents": "doc_",
    "documents/copier_entitlements": "ce_",
    "documents/corporate_reports": "rep_",
    "contacts/contacts": "ct_",
    "phone/calls": "call_",
    "maps_places/places": "pl_",
    "maps_places/routes": "route_",
    "maps_places/club_closures": "clo_",
    "weather/forecasts": "wf_",
    "shopping/products": "prod_",
    "shopping/orders": "ord_",
    "shopping/return_cases": "ret_",
    "shipping/addresses": "addr_",
    "shipping/packages": "pkg_",
    "shipping/delivery_proofs": "pod_",
    "finance/utility_accounts": "ua_",
    "finance/utility_bills": "bill_",
    "finance/payment_methods": "pm_",
    "finance/bill_payments": "pay_",
    "appointments/slots": "slot_",
    "appointments/appointments": "appt_",
    "restaurants/restaurants": "rs_",
    "restaurants/reservations": "rr_",
    "room_booking/rooms": "room_",
    "room_booking/bookings": "rb_",
    "hotels/hotels": "ht_",
    "hotels/bookings": "hb_",
    "reimbursement/policies": "rp_",
    "reimbursement/submissions": "rm_",
    "conference_registration/conferences": "conf_",
    "conference_registration/registrations": "creg_",
    "grade_submission/courses": "crs_",
    "grade_submission/submissions": "gs_",
    "flights/flights": "fl_",
    "flights/bookings": "fb_",
    "scholarly_papers/papers": "pap_",
    "recipes/recipes": "rcp_",
    "comic_store/inventory": "cmc_",
    "cinema/showtimes": "show_",
    "cinema/tickets": "ctk_",
    "exhibitions/exhibitions": "exh_",
    "exhibitions/tickets": "etk_",
    "media_transcoding/services": "mts_",
    "media_transcoding/jobs": "tjob_",
    "household/inventory": "hh_",
}
