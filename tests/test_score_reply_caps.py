"""Score replies are capped in length so a grammar closes them inside the role's budget (issue 12).

On the embedded quick start the 0.5B judge and the rater wrote their evidence / reason until the
completion cap cut the JSON (``{"score": 4, "evidence": "The assistant's reply ...`` with no end),
and the probe's BRS or PRS was missing although the score itself had been written. With a
``maxLength`` in the reply schema, llama.cpp's grammar ends the string in time.
"""

from __future__ import annotations

import json
from pathlib import Path

from mempa_tui.llm import LLMClient, ScriptedModelServer, ScriptedRequest, load_profile
from mempa_tui.llm.structured import CutReply, cut_reason, watch_cut_replies
from mempa_tui.llm.types import Completion, Role
from mempa_tui.scoring._judge import EVIDENCE_MAX_CHARS, JUDGE_SCHEMA
from mempa_tui.scripts.schema import Persona
from mempa_tui.simulator import _prs, rate_probe

MODELS = Path(__file__).resolve().parent.parent / "models"

#: A generous bound for English text under Qwen's tokenizer: at least 2.5 characters per token.
CHARS_PER_TOKEN = 2.5
#: Tokens the rest of the object takes (braces, keys, quotes, the score).
OVERHEAD_TOKENS = 20


def _fits(max_chars: int, max_tokens: int) -> bool:
    return max_chars / CHARS_PER_TOKEN + OVERHEAD_TOKENS <= max_tokens


def test_the_judges_evidence_is_capped_within_the_embedded_judges_budget() -> None:
    assert JUDGE_SCHEMA["properties"]["evidence"]["maxLength"] == EVIDENCE_MAX_CHARS
    assert _fits(EVIDENCE_MAX_CHARS, load_profile(MODELS / "embedded.yaml").spec_for(Role.JUDGE).max_tokens)


def test_the_raters_reason_is_capped_within_the_embedded_simulators_budget() -> None:
    cap = _prs._SCHEMA["properties"]["reason"]["maxLength"]
    assert _fits(cap, load_profile(MODELS / "embedded.yaml").spec_for(Role.SIMULATOR).max_tokens)


def test_the_raters_cap_follows_the_judges_reasoning_and_is_the_most_that_fits() -> None:
    # Same rule as the judge's evidence (2.5 characters per token plus the object), applied to the
    # simulator's 200 tokens: 450 fits, the judge's 480 would not, so the rater has its own cap.
    budget = load_profile(MODELS / "embedded.yaml").spec_for(Role.SIMULATOR).max_tokens
    assert _prs._SCHEMA["properties"]["reason"]["maxLength"] == _prs.REASON_MAX_CHARS == 450
    assert _fits(_prs.REASON_MAX_CHARS, budget) and not _fits(EVIDENCE_MAX_CHARS, budget)


def _reason(chars: int, end: str) -> str:
    words = ("The reply kept to the point and gave me the times without any extra chatter at all "
             "which is how I like it ") * 10
    return words[: chars - len(end)].rstrip() + end


async def _rate(reason: str) -> tuple[tuple[int, str], list[ScriptedRequest], list[CutReply]]:
    replies = [json.dumps({"score": 4, "reason": reason}), json.dumps({"score": 4, "reason": "Fine."})]
    seen: list[ScriptedRequest] = []

    def answer(request: ScriptedRequest) -> str:
        seen.append(request)
        return replies[min(len(seen), len(replies)) - 1]

    person = Persona(label="A", name="Ingrid Salcedo", age=44, occupation="planner", workplace="Wendlink",
                     town="Hollins Ferry", living_arrangement="Alone.", routines=["stand-up"],
                     relationships=[{"name": "Gideon Thrale", "relation": "manager", "context": "work"}],
                     personality="Dry.", speech_style="Clipped.", background="Timetables.")
    async with ScriptedModelServer(answer) as server:
        with watch_cut_replies() as cuts:  # as the scorer calls the rater: cut replies are retried
            got = await rate_probe(LLMClient(server.profile()), person, "verbosity", "Terse",
                                   "Ingrid: time?\nAssistant: 3pm.")
    return got, seen, cuts


async def test_a_420_character_reason_that_ends_a_sentence_is_accepted_at_once() -> None:
    reason = _reason(420, ".")
    assert len(reason) == 420
    got, seen, cuts = await _rate(reason)
    assert got == (4, reason) and len(seen) == 1 and cuts == []


async def test_a_reason_at_the_cap_mid_sentence_is_still_retried_as_cut() -> None:
    got, seen, cuts = await _rate(_reason(_prs.REASON_MAX_CHARS, " and"))
    assert got == (4, "Fine.") and len(seen) == 2 and cuts == []
    assert "cut off before it finished" in seen[1].messages[-1].content
    # under the old 400 cap this 420-character reason counted as cut; now it is well inside it
    reply = json.dumps({"score": 3, "reason": _reason(420, " and")})
    assert cut_reason(Completion(text="", finish_reason="stop"), reply, _prs._SCHEMA) is None
