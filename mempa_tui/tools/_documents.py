"""Documents tools (paper Table 7, domain Documents: 2 read, 3 own-record writes, 1 outward).

Collections: ``documents/documents`` (with dated sections), ``documents/copier_entitlements``,
``documents/corporate_reports``. Reads show only the sections written by the step's time
(Appendix C.2, 'Visibility rules'); writes keep the sections still to come.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, JsonValue

from mempa_tui.tools._common import Limit, TextArg, ToolError, matches, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world.records import (
    CopierEntitlement,
    CorporateReport,
    Document,
    DocumentSection,
)

__all__ = [
    "copier_entitlement_read",
    "corporate_reporting_submit",
    "document_create",
    "document_delete",
    "document_read",
    "document_update",
]

DOCS, COPIER, REPORTS = "documents/documents", "documents/copier_entitlements", "documents/corporate_reports"

_PERIOD_RE = re.compile(r"^\d{4}-(0[1-9]|1[0-2]|Q[1-4])$")


def _check_period(value: str) -> str:
    if not _PERIOD_RE.match(value.strip()):
        raise ValueError("is not a reporting period like 2026-03 (a month) or 2026-Q1 (a quarter)")
    return value.strip()


PeriodArg = Annotated[str, AfterValidator(_check_period)]


def _doc_view(doc: Document) -> dict[str, Any]:
    return {
        "id": doc.id,
        "title": doc.title,
        "folder": doc.folder,
        "created_at": view(doc, "created_at")["created_at"],
        "sections": [
            {"heading": s.heading, "body": s.body, "written_at": s.entered_at.strftime("%Y-%m-%dT%H:%M")}
            for s in doc.sections
        ],
    }


@tool(domain="documents")
def copier_entitlement_read(wc: WorkingCopy, holder: str = "") -> JsonValue:
    """Read print and copy quotas: pages per month, pages used, pages left, colour, expiry.

    Args:
        holder: part of the holder's name or department; empty lists every quota.

    Returns:
        the matching entitlements, each with pages_left added.
    """
    out: list[JsonValue] = []
    for e in wc.records_as(COPIER, CopierEntitlement):
        if matches(holder, e.holder, e.department):
            row = view(e, None)
            row["pages_left"] = max(e.pages_per_month - e.pages_used, 0)
            out.append(row)
    return {"count": len(out), "entitlements": out}


@tool(domain="documents")
def document_read(
    wc: WorkingCopy,
    document_id: str | None = None,
    query: str = "",
    folder: str = "",
    limit: Limit = 20,
) -> JsonValue:
    """Read one document in full, or list documents (title, folder, headings) when no id is given.

    Args:
        document_id: the document's id; leave out to list documents.
        query: when listing, words that must all appear in the title, folder or text.
        folder: when listing, part of the folder path, e.g. work/reports.
        limit: when listing, most documents to return.

    Returns:
        the document with its sections, or the number of matches and a list of documents.
    """
    if document_id is not None:
        return _doc_view(require(wc, DOCS, Document, document_id, "document_id", "document"))
    found = [
        d
        for d in wc.records_as(DOCS, Document)
        if matches(query, d.title, d.folder, [s.heading for s in d.sections], [s.body for s in d.sections])
        and matches(folder, d.folder)
    ]
    rows: list[JsonValue] = [
        {"id": d.id, "title": d.title, "folder": d.folder, "headings": [s.heading for s in d.sections]}
        for d in found[:limit]
    ]
    return {"count": len(found), "documents": rows}


@tool(domain="documents", write=True, tag="outward")
def corporate_reporting_submit(
    wc: WorkingCopy, report_type: TextArg, period: PeriodArg, content: TextArg
) -> JsonValue:
    """Submit a report to the employer's reporting system; each report type once per period.

    Args:
        report_type: the kind of report, e.g. expense summary or timesheet.
        period: the period it covers, 2026-03 for a month or 2026-Q1 for a quarter.
        content: the full text of the report.

    Returns:
        the submission's id and the report as submitted.
    """
    for r in wc.records_as(REPORTS, CorporateReport):
        if r.period == period and r.report_type.strip().casefold() == report_type.strip().casefold():
            raise ToolError(
                f"period {period!r} already has a {r.report_type!r} report ({r.id}); "
                "each report type can be submitted once per period"
            )
    report = wc.create(REPORTS, {"report_type": report_type.strip(), "period": period, "content": content})
    return {"report_id": report.id, "report": view(report, "submitted_at")}


@tool(domain="documents", write=True, tag="draft")
def document_create(
    wc: WorkingCopy, title: TextArg, content: TextArg, folder: str = "", heading: str = ""
) -> JsonValue:
    """Create a new document with one section of text.

    Args:
        title: the document's title.
        content: the text of its first section.
        folder: folder path to file it under, e.g. work/reports.
        heading: heading of the first section; the title is used when empty.

    Returns:
        the new document's id and the document.
    """
    section = DocumentSection(heading=heading.strip() or title, body=content, entered_at=wc.now)
    doc = wc.create(DOCS, {"title": title, "folder": folder.strip("/ "), "sections": [section]})
    assert isinstance(doc, Document)
    return {"document_id": doc.id, "document": _doc_view(doc)}


@tool(domain="documents", write=True, tag="routine")
def document_update(
    wc: WorkingCopy,
    document_id: str,
    heading: TextArg,
    body: TextArg,
    mode: Literal["append", "replace"] = "append",
) -> JsonValue:
    """Add a section to a document, or replace the text of one of its sections.

    Args:
        document_id: the document's id.
        heading: heading of the section to add, or of the existing section to replace.
        body: the section's text.
        mode: append adds a new section at the end; replace rewrites the section with this
            heading.

    Returns:
        the document as updated.
    """
    require(wc, DOCS, Document, document_id, "document_id", "document")
    stored = wc.stored(DOCS, document_id)
    assert isinstance(stored, Document)
    visible = [i for i, s in enumerate(stored.sections) if s.entered_at <= wc.now]
    same = [i for i in visible if stored.sections[i].heading.strip().casefold() == heading.strip().casefold()]
    sections = list(stored.sections)
    new_section = DocumentSection(heading=heading.strip(), body=body, entered_at=wc.now)
    if mode == "append":
        if same:
            raise ToolError(
                f"heading {heading!r} already exists in {document_id}; use mode 'replace' to change it"
            )
        sections.append(new_section)
    else:
        if not same:
            shown = ", ".join(repr(stored.sections[i].heading) for i in visible) or "none"
            raise ToolError(f"heading {heading!r} names no section of {document_id} (sections: {shown})")
        sections[same[0]] = new_section
    wc.replace(DOCS, stored.model_copy(update={"sections": sections}))
    updated = wc.get_as(DOCS, document_id, Document)
    assert updated is not None
    return {"document_id": document_id, "document": _doc_view(updated)}


@tool(domain="documents", write=True, tag="key")
def document_delete(wc: WorkingCopy, document_id: str) -> JsonValue:
    """Delete a document.

    Args:
        document_id: the document's id.

    Returns:
        the id and title of the deleted document.
    """
    doc = require(wc, DOCS, Document, document_id, "document_id", "document")
    wc.delete(DOCS, document_id)
    return {"deleted": document_id, "title": doc.title}
