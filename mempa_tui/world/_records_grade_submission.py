"""Record types of the Grade submission domain (paper Table 7; Appendix C.2).

Collections: ``grade_submission/courses`` (the user's classes with rosters and assessments) and
``grade_submission/submissions`` (grade sheets the user submitted).
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.world.records import Record

__all__ = ["Assessment", "Course", "GradeSubmission"]


class Assessment(BaseModel):
    """A graded piece of work in a course."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="e.g. 'Mock exam' or 'Coursework 2'.")
    max_score: float = Field(gt=0)
    deadline: date = Field(description="Last day grades for it can be submitted.")


class Course(Record):
    """A class the user teaches (collection ``grade_submission/courses``)."""

    code: str = Field(description="Short course code, e.g. 'GEO-10B'.")
    title: str
    term: str = ""
    students: list[str] = Field(min_length=1, description="Full names on the roster.")
    assessments: list[Assessment] = Field(default_factory=list)


class GradeSubmission(Record):
    """A submitted grade sheet (``grade_submission/submissions``); ``entered_at`` is when sent."""

    course_id: str
    course_code: str
    assessment: str
    grades: dict[str, float] = Field(description="Student name -> score.")
    notes: str = ""
