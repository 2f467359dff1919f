"""Record types of the Scholarly papers domain (paper Table 7; Appendix C.2).

Collection: ``scholarly_papers/papers``, the papers the user's literature search can find. A
paper's ``entered_at`` is when it becomes findable (its publication or preprint date).
"""

from __future__ import annotations

from pydantic import Field

from mempa_tui.world.records import Record

__all__ = ["ScholarlyPaper"]


class ScholarlyPaper(Record):
    """A published paper or preprint (collection ``scholarly_papers/papers``)."""

    title: str
    authors: list[str] = Field(min_length=1, description="Author names in byline order.")
    venue: str = Field(default="", description="Journal, conference or 'preprint'.")
    year: int = Field(ge=1800, le=2200)
    abstract: str = ""
    keywords: list[str] = Field(default_factory=list)
    doi: str = ""
    citations: int = Field(default=0, ge=0, description="Citation count as the index shows it.")
    body: str = Field(default="", description="Main findings or the full text available to the user.")
