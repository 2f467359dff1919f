"""Score replies are capped in length so a grammar closes them inside the role's budget (issue 12).

On the embedded quick start the 0.5B judge and the rater wrote their evidence / reason until the
completion cap cut the JSON (``{"score": 4, "evidence": "The assistant's reply ...`` with no end),
and the probe's BRS or PRS was missing although the score itself had been written. With a
``maxLength`` in the reply schema, llama.cpp's grammar ends the string in time.
"""

from __future__ import annotations

from pathlib import Path

from mempa_tui.llm import load_profile
from mempa_tui.llm.types import Role
from mempa_tui.scoring._judge import EVIDENCE_MAX_CHARS, JUDGE_SCHEMA
from mempa_tui.simulator import _prs

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
