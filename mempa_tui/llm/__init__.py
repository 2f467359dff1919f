"""The model layer: profiles, the litellm client, the scripted test server, the embedded default.

Only :mod:`mempa_tui.llm.client` imports litellm, and only when the first call is made.
"""

from __future__ import annotations

from mempa_tui.llm._parse import parse_json_reply
from mempa_tui.llm.client import LLMClient
from mempa_tui.llm.errors import (
    ContextWindowError,
    JSONReplyError,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMProviderError,
    LLMRequestError,
    LLMTimeoutError,
    ModelServerExitedError,
)
from mempa_tui.llm.profile import (
    EmbeddedOptions,
    ModelProfile,
    ModelSpec,
    ProfileError,
    ProfileOptions,
    load_profile,
)
from mempa_tui.llm.scripted import (
    ScriptedModelServer,
    ScriptedReply,
    ScriptedRequest,
    ScriptedToolCall,
)
from mempa_tui.llm.types import (
    ChatMessage,
    Completion,
    LLMCallRecord,
    Role,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "ChatMessage",
    "Completion",
    "ContextWindowError",
    "EmbeddedOptions",
    "JSONReplyError",
    "LLMCallRecord",
    "LLMClient",
    "LLMConfigError",
    "LLMConnectionError",
    "LLMError",
    "LLMProviderError",
    "LLMRequestError",
    "LLMTimeoutError",
    "ModelServerExitedError",
    "ModelProfile",
    "ModelSpec",
    "ProfileError",
    "ProfileOptions",
    "Role",
    "ScriptedModelServer",
    "ScriptedReply",
    "ScriptedRequest",
    "ScriptedToolCall",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "load_profile",
    "parse_json_reply",
]
