"""Record types of the Media transcoding domain (paper Table 7; Appendix C.2).

Collections: ``media_transcoding/services`` (outside services that convert audio and video) and
``media_transcoding/jobs`` (conversions the user sent to them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mempa_tui.world.records import Record

__all__ = ["RESOLUTIONS", "Resolution", "TranscodeJob", "TranscodeService"]

#: Output resolutions a service may offer ('audio' for sound-only output).
Resolution = Literal["audio", "480p", "720p", "1080p", "1440p", "2160p"]
RESOLUTIONS: tuple[str, ...] = Resolution.__args__  # type: ignore[attr-defined]


class TranscodeService(Record):
    """A conversion service (collection ``media_transcoding/services``)."""

    name: str
    provider: str = ""
    input_formats: list[str] = Field(min_length=1, description="File types it accepts, lower case, e.g. 'mov'.")
    output_formats: list[str] = Field(min_length=1, description="File types it produces, lower case.")
    resolutions: list[Resolution] = Field(min_length=1)
    max_duration_minutes: int = Field(ge=1)
    price_per_minute: float = Field(ge=0)
    turnaround_hours: int = Field(ge=0, description="Hours from submission until the output is ready.")
    features: list[str] = Field(default_factory=list, description="e.g. 'subtitles', 'noise reduction'.")
    notes: str = ""


class TranscodeJob(Record):
    """A conversion the user submitted (collection ``media_transcoding/jobs``).

    ``entered_at`` is the submission time; the job counts as finished from ``ready_at`` on.
    """

    service_id: str
    service_name: str
    source_file: str
    source_format: str
    output_format: str
    resolution: Resolution
    duration_minutes: int = Field(ge=1)
    cost: float = Field(ge=0)
    ready_at: datetime
    notes: str = ""
