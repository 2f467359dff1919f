"""A deterministic responder that plays every role of a run through the real protocol formats.

It sits behind :class:`~mempa_tui.llm.scripted.ScriptedModelServer` (real HTTP on loopback), so a
whole timeline — simulator turns, PA tool loop with IX calls and payloads, message checker, memory
consolidation, judge and PRS rater — runs through litellm with no model. The test suite uses it to
check scores computed by hand from scripted selections, and ``benchmarks/bench_harness.py`` uses
it to measure the harness's own overhead (SPEC section 7).

Roles are told apart by the model name the profile gives each role (``scripted-<role>``, see
:meth:`ScriptedModelServer.profile`). The PA's selection is decided by a ``choose`` callback, so a
caller can script exactly which setting the PA picks for which request.

The demo model (``python -m mempa_tui.tui.demo``) uses the memory-aware roles at the end of this
module: :func:`demo_wish`, :func:`demo_memory_answer` and :func:`demo_setting` (issue 16).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from mempa_tui.llm._scripted_wire import ScriptedReply, ScriptedRequest, ScriptedToolCall
from mempa_tui.llm.scripted_change import read_change
from mempa_tui.taxonomy import ATTRIBUTES, attribute

__all__ = [
    "DEMO_WISH_LEAD",
    "Chooser",
    "RolePlayer",
    "demo_memory_answer",
    "demo_setting",
    "demo_task",
    "demo_wish",
    "fill_schema",
    "not_said_before",
    "stated_wishes",
]

Chooser = Callable[[str, ScriptedRequest], str]
"""``(attribute_key, pa_request) -> setting name`` the scripted PA selects."""


def fill_schema(schema: dict[str, Any], overrides: dict[str, object] | None = None) -> object:
    """A value that satisfies a JSON schema (first enum value, false booleans, short strings).

    Args:
        schema: a JSON-schema object as the tools and JSON replies use.
        overrides: top-level property name -> value to use instead.

    Returns:
        A JSON-serialisable value of the schema's shape.
    """
    overrides = overrides or {}
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return fill_schema(options[0] if options else {}, None)
    kind = schema.get("type")
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        return {k: overrides.get(k, fill_schema(v)) for k, v in props.items()}
    if kind == "array":
        item = schema.get("items", {"type": "string"})
        return [fill_schema(item)]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        low, high = int(schema.get("minimum", 1)), int(schema.get("maximum", 5))
        return max(low, min(4, high))
    return "A short note written by the scripted model."


def _first_setting(attribute_key: str, request: ScriptedRequest) -> str:
    for tool in request.tools:
        if tool.name == f"IX_{attribute_key}":
            return str(tool.parameters["properties"]["setting"]["enum"][0])
    raise KeyError(attribute_key)


class RolePlayer:
    """Responder playing simulator, PA, checker, memory LLM, judge and PRS rater.

    Args:
        choose: decides the PA's setting for each IX tool it is offered (default: the first
            setting in Table 4 order).
        user_line: builds the simulator's message from its request (default: a fixed request).
        brs: the judge's score. prs: the rater's score.
        pa_reply: the PA's reply text once its IX calls are made.
    """

    def __init__(
        self,
        *,
        choose: Chooser | None = None,
        user_line: Callable[[ScriptedRequest], str] | None = None,
        brs: int = 4,
        prs: int = 5,
        pa_reply: str = "Done - here is what I found and did.",
    ) -> None:
        self.choose = choose or _first_setting
        self.user_line = user_line or (lambda _r: "Could you sort this out for me, please?")
        self.brs = brs
        self.prs = prs
        self.pa_reply = pa_reply

    def __call__(self, request: ScriptedRequest) -> ScriptedReply | str:
        """Answer one request as the role its model name names."""
        role = request.model.rsplit("-", 1)[-1]
        schema = request.json_schema
        if role == "pa":
            return self._pa(request)
        if schema is not None:
            props = schema.get("properties", {})
            if "score" in props:
                score = self.brs if role == "judge" else self.prs
                return json.dumps(fill_schema(schema, {"score": score}))
            if "entry" in props:
                return json.dumps(fill_schema(schema, {
                    "entry": "I asked the assistant for help today. It handled the request and we "
                    "wrapped up without fuss.",
                }))
            return json.dumps(fill_schema(schema))
        if role == "simulator":
            return (
                "<factual_check>none</factual_check><turn_assessment>advance</turn_assessment>"
                f"<message>{not_said_before(self.user_line(request), request)}</message>"
            )
        return "ok"

    def _pa(self, request: ScriptedRequest) -> ScriptedReply:
        last_user = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=0)
        called = {
            call.name
            for message in request.messages[last_user:]
            if message.role == "assistant"
            for call in message.tool_calls
        }
        for tool in request.tools:
            if not tool.name.startswith("IX_") or tool.name in called:
                continue
            key = tool.name.removeprefix("IX_")
            arguments = fill_schema(tool.parameters)
            assert isinstance(arguments, dict)
            arguments["setting"] = self.choose(key, request)
            return ScriptedReply(tool_calls=[ScriptedToolCall(name=tool.name, arguments=arguments)])
        return ScriptedReply(text=self.pa_reply, prompt_tokens=40, completion_tokens=8)


# -- the demo model's memory-aware roles (issue 16: "the demo model uses memory") -------------------
#
# The demo is scripted, not intelligent, but it plays the protocol so that a memory has something
# to learn and the PA something to use:
# - the simulated user, on the first message after a decision point, adds one sentence that states
#   the wanted behaviour in plain words: the public behaviour text of its target setting (paper
#   Table 4), which its prompt marks as the way it wants it. Nothing else of the target is said,
#   and on the message that opens a decision point it says nothing about manner at all.
# - the memory role finds such sentences in whatever it is asked to read (File memory's turns,
#   prefstate's message, Mem0's exchange, mem0ai's conversation) and writes them down in the shape
#   each system asks for.
# - the PA reads only the memory section of its prompt: at an IX call it picks the offered setting
#   the memory names (by name, as prefstate does, or by its behaviour text), the latest mention
#   winning (the best match in retrieved evidence), and otherwise its fixed default (the first setting).
# - a change event's rule in the user's own words is read by :mod:`mempa_tui.llm.scripted_change`:
#   the memory role notes the new setting's behaviour beside the user's words, and the PA lets a
#   remembered change of mind outrank the wishes stated before it (PET, paper Section 3.5).

DEMO_WISH_LEAD = "For the record, this is how I like it done: "
"""Opens the demo user's plain-words statement of the wanted behaviour."""

_MEMORY_HEADING = "What your memory holds about this person"
_DATE_HEADING = "\n\nCurrent date and time\n"
"""Opens the date section that follows the memory section in the PA's second system message."""
_WANTED_MARK = "  (this is the way you want it)"
_WANTED_LINE = re.compile(r"^- When the reply looks like this: (.+?)" + re.escape(_WANTED_MARK) + r"$", re.M)
_SPACES = re.compile(r"\s+")


def not_said_before(line: str, request: ScriptedRequest) -> str:
    """``line``, or, when the user already said it in this conversation (the dialogue in the
    request shows ``You: <line>``), the line with the current goal added (and a count if that too
    was said): the simulator sends a message that repeats an earlier one word for word back for a
    rewrite, so a scripted user that said the same thing every turn would end every session
    invalid."""
    text = "\n".join(m.content for m in request.messages if m.role == "user")
    if f"You: {line}" not in text:
        return line
    goal = re.search(r"^- Goal: (.+)$", text, re.M)
    candidate = f"{line} About this: {goal.group(1).rstrip('.')}." if goal else line
    n = 2
    while f"You: {candidate}" in text:
        candidate = f"{line} (asking again, {n})"
        n += 1
    return candidate


def _flat(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _behaviours() -> list[tuple[str, str, str]]:
    """``(attribute key, setting name, behaviour text)`` for every setting of Table 4."""
    return [(a.key, s.name, _flat(s.behaviour)) for a in ATTRIBUTES for s in a.settings]


def stated_wishes(text: str) -> list[tuple[int, str, str, str]]:
    """The settings whose behaviour text occurs verbatim in ``text``, in order of position.

    Args:
        text: any prompt text (white space runs count as one space).

    Returns:
        ``(position, attribute key, setting name, behaviour text)`` per occurrence, sorted.
    """
    flat = _flat(text)
    found: list[tuple[int, str, str, str]] = []
    for key, name, behaviour in _behaviours():
        start = flat.find(behaviour)
        while start >= 0:
            found.append((start, key, name, behaviour))
            start = flat.find(behaviour, start + 1)
    return sorted(found)


def demo_wish(request: ScriptedRequest) -> str | None:
    """The demo user's plain-words wish for this turn, or None.

    Only on the first message of the beat after a decision point in an accumulation session:
    the prompt shows the decision's reactions (with the wanted one marked) and the tested skill's
    reception side alone (on the decision beat itself the full skill is shown, with "In your own
    turns:"; that message opens the decision point and must not ask for a manner).

    Args:
        request: a simulator request (system prompt, then the user part with the beat).

    Returns:
        ``DEMO_WISH_LEAD`` plus the wanted setting's behaviour text, or None.
    """
    system = next((m.content for m in request.messages if m.role == "system"), "")
    user = next((m.content for m in request.messages if m.role == "user"), "")
    prompt = f"{system}\n{user}"  # the beat's skills and reactions sit in the user part
    if "first message for the goal" not in user or "In your own turns:" in prompt:
        return None
    found = _WANTED_LINE.search(prompt)
    if found is None:
        return None
    return DEMO_WISH_LEAD + _flat(found.group(1))


def demo_task(request: ScriptedRequest) -> str | None:
    """The step's task line from the simulator's prompt (``Task: ...``), as the user says it.

    Speaking the task gives each message the step's own words, so a retrieval memory finds the
    turns of earlier steps on a similar errand (the scripted embedder hashes words).

    Returns:
        The task sentence ending in a full stop, or None when the prompt has no task line.
    """
    system = next((m.content for m in request.messages if m.role == "system"), "")
    found = re.search(r"^Task: (.+)$", system, re.M)
    return found.group(1).strip().rstrip(".") + "." if found else None


def _memory_section(request: ScriptedRequest) -> str:
    for message in request.messages:
        if message.role == "system" and _MEMORY_HEADING in message.content:
            return message.content.split(_MEMORY_HEADING, 1)[1].split(_DATE_HEADING, 1)[0]
    return ""


def _changes_in(text: str, attribute_key: str | None = None) -> list[tuple[int, str, str, str]]:
    """``(line number, attribute key, setting, the statement)`` of each change statement in ``text``,
    one line at a time, read alone (:func:`~mempa_tui.llm.scripted_change.read_change`)."""
    found: list[tuple[int, str, str, str]] = []
    for n, line in enumerate(text.splitlines()):
        read = read_change(line)
        if read is not None and attribute_key in (None, read[0]):
            found.append((n, read[0], read[1], _statement(line)))
    return found


def _statement(line: str) -> str:
    """A message line without its list mark, number, score, date or speaker."""
    line = re.sub(r"^\s*(?:-\s*)?(?:\[\d+\]\s*)?(?:\(score [^)]*\)\s*)?(?:\[[^\]]*\]\s*)?(?:[Uu]ser:\s*)?", "", line)
    return _flat(line)


def demo_setting(attribute_key: str, offered: list[str], request: ScriptedRequest) -> str:
    """The demo PA's choice for ``IX_<attribute_key>``: what its memory section names, else the first.

    Reads only the memory section of the PA's prompt (never the user's messages, never the
    target). A setting is named either as prefstate writes it (``(IX_<key>): <Setting> (``), by
    its behaviour text, or by a change of mind the memory kept: a user's rule for the future read
    by :func:`~mempa_tui.llm.scripted_change.read_change` (paper Section 3.3; PET, Section 3.5).
    A change of mind outranks the wishes stated before it. Among several mentions of one kind the
    latest wins (notes kept in order, like MEMORY.md), except in retrieved evidence listed "most
    similar first", where the first (best-matching) one wins.

    Args:
        attribute_key: the attribute of the offered IX tool.
        offered: the tool's setting enum, in order.
        request: the PA request.

    Returns:
        One of ``offered``.
    """
    section = _memory_section(request)
    memory = _flat(section)
    ranked = "most similar first" in memory  # retrieved items: the best match leads
    changes = [(n, name) for n, _k, name, _s in _changes_in(section, attribute_key) if name in offered]
    if changes:
        return (min(changes) if ranked else max(changes))[1]
    picks = [(pos, name) for pos, key, name, _b in stated_wishes(memory) if key == attribute_key and name in offered]
    for name in offered:
        for hit in re.finditer(rf"\(IX_{re.escape(attribute_key)}\): {re.escape(name)} \(", memory):
            picks.append((hit.start(), name))
    if not picks:
        return offered[0]
    return (min(picks) if ranked else max(picks))[1]


def _note(context: str | None, behaviour: str) -> str:
    where = f"In {context} matters" if context else "Once"
    return f"{where} they asked for this: {behaviour}"


def _change_note(context: str | None, key: str, name: str, statement: str) -> str:
    """A note for a change of mind: the new setting's behaviour text and the user's own words."""
    behaviour = _flat(attribute(key).setting(name).behaviour)
    return f'{_note(context, behaviour)} They said so when they changed their mind: "{statement}"'


def _notes_in(text: str, context: str | None,
              choices: list[tuple[str, str]] | None = None) -> list[tuple[str, str, str]]:
    """``(attribute key, setting, note)`` for each stated wish or change of mind in ``text``
    (latest per attribute). ``choices``: the assistant's interaction choices seen before ``text``
    in the same conversation (a change statement rejects the latest, see
    :func:`~mempa_tui.llm.scripted_change.read_change`)."""
    found: list[tuple[int, str, str, str]] = []
    flat = _flat(text)
    for pos, key, name, behaviour in stated_wishes(text):
        noted = re.search(r"In (work|personal) matters they asked for this: $", flat[max(0, pos - 60):pos])
        found.append((pos, key, name, _note(noted.group(1) if noted else context, behaviour)))  # keeps its context
    for line in text.splitlines():
        read = read_change(line, choices)
        if read is None:
            continue
        statement = _statement(line).split(' They said so when they changed their mind: "', 1)[-1].rstrip('"')
        noted = _context_of_note(line)
        pos = flat.find(_flat(line)) + len(_flat(line))  # after any wish on the same line
        found.append((pos, read[0], read[1], _change_note(noted or context, read[0], read[1], statement)))
    latest: dict[str, tuple[str, str, str]] = {}
    for _pos, key, name, note in sorted(found, key=lambda f: f[0]):
        latest[key] = (key, name, note)
    return list(latest.values())


def _context_of(text: str) -> str | None:
    found = re.search(r"Context of this (?:session|conversation): (work|personal)", text)
    return found.group(1) if found else None


def _same_cell(note: str, key: str, context: str | None) -> bool:
    """Whether a stored note states a wish for attribute ``key`` in the same context."""
    hits = stated_wishes(note)
    return bool(hits) and hits[0][1] == key and (_context_of_note(note) == context)


def _context_of_note(note: str) -> str | None:
    found = re.match(r"\s*-?\s*In (work|personal) matters", note)
    return found.group(1) if found else None


def _file_consolidation(user: str) -> str:
    """File memory's save call: MEMORY.md with one line per stated wish, HISTORY entry."""
    # an empty file is said in the heading ("## Current memory file: none yet ..."), with no text under it
    has_file = "## Current memory file\n" in user
    current = user.split("## Current memory file\n", 1)[-1].split("\n\n## Turns to fold in", 1)[0] if has_file else ""
    turns_text = user.split("## Turns to fold in", 1)[-1]
    lines = current.strip().splitlines()
    # a turn's header: "[date time, context]" (no step id since issue 12) or "[date time context step]"
    turns = re.split(r"^(?=\[\d{4}-\d{2}-\d{2} \d{2}:\d{2},? (?:work|personal)[ \]])", turns_text, flags=re.M)
    added = 0
    dates: list[str] = []
    choices: dict[str, list[tuple[str, str]]] = {}  # step -> the assistant's interaction choices so far
    for turn in turns:
        head = re.match(r"\[(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}),? (work|personal)(?: (\S+?))?\]", turn)
        if head is None:
            continue
        dates.append(head.group(1))
        said = "\n".join(line for line in turn.splitlines() if line.startswith("User: "))
        # a step's turns share its start time: without a step id the time tells the step
        step = choices.setdefault(head.group(4) or f"{head.group(1)} {head.group(2)}", [])
        notes = _notes_in(said, head.group(3), list(step))
        step.extend((m.group(1), m.group(2).strip())
                    for m in re.finditer(r"^Interaction choice (\w+) = (.+)$", turn, flags=re.M))
        for key, _name, note in notes:
            lines = [ln for ln in lines if not _same_cell(ln, key, head.group(3))]
            lines.append(f"- {note}")
            added += 1
    if not any(ln.startswith("# ") for ln in lines):
        lines.insert(0, "# Notes about this person")
    span = f"{dates[0]} to {dates[-1]}" if dates else "earlier"
    entry = (f"Conversations from {span}: {len(dates)} turn(s) about everyday tasks were folded in. "
             f"{added} wish(es) about how to be helped were written down.")
    return json.dumps({"history_entry": entry, "memory": "\n".join(lines) + "\n"})


def _prefstate_extraction(user: str) -> str:
    """prefstate's extraction call: one observation per wish or change of mind, quoting the message verbatim."""
    message = user.split("## The person's message\n", 1)[-1].rsplit("\n\nAnswer with", 1)[0]
    observations = [
        {"attribute": key, "setting": name, "quote": behaviour, "confidence": 0.9}
        for _pos, key, name, behaviour in stated_wishes(message)
    ]
    observations += [  # a change of mind, quoted in the person's own words
        {"attribute": key, "setting": name, "quote": statement, "confidence": 0.9}
        for _n, key, name, statement in _changes_in(message) if statement in message
    ]
    return json.dumps({"observations": observations[:6]})


def _mem0_decision(user: str) -> str:
    """Our Mem0's update call: NONE for a note already stored, UPDATE the same cell, else ADD."""
    stored = re.findall(r"^(\d+): (.*)$", user.split("\n\nNew note: ", 1)[0], flags=re.M)
    new = user.split("\n\nNew note: ", 1)[-1].strip()
    hits = stated_wishes(new)
    for shown, text in stored:
        if _flat(text) == _flat(new):
            return json.dumps({"event": "NONE", "id": None, "text": ""})
    if hits:
        for shown, text in stored:
            if _same_cell(text, hits[0][1], _context_of_note(new)):
                return json.dumps({"event": "UPDATE", "id": int(shown), "text": new})
    return json.dumps({"event": "ADD", "id": None, "text": new})


def _mem0ai_update(text: str) -> str:
    """mem0ai's update call: the new facts ADDed (or UPDATE a stored note of the same cell)."""
    old_part, _sep, new_part = text.partition("new retrieved facts")
    if "current content of my memory" in old_part:  # the stored memories, not the prompt's examples
        old_part = old_part.split("current content of my memory", 1)[1]
    else:
        old_part = ""
    old = [(m.group(1).strip(), m.group(3)) for m in re.finditer(
        r"""['"]id['"]\s*:\s*['"]?([^'",}]+)['"]?\s*,\s*['"]text['"]\s*:\s*(['"])(.*?)\2\s*[,}]""", old_part)]
    events: list[dict[str, str]] = []
    for n, (key, _name, note) in enumerate(_notes_in(new_part, None)):
        same = next((oid for oid, otext in old if stated_wishes(otext) and stated_wishes(otext)[0][1] == key), None)
        if any(_flat(otext) == note for _oid, otext in old):
            continue
        if same is not None:
            events.append({"id": same, "text": note, "event": "UPDATE"})
        else:
            events.append({"id": str(len(old) + n), "text": note, "event": "ADD"})
    return json.dumps({"memory": events})


def demo_memory_answer(request: ScriptedRequest) -> str | None:
    """The demo memory role's reply, well-formed for every memory system; None: not recognised.

    Told apart by the reply schema and, for mem0ai's own prompts, by the prompt's content:
    File memory's consolidation (``history_entry`` + ``memory``), prefstate's extraction
    (``observations``), our Mem0's extraction (``memories``) and update (``event``/``id``/``text``),
    and mem0ai's fact extraction (``{"facts": [...]}``, 2.0.2), its one-call additive extraction
    (a ``## New Messages`` section; ``{"memory": [{"id","text"}]}``, 2.2), a ``memory`` array
    schema (``{"memory": [{"text"}]}``) and the update call (``new retrieved facts``;
    ``{"memory": [{"id","text","event"}]}``).

    Args:
        request: a request to the memory role.

    Returns:
        The JSON reply text, or None when the request is none of those.
    """
    schema = request.json_schema or {}
    props = schema.get("properties", {})
    users = "\n\n".join(m.content for m in request.messages if m.role == "user")
    everything = "\n\n".join(m.content for m in request.messages)
    if "history_entry" in props or "## Turns to fold in" in users:
        return _file_consolidation(users)
    if "observations" in props:
        return _prefstate_extraction(users)
    if "memories" in props:
        context = _context_of(users)
        return json.dumps({"memories": [note for _k, _n, note in _notes_in(users, context)]})
    if "event" in props and "id" in props:
        return _mem0_decision(users)
    if "new retrieved facts" in everything:
        return _mem0ai_update(everything)
    context = _context_of(users)
    if "## New Messages" in users:  # mem0ai's one-call additive extraction: only the new messages
        fresh = users.split("## New Messages", 1)[1].split("\n## ", 1)[0]
        return json.dumps({"memory": [{"id": str(n), "text": note}
                                      for n, (_k, _s, note) in enumerate(_notes_in(fresh, context))]})
    if '"facts"' in everything:
        return json.dumps({"facts": [note for _k, _n, note in _notes_in(users, context)]})
    if "memory" in props:
        return json.dumps({"memory": [{"text": note} for _k, _n, note in _notes_in(users, context)]})
    return None
