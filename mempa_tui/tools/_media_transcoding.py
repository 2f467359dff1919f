"""Media transcoding tools (paper Table 7, domain Media transcoding: 2 reads, 1 outward write).

Collections: ``media_transcoding/services`` and ``media_transcoding/jobs``. Sending a file to a
conversion service acts toward that service (and costs money), so ``media_transcode_job_create``
is tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- File formats are compared lower case without a leading dot ('.MOV' = 'mov').
- A job must fit its service: the source format among its inputs, the output format among its
  outputs, the resolution among its resolutions, the duration within its limit. Its cost is
  price per minute x minutes; it is ready ``turnaround_hours`` after submission.
- A job's ``status`` is derived from the clock when read: ``processing`` before ``ready_at``,
  ``ready`` from then on (no stored status to drift).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, Field, JsonValue

from mempa_tui.tools._common import Limit, TextArg, ToolError, matches, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_media_transcoding import (
    Resolution,
    TranscodeJob,
    TranscodeService,
)

__all__ = ["media_transcode_job_create", "media_transcode_job_read", "media_transcode_service_search"]

SERVICES, JOBS = "media_transcoding/services", "media_transcoding/jobs"

#: Output formats that carry sound only (resolution must be 'audio' for these and only these).
_AUDIO = frozenset({"mp3", "wav", "flac", "m4a", "aac", "ogg", "opus"})


def _fmt(value: str) -> str:
    return value.strip().lower().lstrip(".")


#: A file format such as 'mp4' (case and a leading dot ignored).
FormatArg = Annotated[str, AfterValidator(_fmt)]
Minutes = Annotated[int, Field(ge=1, le=6000)]


def _fits(s: TranscodeService, source: str, output: str, resolution: str | None) -> bool:
    return (
        (not source or source in s.input_formats)
        and (not output or output in s.output_formats)
        and (resolution is None or resolution in s.resolutions)
    )


def _job(j: TranscodeJob, wc: WorkingCopy) -> dict[str, Any]:
    out = view(j, "submitted_at")
    out["status"] = "ready" if wc.now >= j.ready_at else "processing"
    return out


@tool(domain="media_transcoding")
def media_transcode_service_search(
    wc: WorkingCopy,
    query: str = "",
    input_format: FormatArg = "",
    output_format: FormatArg = "",
    resolution: Resolution | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Find media conversion services, cheapest per minute first.

    Args:
        query: words that must all appear in the name, provider, features or notes; empty matches all.
        input_format: a file type the service must accept.
        output_format: a file type it must produce.
        resolution: an output resolution it must offer.
        limit: most services to return.

    Returns:
        the number of matches and the services.
    """
    found = [
        s
        for s in wc.records_as(SERVICES, TranscodeService)
        if matches(query, s.name, s.provider, s.features, s.notes) and _fits(s, input_format, output_format, resolution)
    ]
    found.sort(key=lambda s: (s.price_per_minute, s.name))
    return {"count": len(found), "services": [view(s, None) for s in found[:limit]]}


@tool(domain="media_transcoding")
def media_transcode_job_read(wc: WorkingCopy, job_id: str | None = None) -> JsonValue:
    """Read one of the user's conversion jobs, or list them (latest submitted first).

    Args:
        job_id: the job's id; leave out to list all jobs.

    Returns:
        the job,
        or the number of jobs and the jobs.
    """
    if job_id is not None:
        return _job(require(wc, JOBS, TranscodeJob, job_id, "job_id", "transcoding job"), wc)
    rows = sorted(wc.records_as(JOBS, TranscodeJob), key=lambda j: j.entered_at, reverse=True)
    return {"count": len(rows), "jobs": [_job(j, wc) for j in rows]}


@tool(domain="media_transcoding", write=True, tag="outward")
def media_transcode_job_create(
    wc: WorkingCopy,
    service_id: str,
    source_file: TextArg,
    source_format: FormatArg,
    output_format: FormatArg,
    resolution: Resolution,
    duration_minutes: Minutes,
    notes: str = "",
) -> JsonValue:
    """Send a media file to a conversion service (uploaded and charged at once).

    Args:
        service_id: the service's id, from media_transcode_service_search.
        source_file: the file's name.
        source_format: the file's type; the service must accept it.
        output_format: the type to produce; the service must offer it.
        resolution: the output resolution.
        duration_minutes: the file's length in whole minutes, within the service's limit.
        notes: instructions for the service.

    Returns:
        the new job's id and the job with its cost and when it will be ready.
    """
    svc = require(wc, SERVICES, TranscodeService, service_id, "service_id", "transcoding service")
    if source_format not in svc.input_formats:
        raise ToolError(
            f"source_format '{source_format}' is not accepted by {svc.name} (accepts: {', '.join(svc.input_formats)})"
        )
    if output_format not in svc.output_formats:
        raise ToolError(
            f"output_format '{output_format}' is not produced by {svc.name} (produces: {', '.join(svc.output_formats)})"
        )
    if resolution not in svc.resolutions:
        raise ToolError(f"resolution '{resolution}' is not offered by {svc.name} (offers: {', '.join(svc.resolutions)})")
    if (resolution == "audio") != (output_format in _AUDIO):
        raise ToolError(
            f"resolution '{resolution}' does not go with output_format '{output_format}'"
            " (use 'audio' exactly for sound-only formats such as mp3, wav, flac, m4a)"
        )
    if duration_minutes > svc.max_duration_minutes:
        raise ToolError(
            f"duration_minutes {duration_minutes} is longer than {svc.name} takes ({svc.max_duration_minutes} at most)"
        )
    job = wc.create(
        JOBS,
        {
            "service_id": svc.id,
            "service_name": svc.name,
            "source_file": source_file.strip(),
            "source_format": source_format,
            "output_format": output_format,
            "resolution": resolution,
            "duration_minutes": duration_minutes,
            "cost": round(svc.price_per_minute * duration_minutes, 2),
            "ready_at": wc.now + timedelta(hours=svc.turnaround_hours),
            "notes": notes,
        },
    )
    assert isinstance(job, TranscodeJob)
    return {"job_id": job.id, "job": _job(job, wc)}
