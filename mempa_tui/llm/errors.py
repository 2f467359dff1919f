"""Errors raised by the model layer.

Every failure of a model call surfaces as an :class:`LLMError` naming the role, the model and a
one-line cause; provider tracebacks are never chained into what the user sees.
"""

from __future__ import annotations

__all__ = [
    "ContextWindowError",
    "JSONReplyError",
    "LLMConfigError",
    "LLMConnectionError",
    "LLMError",
    "LLMProviderError",
    "LLMRequestError",
    "LLMTimeoutError",
    "ModelServerExitedError",
]


class LLMError(RuntimeError):
    """A model call failed.

    Attributes:
        role: the role the call was for (``pa``, ``judge``...).
        model: the litellm model string.
        cause: one line saying what went wrong (no stack trace).
    """

    def __init__(self, role: str, model: str, cause: str) -> None:
        self.role = role
        self.model = model
        self.cause = cause
        super().__init__(f"{role} model {model}: {cause}")


class LLMConfigError(LLMError):
    """The profile cannot be used as written (missing API key variable, missing api_base)."""


class LLMConnectionError(LLMError):
    """The server could not be reached (after retries)."""


class LLMTimeoutError(LLMError):
    """The call took longer than the spec's ``timeout_s`` (after retries)."""


class LLMProviderError(LLMError):
    """The server answered with an error: rate limit, 5xx, or an unexpected reply (after retries).

    Attributes:
        status_code: HTTP status when known.
    """

    def __init__(self, role: str, model: str, cause: str, status_code: int | None = None) -> None:
        self.status_code = status_code
        super().__init__(role, model, cause)


class LLMRequestError(LLMProviderError):
    """The server refused the request itself (HTTP 4xx other than 408/429); never retried."""


class ContextWindowError(LLMError):
    """The prompt does not fit the context window even after trimming.

    Attributes:
        prompt_tokens: estimated prompt tokens after trimming.
        max_tokens: tokens reserved for the reply.
        context_window: the spec's context size.
    """

    def __init__(self, role: str, model: str, prompt_tokens: int, max_tokens: int, context_window: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.context_window = context_window
        super().__init__(
            role,
            model,
            f"prompt of about {prompt_tokens} tokens + {max_tokens} reply tokens exceeds the context "
            f"window of {context_window} tokens even after dropping every old message it may drop",
        )


class JSONReplyError(ValueError):
    """A reply that should hold a JSON object does not.

    Attributes:
        excerpt: the start of the offending text (at most 200 characters).
    """

    def __init__(self, message: str, text: str) -> None:
        self.excerpt = text[:200]
        super().__init__(f"{message}; reply began: {self.excerpt!r}")


class ModelServerExitedError(LLMConnectionError):
    """The model server mempa started for the run (the embedded llama.cpp process) has exited.

    Raised at once by the client, while a call is in flight or before one is sent, instead of
    waiting out ``timeout_s``; never retried (the same process cannot come back).

    Attributes:
        server: which server (``shared`` or a role's or model's name).
        exit_code: the process's exit status (negative: killed by that signal).
        log_path: the file holding the server's output (kept after the run for reading).
    """

    def __init__(self, role: str, model: str, server: str, exit_code: int, log_path: str) -> None:
        self.server = server
        self.exit_code = exit_code
        self.log_path = log_path
        super().__init__(
            role, model,
            f"the embedded model server ({server}) exited with code {exit_code}; its output is in {log_path}",
        )
