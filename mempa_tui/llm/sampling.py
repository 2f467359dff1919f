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
* the prompt as sent: the serialised messages after trimming and the offered tool names.

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

__all__ = ["call_seed", "current_scope", "sampling_scope"]

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


def call_seed(base: int | None, messages: Sequence[str], tools: Sequence[str], *, scope: str | None = None) -> int | None:
    """The sampling seed to send with one call (see the module docstring for the rule).

    Args:
        base: the spec's ``seed``; None means send no seed (the result is None).
        messages: the messages as sent, each serialised (the client's canonical JSON), in order.
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
