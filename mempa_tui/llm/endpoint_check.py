"""``mempa models check``: one small request to every endpoint of a profile (issue 16, point 5).

A profile's roles (PA, simulator, checker, judge, memory, embedder) may share an endpoint (the
same model at the same server) or each have their own. :func:`check_endpoints` sends one short
chat request per distinct (model, server) pair through :class:`~mempa_tui.llm.LLMClient`, the
path every run takes (litellm, the same wire dialect and API keys), and one embedding request when
the retrieval memories would embed through the profile's ``embedder`` role. Each request is small (a one-line prompt, at most 8 reply
tokens), is not retried, and gives up after at most :data:`CHECK_TIMEOUT_S` seconds, so a dead
port is reported in seconds instead of 15 s into a run.
"""

from __future__ import annotations

from pydantic import BaseModel

from mempa_tui.llm.profile import ModelProfile, ModelSpec
from mempa_tui.llm.types import ChatMessage, Role

__all__ = ["CHECK_TIMEOUT_S", "EndpointCheck", "check_endpoints"]

CHECK_TIMEOUT_S = 30.0
"""Longest wait for one check request (a profile's shorter ``timeout_s`` wins)."""

_PROMPT = "Connection check: answer with the single word ok."


class EndpointCheck(BaseModel):
    """The result of one endpoint's request."""

    model: str
    """The litellm model string."""
    api_base: str | None
    """The server (None: the provider's default)."""
    roles: list[str]
    """The roles this endpoint serves."""
    ok: bool
    """Whether the request got an answer."""
    seconds: float
    """How long it took."""
    error: str | None = None
    """Why it failed (the client's error message)."""

    def text(self) -> str:
        """``ok    pa, judge  openai/x at http://...  (0.41 s)`` or ``DOWN ...: <why>``."""
        where = f"{self.model} at {self.api_base or '(provider default)'}"
        head = f"{'ok' if self.ok else 'DOWN':<5} {', '.join(self.roles):<24} {where}  ({self.seconds:.2f} s)"
        return head if self.ok else f"{head}: {self.error}"


def _quick(spec: ModelSpec) -> ModelSpec:
    return spec.model_copy(update={"max_tokens": 8, "num_retries": 0,
                                   "timeout_s": min(spec.timeout_s, CHECK_TIMEOUT_S)})


async def check_endpoints(profile: ModelProfile) -> list[EndpointCheck]:
    """Send one small request to every distinct endpoint of ``profile``.

    Args:
        profile: a loaded profile whose ``api_base`` values are final (not the embedded runtime
            before its server starts; ``mempa models check`` checks that one's weights instead).

    Returns:
        One check per distinct (model, api_base) chat endpoint in role order (PA first), then the
        embedder's when the retrieval memories would use it (the profile names an ``embedder`` role
        and its runtime is not ``scripted``: the rule of ``make_embedder(client, "auto")``). Never raises for a failed call: the failure is
        the check's ``error``.
    """
    import time

    from mempa_tui.llm.client import LLMClient
    from mempa_tui.llm.errors import LLMError

    quick = profile.model_copy(update={
        "default": _quick(profile.default),
        "roles": {role: _quick(spec) for role, spec in profile.roles.items()},
    })
    client = LLMClient(quick)
    chat_roles = [r for r in Role if r is not Role.EMBEDDER]
    endpoints: dict[tuple[str, str | None], list[Role]] = {}
    for role in chat_roles:
        spec = quick.spec_for(role)
        endpoints.setdefault((spec.model, spec.api_base), []).append(role)
    checks: list[EndpointCheck] = []
    for (model, base), roles in endpoints.items():
        start = time.perf_counter()
        error = None
        try:
            await client.complete(roles[0], [ChatMessage(role="user", content=_PROMPT)])
        except (LLMError, ValueError) as exc:
            error = str(exc) or type(exc).__name__
        checks.append(EndpointCheck(model=model, api_base=base, roles=[r.value for r in roles], ok=error is None,
                                    seconds=time.perf_counter() - start, error=error))
    if Role.EMBEDDER in profile.roles and profile.runtime != "scripted":  # the rule of memory.make_embedder("auto")
        spec = quick.spec_for(Role.EMBEDDER)
        start = time.perf_counter()
        error = None
        try:
            await client.embed(Role.EMBEDDER, ["connection check"])
        except (LLMError, ValueError) as exc:
            error = str(exc) or type(exc).__name__
        checks.append(EndpointCheck(model=spec.model, api_base=spec.api_base, roles=["embedder"], ok=error is None,
                                    seconds=time.perf_counter() - start, error=error))
    return checks
