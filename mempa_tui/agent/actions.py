"""Dispatching the PA's tool calls for one turn: world tools through the wrapper, IX tools to it.

Paper Section 3.4 ('IX Wrapper'), Appendix C.2 ('Argument checks': errors go back to the PA as
the tool result), Appendix C.3 (4) and F.2 (floors). A model-driven PA and a human PA seat use
the same :class:`TurnActions`, so the wrapper treats both alike.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable, Iterable
from typing import Any

from mempa_tui.ix import IXWrapper, SelectResult, ix_tool_spec
from mempa_tui.ix._backend import ToolBackend
from mempa_tui.ix.floors import FloorKind, floor_reason
from mempa_tui.ix.spec import match_setting
from mempa_tui.ix.types import CallStatus, ExecutedCall
from mempa_tui.llm.types import ToolCall, ToolSpec
from mempa_tui.taxonomy import ATTRIBUTES, attribute, attribute_by_ix_tool
from mempa_tui.world import strip_tool_prefix

__all__ = [
    "TurnActions",
    "ix_text_in",
    "ix_text_in_arguments",
    "ix_text_in_reply",
    "withhold_ix_sentences",
]

# Setting names too common as ordinary values to count as leaked IX text on their own.
_COMMON_VALUES = frozenset({"low", "high"})


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _norm(text: str) -> str:
    """Casefolded, with underscores and hyphens read as spaces and runs of spaces as one, so
    ``solution_breadth``, ``Solution-Breadth`` and ``solution  breadth`` read alike."""
    return " ".join(re.sub(r"[_\-]", " ", text.casefold()).split())


def _says(text: str, phrase: str) -> bool:
    """Whether normalised ``text`` holds ``phrase`` as whole words (``low`` is not in ``below``)."""
    return re.search(rf"(?<!\w){re.escape(_norm(phrase))}(?!\w)", text) is not None


def ix_text_in(texts: Iterable[str], selections: dict[str, str], *, where: str) -> str | None:
    """Find interaction-tool text in texts the judge would read (paper Appendix F.2, Table 9).

    The rule of Appendix F.2 for a task tool's arguments ("would show its selection to the blind
    judge"), applied to any text that leaves the PA: the arguments of a task tool call
    (:func:`ix_text_in_arguments`) and the reply it delivers (:func:`ix_text_in_reply`). Counted
    as IX text: a text that

    * contains the name of any ``IX_<attribute>`` tool (case ignored), or
    * names a selected attribute (its key or display name, underscores and hyphens read as
      spaces) together with its selected setting, both as whole words, or
    * is, as a whole, the name of a selected setting, except 'Low' and 'High', which are
      ordinary words (so are they inside a text that does not name the attribute: "a high-level
      summary" is fine).

    Args:
        texts: the strings to look through.
        selections: the step's selections so far (attribute key -> setting), from the wrapper.
        where: what the texts are, opening the description (``an argument``, ``the reply``).

    Returns:
        A short description of the first offending text (``the reply states the selection
        Solution Breadth = High``), or None.
    """
    for text in texts:
        low = text.casefold()
        for attr in ATTRIBUTES:
            if attr.ix_tool.casefold() in low:
                return f"{where} names the interaction tool {attr.ix_tool}"
        norm = _norm(text)
        for key, setting in selections.items():
            attr = attribute(key)
            if (
                match_setting(attr, text.strip()) == setting
                and setting.casefold() not in _COMMON_VALUES
            ):
                return f"{where} is the selected setting '{setting}'"
            named = _says(norm, attr.name) or _says(norm, attr.key)
            if named and _says(norm, setting):
                return f"{where} states the selection {attr.name} = {setting}"
    return None


def ix_text_in_arguments(
    arguments: dict[str, Any], selections: dict[str, str]
) -> str | None:
    """Find interaction-tool text written into a task tool's arguments (Appendix F.2).

    Such a call would show the PA's selection to the blind judge, so the step is floored. The
    rule is :func:`ix_text_in`'s, over every string in the arguments (nested ones too).

    Returns:
        A short description of the offending value (``an argument names the interaction tool
        IX_verbosity``), or None.
    """
    return ix_text_in(_strings(arguments), selections, where="an argument")


def ix_text_in_reply(reply: str, selections: dict[str, str]) -> str | None:
    """Find interaction-tool text in the reply a PA turn delivers (Appendix F.2, Table 9).

    The same rule as for a task tool's arguments (:func:`ix_text_in`): a reply that names an
    ``IX_`` tool, or a selected attribute together with its selected setting ("Thank you for
    selecting 'High' for Solution Breadth"), would show the selection to the blind judge (and
    to the simulated user, who never sees it either). A reply that says "high" without naming
    the attribute is an ordinary reply.

    Returns:
        A short description with an excerpt of the reply, or None.
    """
    leak = ix_text_in([reply], selections, where="the reply")
    if leak is None:
        return None
    excerpt = " ".join(reply.split())
    excerpt = excerpt if len(excerpt) <= 120 else excerpt[:117] + "..."
    return f"{leak} ('{excerpt}')"


_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)[ \t]*\n*")


def withhold_ix_sentences(reply: str, selections: dict[str, str]) -> tuple[str, int]:
    """Drop the sentences of a reply that carry interaction-tool text (accumulation sessions).

    A sentence is withheld when it names an ``IX_`` tool or a selected attribute (key or
    display name) at all, or is IX text by :func:`ix_text_in`; the rest is kept as the PA wrote
    it (the wrapper filters, it writes nothing: SPEC section 8). Sentences end at ``.``, ``!``,
    ``?`` or a line break.

    Returns:
        ``(kept text, sentences withheld)``; the text is ``reply`` unchanged when nothing was
        withheld, and may be empty or still hold IX text spread over sentences (the caller
        checks it again with :func:`ix_text_in_reply`).
    """
    kept: list[str] = []
    dropped = 0
    for match in _SENTENCE.finditer(reply):
        part = match.group(0)
        if not part:
            continue
        norm = _norm(part)
        names = any(
            _says(norm, attribute(key).name) or _says(norm, key) for key in selections
        )
        if names or ix_text_in([part], selections, where="") is not None:
            dropped += 1
        else:
            kept.append(part)
    return ("".join(kept).strip() if dropped else reply), dropped


class TurnActions:
    """Runs the PA's tool calls for one turn.

    Args:
        backend: the tool registry (``specs()``, ``get``, ``call``).
        wrapper: the step's IX wrapper (it owns the working copy).
        offered_ix: attribute keys whose IX tools are offered this turn.
        on_call: called with each world call once handled (for live observers).
        on_ix: called with each IX call's outcome.

    Attributes:
        calls: every world call proposed this turn, with status and result, in order.
        ix_results: every IX call's outcome this turn, in order.
        floor_reason: set when a call broke the interaction-tool contract (the turn must end
            floored; the offending call did not run).
        harness_texts: every tool result of this turn that the harness wrote rather than the
            world: error texts (unknown tool, unreadable arguments, rejected or failed calls),
            the IX wrapper's answers, held and blocked notices. A reply that copies them is not
            the PA's own (:func:`mempa_tui.agent.echo.harness_echo`); world data is not listed.
        world_changes: world calls of this turn that ran as writes without an error (the
            registry's ``write`` marker); a repeated read after one is no repeat (issue 12).
    """

    def __init__(
        self,
        backend: ToolBackend,
        wrapper: IXWrapper,
        offered_ix: list[str],
        *,
        on_call: Callable[[ExecutedCall], None] | None = None,
        on_ix: Callable[[SelectResult], None] | None = None,
    ) -> None:
        self._backend = backend
        self.wrapper = wrapper
        self.offered_ix = [a.key for a in ATTRIBUTES if a.key in set(offered_ix)]
        self._on_call = on_call
        self._on_ix = on_ix
        self.calls: list[ExecutedCall] = []
        self.ix_results: list[SelectResult] = []
        self.floor_reason: str | None = None
        self.harness_texts: list[str] = []
        self.world_changes = 0
        self._ids: set[str] = set()
        self._counter = itertools.count(1)

    def tool_specs(self) -> list[ToolSpec]:
        """World tools (stable order) followed by the offered IX tools (taxonomy order)."""
        specs: list[ToolSpec] = list(self._backend.specs())
        return specs + [ix_tool_spec(key) for key in self.offered_ix]

    def offered_names(self) -> list[str]:
        """Names of every tool offered this turn."""
        return [s.name for s in self.tool_specs()]

    def unique_id(self, call_id: str) -> str:
        """``call_id`` if unused this turn, else a fresh ``call_<n>`` (missing or repeated ids)."""
        if not call_id or call_id in self._ids:
            call_id = f"call_{next(self._counter)}"
            while call_id in self._ids:
                call_id = f"call_{next(self._counter)}"
        self._ids.add(call_id)
        return call_id

    def _unknown(self, name: str) -> str:
        offered = self.offered_names()
        bare = {strip_tool_prefix(n): n for n in offered}
        close = difflib.get_close_matches(
            strip_tool_prefix(name), list(bare), n=3, cutoff=0.5
        )
        hint = (
            ", ".join(bare[c] for c in close)
            if close
            else "none close; see the tool list"
        )
        if not name.strip():
            return f"Error: a tool call must name a tool. Close matches: {hint}."
        return f"Error: there is no tool named {name!r}. Close matches: {hint}."

    def _rejected(
        self, call_id: str, name: str, arguments: dict[str, Any], message: str
    ) -> ExecutedCall:
        call = ExecutedCall(
            call_id=call_id,
            tool=strip_tool_prefix(name),
            arguments=arguments,
            status=CallStatus.REJECTED,
            result=message,
            error=True,
        )
        self.calls.append(call)
        if self._on_call:
            self._on_call(call)
        return call

    def ix(self, attribute_key: str, arguments: dict[str, Any]) -> SelectResult:
        """Hand one IX call to the wrapper (a human seat may call this directly)."""
        result = self.wrapper.select(attribute_key, arguments)
        self.ix_results.append(result)
        if self._on_ix:
            self._on_ix(result)
        return result

    def world(self, call_id: str, name: str, arguments: dict[str, Any]) -> ExecutedCall:
        """Gate and run one world call through the wrapper (a human seat may call this directly)."""
        leak = ix_text_in_arguments(arguments, self.wrapper.selections)
        if leak is not None:
            self.floor_reason = floor_reason(
                FloorKind.IX_TEXT_IN_TASK_ARGUMENTS, f"{name}: {leak}"
            )
            self.harness_texts.append(f"Error: {self.floor_reason}.")
            return self._rejected(
                call_id, name, arguments, f"Error: {self.floor_reason}."
            )
        call = self.wrapper.propose(call_id, name, arguments)
        if call.status is CallStatus.EXECUTED and call.write and not call.error:
            self.world_changes += 1
        if call.error or call.status is not CallStatus.EXECUTED:
            self.harness_texts.append(call.result)
        self.calls.append(call)
        if self._on_call:
            self._on_call(call)
        return call

    def dispatch(self, call: ToolCall) -> tuple[str, str]:
        """Handle one model tool call.

        Unknown or empty names get an error naming close matches; unreadable arguments get an
        error; IX calls go to :meth:`ix`; world calls to :meth:`world`.

        Returns:
            (call id actually used, tool result text for the PA).
        """
        call_id = self.unique_id(call.id)
        name = call.name.strip()
        ix_attr = attribute_by_ix_tool(name)
        is_world = bool(name) and self._backend.get(name) is not None
        if ix_attr is None and not is_world:
            message = self._unknown(name)
            self._rejected(call_id, name or "(no name)", call.arguments, message)
            self.harness_texts.append(message)
            return call_id, message
        if ix_attr is not None and ix_attr.key not in self.offered_ix:
            offered = ", ".join(attribute(k).ix_tool for k in self.offered_ix) or "none"
            message = (
                f"Error: {name} is not offered at this point of the session; interaction tools "
                f"offered now: {offered}."
            )
            self.harness_texts.append(message)
            return call_id, message
        if call.arguments_error:
            message = (
                f"Error: the arguments of {name} could not be read ({call.arguments_error}). "
                "Send one JSON object with the tool's fields."
            )
            if ix_attr is None:
                self._rejected(call_id, name, {}, message)
            self.harness_texts.append(message)
            return call_id, message
        if ix_attr is not None:
            message = self.ix(ix_attr.key, call.arguments).message
            self.harness_texts.append(message)  # the wrapper's words, never the world's
            return call_id, message
        executed = self.world(call_id, name, call.arguments)  # lists its own harness texts
        return call_id, executed.result
