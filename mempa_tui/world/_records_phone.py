"""Record types of the Phone domain (paper Table 7: Phone).

Collection ``phone/calls``: the user's call log. ``entered_at`` is when the call happened.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mempa_tui.world.records import Record

__all__ = ["PhoneCall"]


class PhoneCall(Record):
    """One call in the user's call log (collection ``phone/calls``).

    ``direction`` is ``in`` for an answered incoming call, ``missed`` for an unanswered one and
    ``out`` for a call the user (or the PA for the user) placed.
    """

    contact: str = Field(default="", description="The other party's name; empty for an unknown caller.")
    number: str = Field(description="The other party's phone number.")
    direction: Literal["in", "out", "missed"]
    duration_minutes: int = Field(default=0, ge=0, description="Length of the call in whole minutes.")
    purpose: str = Field(default="", description="Why an outgoing call was placed.")
    summary: str = Field(default="", description="What was said, or a voicemail's text.")
