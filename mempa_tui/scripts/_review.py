"""``mempa worlds review``: a model judges the five viability conditions of every script.

Paper Appendix C.5, Table 8. Rules cannot decide whether each setting of the tested attribute is a
reasonable, natural and answerable choice in a script, so a configured model (the profile's judge
role, through :class:`~mempa_tui.llm.LLMClient`) reads each session, probe and change event with
the attribute's settings and the world records the script binds, and answers per condition:

1. ``feasible`` - the bound records and the tools let the PA carry out every setting;
2. ``reasonable`` - an assistant that does not know the user could pick any setting, and each
   gives a complete, legitimate answer;
3. ``not_given_away`` - no user line before the decision point names or cues a setting;
4. ``observable`` - the settings lead to replies or tool calls that differ visibly, and the
   difference comes from the task itself;
5. ``answerable`` - the user has a reaction (session) or an expected reply (probe) for each
   setting. For a change event the old setting is judged as in a session and for the new one
   only that the user can react to it.

A script is *live* when all five hold. The verdicts are written to a YAML file for a person to
read; this is on demand and never part of ``worlds check`` or CI. A model reply that cannot be
used after one retry is recorded as an error for that script, never as a verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from mempa_tui.llm import parse_json_reply
from mempa_tui.llm.errors import LLMError
from mempa_tui.llm.structured import StructuredClient, complete_json
from mempa_tui.llm.types import ChatMessage, Role
from mempa_tui.scripts.loader import Script, UserBundle
from mempa_tui.scripts.schema import AccumulationSession, ChangeEvent, Probe
from mempa_tui.taxonomy import attribute
from mempa_tui.world import WorkingCopy

__all__ = [
    "CONDITIONS",
    "REVIEW_SCHEMA",
    "ConditionVerdict",
    "ScriptReview",
    "review_messages",
    "review_script",
    "review_user",
    "write_reviews",
]

#: The five conditions of Table 8, in order.
CONDITIONS: tuple[str, ...] = (
    "feasible",
    "reasonable",
    "not_given_away",
    "observable",
    "answerable",
)

_CONDITION_TEXT: dict[str, str] = {
    "feasible": (
        "With the world records shown and ordinary tools for email, messages, calendar, documents "
        "and contacts, an assistant could actually do what each setting asks for."
    ),
    "reasonable": (
        "An assistant that knows nothing about this user could sensibly pick any of the settings "
        "here; under each one the reply is a complete and proper answer, not careless or harmful."
    ),
    "not_given_away": (
        "Nothing the user says or reveals before the decision names a setting, asks for one, or "
        "hints at which one they want (for example by asking for a number of options)."
    ),
    "observable": (
        "Following different settings gives replies or tool calls that visibly differ, the "
        "difference arises from the task itself rather than from a detail planted to force it, "
        "and each setting's behaviour can be done in full."
    ),
    "answerable": (
        "For every setting the user has a natural way to respond next: a reaction in the "
        "following step of a session, or a stated expected reply in a probe."
    ),
}

_RECORD_CHARS = 1500

REVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        name: {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["ok", "reason"],
        }
        for name in CONDITIONS
    },
    "required": list(CONDITIONS),
}


class ConditionVerdict(BaseModel):
    """The model's verdict on one condition."""

    ok: bool = Field(description="True when the condition holds for every setting.")
    reason: str = Field(description="One or two sentences; for a failure, which setting and why.")


class ScriptReview(BaseModel):
    """The review of one script.

    ``conditions`` is empty and ``error`` set when the model call failed or no reply was usable.
    """

    user: str
    script_id: str
    kind: Literal["accumulation", "probe", "change_event"]
    cell: str = Field(description="'<context>/<attribute key>'.")
    conditions: dict[str, ConditionVerdict] = Field(default_factory=dict)
    error: str | None = None
    attempts: int = Field(default=0, description="Model calls made for this script.")

    @property
    def live(self) -> bool | None:
        """True when all five conditions hold; None when there is no verdict."""
        if not self.conditions:
            return None
        return all(self.conditions[c].ok for c in CONDITIONS)


def _read(text: str) -> dict[str, ConditionVerdict]:
    raw = parse_json_reply(text)
    if not isinstance(raw, dict):
        raise ValueError("the reply is not a JSON object")  # noqa: TRY004 - complete_json retries on ValueError
    missing = [c for c in CONDITIONS if c not in raw]
    if missing:
        raise ValueError(f"missing condition(s): {', '.join(missing)}")
    try:
        return {c: ConditionVerdict.model_validate(raw[c]) for c in CONDITIONS}
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"bad verdict field {where or 'value'}: {first['msg']}") from None


def _records(bundle: UserBundle, script: Script) -> list[str]:
    """The bound records as JSON lines, as visible by the script's last world event (truncated)."""
    refs: list[str] = []
    when: datetime = script.starts_at
    if not isinstance(script, ChangeEvent):
        for beat in script.beats:
            refs += [*beat.records, *(beat.event.records if beat.event else [])]
            if beat.event is not None:
                when = max(when, beat.event.at)
    wc = WorkingCopy(bundle.world_state(), when)
    out: list[str] = []
    for ref in dict.fromkeys(refs):
        collection, _, rid = ref.partition(":")
        record = wc.get(collection, rid)
        text = record.model_dump_json() if record is not None else "(missing)"
        out.append(f"{ref}: {text[:_RECORD_CHARS]}")
    return out


def _script_text(bundle: UserBundle, script: Script) -> str:
    doc = bundle.sources.get(script.id)
    if doc is not None:
        return doc.path.read_text(encoding="utf-8")
    return yaml.safe_dump(script.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def review_messages(bundle: UserBundle, script: Script) -> list[ChatMessage]:
    """The review prompt for one script: the conditions, the attribute, the script, its records."""
    attr = attribute(script.attribute)
    settings = "\n".join(f"- {s.name}: {s.behaviour}" for s in attr.settings)
    conditions = "\n".join(f"- {name}: {text}" for name, text in _CONDITION_TEXT.items())
    kind_note = {
        AccumulationSession: "This is a live session: the user plays the steps and reacts to the assistant.",
        Probe: "This is a probe: a short scored session; expected_replies gives the reply under each setting.",
        ChangeEvent: (
            "This is a change event: the assistant's turns are fixed and follow the old setting "
            f"({getattr(script, 'old_setting', '')}). Judge the old setting as in a session (is it "
            "carried out in full before the consequence?); for the new setting judge only that the "
            "user can react to it."
        ),
    }[type(script)]
    system = (
        "You review test scenarios for a personal assistant. Each scenario tests one kind of "
        "behaviour choice, and every listed option must be a fair, workable choice in it. Judge "
        "each of the five conditions below for ALL the options together: a condition holds only "
        "if it holds for every option. Reply with one JSON object, a key per condition, each "
        '{"ok": true|false, "reason": "..."}; name the failing option in the reason.\n\n'
        f"Conditions:\n{conditions}"
    )
    records = _records(bundle, script)
    user = (
        f"User {bundle.label}, {bundle.persona.name}: {bundle.persona.occupation}.\n"
        f"Behaviour tested: {attr.name} - {attr.question}\nOptions:\n{settings}\n\n{kind_note}\n\n"
        f"Scenario file:\n{_script_text(bundle, script)}\n"
        + ("World records it binds:\n" + "\n".join(records) if records else "It binds no world records.")
    )
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content=user),
    ]


async def review_script(client: StructuredClient, bundle: UserBundle, script: Script) -> ScriptReview:
    """Ask the judge role for the five verdicts on one script.

    Returns:
        The review; ``error`` set (no verdicts) when the call failed or both replies were unusable.
    """
    base = ScriptReview(
        user=bundle.label,
        script_id=script.id,
        kind=script.kind,
        cell=f"{script.context.value}/{script.attribute}",
    )
    try:
        got = await complete_json(
            client,
            Role.JUDGE,
            review_messages(bundle, script),
            schema=REVIEW_SCHEMA,
            read=_read,
            retry_hint="Answer again with only the JSON object: one key per condition, each {ok, reason}.",
        )
    except LLMError as exc:
        return base.model_copy(update={"error": f"model call failed: {exc}"})
    if got.value is None:
        return base.model_copy(update={"error": got.error, "attempts": got.attempts})
    return base.model_copy(update={"conditions": got.value, "attempts": got.attempts})


async def review_user(
    client: StructuredClient,
    bundle: UserBundle,
    only: Iterable[str] | None = None,
    progress: Callable[[ScriptReview], None] | None = None,
) -> list[ScriptReview]:
    """Review every session, change event and probe of a user (or the ids in ``only``), in id order.

    Raises:
        KeyError: an id in ``only`` names no script of the user.
    """
    scripts: dict[str, Script] = {**bundle.sessions, **bundle.events, **bundle.probes}
    ids = sorted(scripts) if only is None else list(only)
    for sid in ids:
        if sid not in scripts:
            raise KeyError(f"user {bundle.label} has no session, event or probe {sid!r}")
    out: list[ScriptReview] = []
    for sid in ids:
        review = await review_script(client, bundle, scripts[sid])
        if progress is not None:
            progress(review)
        out.append(review)
    return out


def write_reviews(reviews: Sequence[ScriptReview], path: str | Path, model: str) -> Path:
    """Write the verdicts as YAML: a header, then one entry per script with ``live`` and the five.

    Args:
        reviews: the reviews.
        path: the YAML file to write (folders are created).
        model: the reviewing model, recorded in the header.

    Returns:
        The path written.
    """
    entries = []
    for r in reviews:
        entry: dict[str, Any] = {
            "script": r.script_id,
            "user": r.user,
            "kind": r.kind,
            "cell": r.cell,
        }
        if r.error is not None:
            entry["error"] = r.error
        else:
            entry["live"] = r.live
            entry["conditions"] = {c: {"ok": v.ok, "reason": v.reason} for c, v in r.conditions.items()}
        entry["attempts"] = r.attempts
        entries.append(entry)
    doc = {
        "model": model,
        "reviewed": len(reviews),
        "live": sum(1 for r in reviews if r.live),
        "closed": sum(1 for r in reviews if r.live is False),
        "errors": sum(1 for r in reviews if r.error is not None),
        "scripts": entries,
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        "# mempa worlds review: model verdicts on the five viability conditions (paper Table 8).\n"
        "# Read them; they are advice for a person, not a check.\n"
        + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100),
        encoding="utf-8",
    )
    return target
