"""Scholarly paper tools (paper Table 7, domain Scholarly papers: 2 reads).

Collection: ``scholarly_papers/papers``. A paper becomes findable at its ``entered_at``.

Decisions (Appendix C.2 leaves them open):
- ``scholarly_paper_search`` returns short entries (abstract cut to a preview, no body), newest
  year first, then most cited; the full text comes from ``scholarly_paper_read``.
- A year range that ends before it starts is rejected; an author filter matches any author whose
  name contains every word given.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, JsonValue

from mempa_tui.tools._common import Limit, ToolError, matches, preview, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_scholarly_papers import ScholarlyPaper

__all__ = ["scholarly_paper_read", "scholarly_paper_search"]

PAPERS = "scholarly_papers/papers"

Year = Annotated[int, Field(ge=1800, le=2200)]


def _entry(p: ScholarlyPaper) -> dict[str, Any]:
    return {
        "id": p.id,
        "title": p.title,
        "authors": p.authors,
        "venue": p.venue,
        "year": p.year,
        "doi": p.doi,
        "citations": p.citations,
        "abstract": preview(p.abstract, 240),
    }


@tool(domain="scholarly_papers")
def scholarly_paper_search(
    wc: WorkingCopy,
    query: str = "",
    author: str = "",
    venue: str = "",
    year_from: Year | None = None,
    year_to: Year | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Search the scholarly paper index, newest first.

    Args:
        query: words that must all appear in the title, abstract or keywords; empty matches all.
        author: words that must all appear in one author's name.
        venue: words that must all appear in the journal or conference name.
        year_from: earliest publication year.
        year_to: latest publication year; not before year_from.
        limit: most papers to return.

    Returns:
        the number of matches and the papers; read one in full with scholarly_paper_read.
    """
    if year_from is not None and year_to is not None and year_to < year_from:
        raise ToolError(f"year_to {year_to} is before year_from {year_from}")
    found = [
        p
        for p in wc.records_as(PAPERS, ScholarlyPaper)
        if matches(query, p.title, p.abstract, p.keywords)
        and (not author.strip() or any(matches(author, a) for a in p.authors))
        and matches(venue, p.venue)
        and (year_from is None or p.year >= year_from)
        and (year_to is None or p.year <= year_to)
    ]
    found.sort(key=lambda p: (-p.year, -p.citations, p.title))
    return {"count": len(found), "papers": [_entry(p) for p in found[:limit]]}


@tool(domain="scholarly_papers")
def scholarly_paper_read(wc: WorkingCopy, paper_id: str) -> JsonValue:
    """Read one paper in full.

    Args:
        paper_id: the paper's id, from scholarly_paper_search.

    Returns:
        the paper with title, authors, venue, year, doi, citations, keywords, abstract and body.
    """
    return view(require(wc, PAPERS, ScholarlyPaper, paper_id, "paper_id", "paper in the index"), "listed_at")
