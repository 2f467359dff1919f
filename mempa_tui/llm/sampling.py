"""The sampling seed of each model call: a base seed, a sampling scope and the call's prompt.

Why (paper Section 3.5: each probe is repeated three times and the mean reported, because LLM
agents vary across runs; Section 4: the PA samples at temperature 0.7): llama.cpp and Ollama
repeat their random draws exactly when given the same seed. Sending a profile's fixed ``seed`` on
every call made the three repeats of a probe the same sample (so their mean measured nothing), and
started every call of a PA turn from the same draws (which helped a small model repeat one tool
call over and over).

The rule: the seed sent with a call is :func:`call_seed` of

* the spec's ``seed`` (the base; a spec whose seed is None sends no seed at all),
* the current *sampling scope*: a key the runner sets with :func:`sampling_scope` around each
  timeline step attempt and each probe repeat attempt (made of the run's seed, the step or probe
  id, the repeat and the attempt); no scope (tests, the app's free play) counts as an empty key,
* the prompt as sent: the messages after trimming (:func:`prompt_texts`: canonical JSON with the
  tool-call ids renumbered in order of appearance, since servers and litellm may make those ids
  up at random) and the offered tool names.

So the same run seed, step and prompt give the same seed (a resumed run or a replay samples as
the original did); another repeat, attempt or run seed gives another seed; and the next call of a
turn, whose prompt has grown, gets another seed. The hash is sha256 (Python's ``hash()`` is salted
per process and would break reproducibility), cut to a non-negative 31-bit integer, which every
server accepts.

The scope is a context variable: anyio task groups copy the context into their child tasks, and
the client computes the seed in the caller's task, so a scope set around a step reaches every call
the step makes (as :mod:`mempa_tui.runner._calls` routes call records).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from mempa_tui.llm.types import ChatMessage

__all__ = ["call_seed", "current_scope", "prompt_texts", "sampling_scope"]

_SCOPE: ContextVar[str] = ContextVar("mempa_sampling_scope", default="")
_MASK_31 = (1 << 31) - 1


@contextmanager
def sampling_scope(key: str) -> Iterator[str]:
    """Make ``key`` the sampling scope of every model call made inside the block.

    Args:
        key: what identifies the unit of work, e.g. ``run-seed=0 probe=P1 repeat=2 attempt=1``.
            Non-empty. Scopes do not nest: an inner scope replaces the outer one until it ends.

    Yields:
        ``key``.

    Raises:
        ValueError: ``key`` is empty (that is what "no scope" means).
    """
    if not key:
        raise ValueError("sampling_scope: the key must not be empty (outside any scope means no key)")
    token = _SCOPE.set(key)
    try:
        yield key
    finally:
        _SCOPE.reset(token)


def current_scope() -> str:
    """The sampling scope of the current task (``""`` outside any :func:`sampling_scope`)."""
    return _SCOPE.get()


def prompt_texts(messages: Sequence[ChatMessage]) -> list[str]:
    """The messages of a prompt as the seed reads them: one canonical JSON text per message.

    Tool-call ids (an assistant message's ``tool_calls[].id``, a tool result's ``tool_call_id``)
    are replaced by ``#1``, ``#2``... in order of first appearance: some servers (and litellm for
    Ollama) make ids up at random, and a replayed prompt must give the same seed.

    Args:
        messages: the prompt, system message first.

    Returns:
        One text per message, in order.
    """
    ids: dict[str, str] = {}

    def renumber(call_id: str | None) -> str | None:
        if call_id is None:
            return None
        return ids.setdefault(call_id, f"#{len(ids) + 1}")

    texts = []
    for message in messages:
        data = message.model_dump(mode="json")
        for call in data["tool_calls"]:
            call["id"] = renumber(call["id"])
        data["tool_call_id"] = renumber(data["tool_call_id"])
        texts.append(json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
    return texts


def call_seed(base: int | None, messages: Sequence[str], tools: Sequence[str], *, scope: str | None = None) -> int | None:
    """The sampling seed to send with one call (see the module docstring for the rule).

    Args:
        base: the spec's ``seed``; None means send no seed (the result is None).
        messages: the messages as sent, each as :func:`prompt_texts` writes it, in order.
        tools: names of the offered tools, in order.
        scope: the sampling scope; None reads :func:`current_scope`.

    Returns:
        An integer in ``[0, 2**31 - 1]``, the same for the same inputs in every process, or None.
    """
    if base is None:
        return None
    key = current_scope() if scope is None else scope
    payload = json.dumps({"base": base, "scope": key, "messages": list(messages), "tools": list(tools)},
                         ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(payload.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") & _MASK_31
