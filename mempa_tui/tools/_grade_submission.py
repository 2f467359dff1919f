"""Grade submission tools (paper Table 7, domain Grade submission: 1 read, 1 outward write).

Collections: ``grade_submission/courses`` (the user's classes: roster and assessments) and
``grade_submission/submissions``. Submitting sends grades to the school's records office, so
``grade_submission_create`` is tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- ``grade_submission_read`` lists the courses with their rosters and assessments, marking which
  assessments are already submitted, and reads one submission by id.
- A grade sheet covers one assessment of one course and must give exactly one score to every
  student on the roster (names matched case-insensitively) and to no one else, each between 0
  and the assessment's max_score. It is refused after the assessment's deadline, and an
  assessment is submitted once (corrections go through the school, not this tool).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, JsonValue

from mempa_tui.tools._common import Limit, TextArg, ToolError, matches, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_grade_submission import Course, GradeSubmission

__all__ = ["grade_submission_create", "grade_submission_read"]

COURSES, SUBMISSIONS = "grade_submission/courses", "grade_submission/submissions"

Score = Annotated[float, Field(ge=0)]


def _submitted(wc: WorkingCopy, course_id: str) -> dict[str, str]:
    """Assessment name -> id of its submission, for one course."""
    return {
        s.assessment: s.id for s in wc.records_as(SUBMISSIONS, GradeSubmission) if s.course_id == course_id
    }


@tool(domain="grade_submission")
def grade_submission_read(
    wc: WorkingCopy, submission_id: str | None = None, query: str = "", limit: Limit = 20
) -> JsonValue:
    """Read one submitted grade sheet, or list the user's courses with rosters and assessments.

    Args:
        submission_id: a submission's id; leave out to list courses.
        query: when listing, words that must all appear in the course code, title, term or
            student names; empty matches all.
        limit: most courses to return.

    Returns:
        the submission, or the number of matching courses and the courses.
    """
    if submission_id is not None:
        return view(
            require(wc, SUBMISSIONS, GradeSubmission, submission_id, "submission_id", "grade submission"),
            "submitted_at",
        )
    found = [c for c in wc.records_as(COURSES, Course) if matches(query, c.code, c.title, c.term, c.students)]
    found.sort(key=lambda c: c.code)
    out: list[JsonValue] = []
    for c in found[:limit]:
        shown = view(c, None)
        done = _submitted(wc, c.id)
        for a in shown["assessments"]:
            a["submission_id"] = done.get(a["name"])
        out.append(shown)
    return {"count": len(found), "courses": out}


@tool(domain="grade_submission", write=True, tag="outward")
def grade_submission_create(
    wc: WorkingCopy,
    course_id: str,
    assessment: TextArg,
    grades: dict[str, Score],
    notes: str = "",
) -> JsonValue:
    """Submit the grades of one assessment for a whole class (sent to the school at once).

    Args:
        course_id: the course's id, from grade_submission_read.
        assessment: the assessment's name as grade_submission_read shows it.
        grades: every student on the roster mapped to a score, e.g. {"Ana Ruiz": 72, "Ben Hale": 65}.
        notes: a note for the school office; empty if none.

    Returns:
        the new submission's id and the submission.
    """
    course = require(wc, COURSES, Course, course_id, "course_id", "course")
    target = next((a for a in course.assessments if a.name.casefold() == assessment.strip().casefold()), None)
    if target is None:
        names = ", ".join(a.name for a in course.assessments) or "none"
        raise ToolError(
            f"assessment '{assessment}' is not an assessment of {course.code} (assessments: {names})"
        )
    today = wc.now.date()
    if today > target.deadline:
        raise ToolError(f"assessment '{assessment}': grades for {course.code} were due by {target.deadline}")
    done = _submitted(wc, course.id)
    if target.name in done:
        raise ToolError(
            f"assessment '{assessment}' of {course.code} was already submitted as {done[target.name]}"
        )
    roster = {s.casefold(): s for s in course.students}
    clean: dict[str, float] = {}
    for given, score in grades.items():
        student = roster.get(" ".join(given.split()).casefold())
        if student is None:
            raise ToolError(f"grades['{given}'] names no student on the {course.code} roster")
        if student in clean:
            raise ToolError(f"grades['{given}'] repeats {student}")
        if score > target.max_score:
            raise ToolError(f"grades['{given}'] {score:g} is above the maximum of {target.max_score:g}")
        clean[student] = score
    missing = [s for s in course.students if s not in clean]
    if missing:
        raise ToolError(
            f"grades has no score for {', '.join(missing)}; every student on the roster needs one"
        )
    fields = {
        "course_id": course.id,
        "course_code": course.code,
        "assessment": target.name,
        "grades": {s: clean[s] for s in course.students},
        "notes": notes,
    }
    made = wc.create(SUBMISSIONS, fields)
    return {"submission_id": made.id, "submission": view(made, "submitted_at")}
