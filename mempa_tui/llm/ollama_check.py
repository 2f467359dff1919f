"""Checks that an Ollama server is up and has a profile's models (SPEC section 4.10).

Uses the official ``ollama`` client (``AsyncClient``), imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import httpx
from pydantic import BaseModel, Field

from mempa_tui.llm.profile import ModelProfile

__all__ = ["OllamaCheck", "OllamaError", "check_ollama", "ollama_models", "pull_model"]

_PREFIXES = ("ollama_chat/", "ollama/")


class OllamaError(RuntimeError):
    """Talking to Ollama failed; the message says what to do."""


class OllamaCheck(BaseModel):
    """Result of :func:`check_ollama`."""

    url: str
    """The server URL checked."""
    reachable: bool
    """Whether the server answered."""
    version: str | None = None
    """Server version, when reachable."""
    available: list[str] = Field(default_factory=list)
    """Models the server has pulled."""
    missing: list[str] = Field(default_factory=list)
    """Requested models it does not have."""
    problems: list[str] = Field(default_factory=list)
    """One sentence per problem, each with the command that fixes it."""

    @property
    def ok(self) -> bool:
        """True when the server answered and has every requested model."""
        return self.reachable and not self.missing and not self.problems

    @property
    def message(self) -> str:
        """A line for the user: all good, or the problems."""
        if self.ok:
            return f"Ollama {self.version or ''} at {self.url} has every model needed".replace("  ", " ")
        return "; ".join(self.problems)


def ollama_models(profile: ModelProfile) -> list[str]:
    """Distinct Ollama model names (prefix removed) used by ``profile``, in first-use order."""
    names: list[str] = []
    for spec in profile.all_specs():
        if spec.model.startswith(_PREFIXES):
            name = spec.model.split("/", 1)[1]
            if name not in names:
                names.append(name)
    return names


def _matches(wanted: str, have: str) -> bool:
    if ":" not in wanted:
        return have in (wanted, f"{wanted}:latest")
    return have == wanted


async def check_ollama(url: str, models: Sequence[str], *, timeout_s: float = 5.0) -> OllamaCheck:
    """Ask an Ollama server for its version and pulled models.

    Args:
        url: server URL (``http://127.0.0.1:11434``).
        models: model names to look for, without the ``ollama_chat/`` prefix; a name without a
            tag matches ``<name>:latest``.
        timeout_s: per-request timeout.

    Returns:
        The check; ``problems`` says "no Ollama server at <url>: start it with `ollama serve`"
        when unreachable, and names ``ollama pull <model>`` for each missing model.
    """
    import ollama

    client = ollama.AsyncClient(host=url, timeout=timeout_s)
    try:
        listing = await client.list()
        version = await _version(url, timeout_s)
    except (ConnectionError, httpx.TransportError, ollama.RequestError) as exc:
        return OllamaCheck(
            url=url,
            reachable=False,
            problems=[f"no Ollama server at {url}: start it with `ollama serve` ({exc.__class__.__name__})"],
        )
    except ollama.ResponseError as exc:
        return OllamaCheck(
            url=url,
            reachable=True,
            problems=[f"the server at {url} answered HTTP {exc.status_code} to /api/tags: {exc.error}"],
        )
    finally:
        await client.close()  # type: ignore[no-untyped-call]
    available = [m.model for m in listing.models if m.model]
    missing = [name for name in models if not any(_matches(name, have) for have in available)]
    return OllamaCheck(
        url=url,
        reachable=True,
        version=version,
        available=available,
        missing=missing,
        problems=[f"model {name} is not pulled at {url}: run `ollama pull {name}`" for name in missing],
    )


async def _version(url: str, timeout_s: float) -> str | None:
    """The server version via ``GET /api/version`` (the ``ollama`` client has no call for it)."""
    async with httpx.AsyncClient(base_url=url, timeout=timeout_s) as http:
        response = await http.get("/api/version")
    if response.status_code != 200:
        return None
    value = response.json().get("version") if isinstance(response.json(), dict) else None
    return value if isinstance(value, str) else None


async def pull_model(
    url: str, model: str, *, on_progress: Callable[[str, int | None, int | None], None] | None = None
) -> None:
    """Pull ``model`` onto the Ollama server at ``url``.

    Args:
        url: server URL.
        model: model name (no ``ollama_chat/`` prefix).
        on_progress: called with ``(status, completed_bytes, total_bytes)`` for each progress line.

    Raises:
        OllamaError: the server is unreachable or refused the pull (message names the model).
    """
    import ollama

    client = ollama.AsyncClient(host=url)
    try:
        stream = await client.pull(model, stream=True)
        async for part in stream:
            if on_progress is not None:
                on_progress(part.status or "", part.completed, part.total)
    except (ConnectionError, httpx.TransportError, ollama.RequestError):
        raise OllamaError(f"no Ollama server at {url}: start it with `ollama serve`, then pull {model}") from None
    except ollama.ResponseError as exc:
        raise OllamaError(f"Ollama at {url} could not pull {model}: {exc.error}") from None
    finally:
        await client.close()  # type: ignore[no-untyped-call]
