"""Model profiles: which model fills each role, and how to reach it (SPEC section 4.10).

A profile is a YAML file under ``models/``. It names a runtime, a ``default`` model spec and
optional per-role overrides; a role entry is merged field by field over ``default``, so a profile
only writes what differs. API keys never live in a profile: a spec names the environment variable
that holds the key (``api_key_env``).

Example::

    name: ollama
    runtime: ollama
    default:
      model: ollama_chat/qwen2.5:7b-instruct
      context_window: 16384
    roles:
      judge: {temperature: 0.0}
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from mempa_tui.llm.types import Role

__all__ = [
    "DEFAULT_OLLAMA_URL",
    "EmbeddedOptions",
    "EmbeddedServerKind",
    "ModelProfile",
    "ModelSpec",
    "ProfileError",
    "ProfileOptions",
    "RepeatedCallPolicy",
    "Runtime",
    "ToolCalling",
    "Wire",
    "load_profile",
    "normalise_ollama_url",
]

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
"""Where Ollama listens unless the profile or ``OLLAMA_HOST`` says otherwise."""

Runtime = Literal["embedded", "ollama", "openai_compatible", "litellm", "scripted"]
"""How a profile's models are served: the embedded llama.cpp server, an Ollama server, any
OpenAI-compatible server, any litellm provider, or the scripted test server."""

Wire = Literal["auto", "ollama", "llama_cpp", "openai"]
"""The request dialect a server speaks; ``auto`` derives it from the model string and runtime."""

ToolCalling = Literal["auto", "constrained"]
"""How a spec's calls that offer tools are made (see :attr:`ModelSpec.tool_calling`)."""

RepeatedCallPolicy = Literal["run", "wrap_up"]
"""What the PA loop does with a tool call identical to an earlier one of the same user turn:
``run`` it again (the paper's protocol), or ``wrap_up`` the turn (see
:attr:`ProfileOptions.pa_repeated_call`)."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REPO_MODELS_DIR = Path(__file__).resolve().parents[2] / "models"


class ProfileError(ValueError):
    """A profile file is missing, unreadable or invalid.

    Attributes:
        source: the file (or profile name) the problem is in.
        problems: one line per problem, each naming the field path (``roles.pa.temperature``).
    """

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"model profile {source}: " + "; ".join(problems))


class ModelSpec(BaseModel):
    """One model endpoint and its generation settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=3)
    """litellm model string, provider prefix included: ``ollama_chat/qwen2.5:7b-instruct``,
    ``openai/qwen2.5-coder-0.5b`` (any OpenAI-compatible server), ``anthropic/...``."""
    api_base: str | None = None
    """Server URL. None: the runtime's default (Ollama URL for ``ollama_chat/``; filled in by
    :class:`~mempa_tui.llm.embedded.EmbeddedServer` for the embedded runtime; the provider's own
    endpoint otherwise)."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (never the key itself)."""
    temperature: float = Field(default=0.2, ge=0.0, le=2.0)
    """Sampling temperature."""
    max_tokens: int = Field(default=512, ge=1)
    """Most tokens generated per call; reserved out of ``context_window``."""
    context_window: int = Field(default=8192, ge=256)
    """Context size in tokens. Prompt estimate + ``max_tokens`` must fit; Ollama is sent
    ``num_ctx`` equal to it so the server never truncates silently."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Seconds one HTTP attempt may take before it counts as timed out."""
    max_concurrency: int = Field(default=2, ge=1)
    """Most calls in flight at once to this spec's endpoint (shared by roles on one endpoint: the
    smallest value wins)."""
    concurrency_group: str | None = None
    """Specs naming the same group share one concurrency limit even on different endpoints (the
    embedded servers share one CPU); None: the endpoint is the group."""
    num_retries: int = Field(default=2, ge=0)
    """Retries after a transient failure (timeout, connection error, HTTP 408/429/5xx)."""
    retry_backoff_s: float = Field(default=1.0, ge=0.0)
    """First retry delay in seconds; doubles on each further retry (capped at 30 s)."""
    seed: int | None = None
    """Sampling seed, sent where the server honours one (Ollama, llama.cpp)."""
    wire: Wire = "auto"
    """Request dialect override; ``auto`` is right unless a server is mislabelled."""
    tool_calling: ToolCalling = "auto"
    """How calls that offer tools are made: ``auto`` sends the tools and lets the model answer in
    text or call one (calls written as JSON text are recovered); ``constrained`` (llama.cpp
    servers) also sends a grammar under which every reply is exactly one call of an offered tool or
    of the reply tool ``reply_to_user``, so a call with an unknown name or arguments outside the
    tool's schema cannot be generated."""

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                f"{value!r} is not an environment variable name; put the key in an environment "
                "variable and write its name here"
            )
        return value

    def resolved_wire(self, runtime: Runtime) -> Literal["ollama", "llama_cpp", "openai"]:
        """The dialect requests to this spec use.

        Args:
            runtime: the profile's runtime.

        Returns:
            ``ollama`` for ``ollama_chat/`` and ``ollama/`` models, ``llama_cpp`` for the embedded
            runtime, else ``openai``; an explicit ``wire`` wins.
        """
        if self.wire != "auto":
            return self.wire
        if self.model.startswith(("ollama_chat/", "ollama/")):
            return "ollama"
        if runtime == "embedded":
            return "llama_cpp"
        return "openai"


EmbeddedServerKind = Literal["llama_cpp", "llama_cpp_python"]
"""Which llama.cpp server runs the embedded model: ``llama_cpp`` is llama.cpp's own C++ server
from the prebuilt ``xllamacpp`` wheel (no compile step; one process for every role, with a
host-memory prompt cache and parallel slots); ``llama_cpp_python`` is ``python -m llama_cpp.server``
(compiled at install time; one process per server, no shared cache)."""


class EmbeddedOptions(BaseModel):
    """Settings for the embedded llama.cpp server (runtime ``embedded``)."""

    model_config = ConfigDict(extra="forbid")

    server: EmbeddedServerKind = "llama_cpp"
    """The server implementation (see :data:`EmbeddedServerKind`). Measured on a 2-core machine
    (benchmarks/bench_embedded.py): the prebuilt llama.cpp server reads prompts faster than
    llama-cpp-python as mempa ran it (which keeps the logits of every prompt token) and shares one
    prompt cache between all roles."""
    weights_dir: str = "models/weights"
    """Folder the joined GGUF is written to (relative paths are relative to the working dir)."""
    n_threads: int | None = Field(default=None, ge=1)
    """CPU threads for prompt evaluation and generation; None: the CPUs the load average leaves idle
    when the server starts (all of them on an idle machine; see
    :func:`~mempa_tui.llm.embedded.default_threads`)."""
    n_parallel: int = Field(default=1, ge=1, le=16)
    """Slots of the llama.cpp server (``llama_cpp`` only): requests decoded together by continuous
    batching. Every slot has the full ``context_window`` of its own. The profile's
    ``max_concurrency`` should not exceed it (a request beyond the slots waits in the server)."""
    cache_ram_mib: int = Field(default=4096, ge=0)
    """Host-memory prompt cache of the llama.cpp server, in MiB (``llama_cpp`` only; 0: off).
    It keeps the evaluated prompts of earlier requests, so a PA call after a simulator call on the
    same slot re-reads only what differs from the PA's last prompt."""
    slot_prompt_similarity: dict[str, float] = Field(default_factory=dict)
    """Model alias -> llama.cpp's ``slot_prompt_similarity`` for the server of that model
    (``llama_cpp`` only; a model not named keeps llama.cpp's 0.1). A request whose common prefix
    with what a slot holds covers more than this share of the request, and at least half of the
    slot, continues in the slot without looking at the host-memory prompt cache; any other
    request saves the slot's state to that cache and loads the cached state that fits it best.
    1.0 makes every request go through the cache (no prefix covers more than all of a request):
    a server whose roles switch between prompts that share a long opening (the simulator's turn,
    rating and diary prompts all open with the persona card) then gets back each conversation's
    own tail instead of keeping only the shared opening (issue 12, docs/prompt-reuse.md)."""
    prefix_cache_dir: str | None = "models/kv-cache"
    """Folder for the saved KV state of the PA's fixed prefix (instructions plus tool schemas),
    keyed by model, chat template, tools, instructions, window and slot count (``llama_cpp`` only;
    llama.cpp refuses a state saved with another slot count). A new server
    restores it into every slot instead of re-reading the prefix; a changed key re-reads and
    saves anew. None: off."""
    flash_attn: Literal["auto", "on", "off"] = "auto"
    """llama.cpp flash attention (``llama_cpp`` only)."""
    n_batch: int = Field(default=2048, ge=32)
    """Logical batch size for prompt reading (``llama_cpp`` only)."""
    n_ubatch: int = Field(default=512, ge=32)
    """Physical batch size for prompt reading (``llama_cpp`` only)."""
    chat_format: str | None = None
    """llama-cpp-python chat format (``llama_cpp_python`` only); None uses the GGUF's own chat
    template. Measured with Qwen2.5-Coder-0.5B on llama-cpp-python 0.3.36: with the GGUF template a
    forced tool choice comes back as a structured call (grammar from the tool's schema) and
    ``auto`` calls arrive as ``<tool_call>`` JSON text, which the client recovers;
    ``chatml-function-calling`` also forces calls but with ``auto`` returns the bare text
    ``functions.<name>:`` without arguments. The llama.cpp server always uses the GGUF's template
    (jinja)."""
    dedicated_servers: list[Role] = Field(default_factory=list)
    """Roles served by a server process of their own; the other roles share one more. Needed
    only by ``llama_cpp_python``, which keeps just its last prompt's evaluated prefix (so a role
    alone on a server keeps its long stable prefix); the llama.cpp server's prompt cache makes
    one process enough."""
    startup_timeout_s: float = Field(default=180.0, gt=0)
    """Seconds to wait for the server to answer ``/v1/models``."""
    extra_args: list[str] = Field(default_factory=list)
    """Further server flags, appended as given (``python -m llama_cpp.server`` flags, or the
    launcher's flags of :mod:`mempa_tui.llm._llama_server`)."""

    @field_validator("slot_prompt_similarity")
    @classmethod
    def _similarity_range(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {alias: share for alias, share in value.items() if not 0.0 <= share <= 1.0}
        if bad:
            raise ValueError(f"options.embedded.slot_prompt_similarity: each value is a share from 0 to 1, got {bad}")
        return value


class ProfileOptions(BaseModel):
    """Profile-wide switches."""

    model_config = ConfigDict(extra="forbid")

    llm_message_checker: bool = False
    """Run the LLM checker on simulator messages (costs one checker call per user turn)."""
    pa_max_model_calls: int = Field(default=40, ge=2, le=200)
    """Model calls the PA may make in one user turn (paper Section 4: up to 40). The last one is
    made a reply (or the required interaction call when it is still missing), so a turn that
    reaches the cap still answers the user; the turn is marked capped. A profile for a small model
    on a CPU may set fewer; results tables then say so (the paper's protocol allows 40)."""
    pa_repeated_call: RepeatedCallPolicy = "run"
    """What a PA tool call does when its name and arguments (key order aside) equal an earlier
    call of the same user turn. ``run`` (default, the paper's protocol: Section 4 lets the PA
    make up to 40 calls a turn) dispatches it again; ``wrap_up`` does not dispatch it (its result
    says the earlier result stands) and makes the turn's further calls forced ones, as at the
    cap: the missing interaction call first, then the reply. Repeats are counted either way and
    shown as a run problem; results tables name the option when it is not ``run``."""
    simulator_output: Literal["tags", "json"] = "tags"
    """How the simulator writes a turn: ``tags`` (<message> and private blocks) or ``json`` (the
    same blocks as one JSON object under a schema, which small local models keep to better)."""
    simulator_rewrite_temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature of the simulator's rewrites: the attempts after a message failed a
    check (a leak, a manner request, a repeated or stalled message). None (default) keeps the
    simulator's own temperature for them (the paper runs the simulator at temperature 0, Section
    4). At temperature 0 a small model given the same prompt with a short note writes the same
    rejected message again: the packaged 1.5B model did so four times in a row, or looped one
    sentence to its cap, and two quick-start sessions ended invalid (issue 12). The first attempt
    of every turn always samples at the simulator's own temperature."""
    ollama_url: str = DEFAULT_OLLAMA_URL
    """Ollama server URL; ``OLLAMA_HOST`` in the environment overrides it."""
    embedded: EmbeddedOptions = Field(default_factory=EmbeddedOptions)
    """Embedded server settings (used by runtime ``embedded`` only)."""


class ModelProfile(BaseModel):
    """A named set of model specs, one per role, with a default the roles fall back to."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    """Profile name (the YAML file's stem by convention)."""
    description: str = ""
    """One or two sentences for the launcher."""
    runtime: Runtime
    """How the models are served."""
    default: ModelSpec
    """Spec for every role not listed in ``roles``."""
    roles: dict[Role, ModelSpec] = Field(default_factory=dict)
    """Per-role specs (already merged over ``default`` when loaded from YAML)."""
    options: ProfileOptions = Field(default_factory=ProfileOptions)
    """Profile-wide switches."""

    @model_validator(mode="after")
    def _fill_ollama_bases(self) -> ModelProfile:
        url = normalise_ollama_url(self.options.ollama_url)
        self.options.ollama_url = url

        def fill(spec: ModelSpec) -> ModelSpec:
            if spec.api_base is None and spec.resolved_wire(self.runtime) == "ollama":
                return spec.model_copy(update={"api_base": url})
            return spec

        self.default = fill(self.default)
        self.roles = {role: fill(spec) for role, spec in self.roles.items()}
        return self

    def spec_for(self, role: Role) -> ModelSpec:
        """The spec serving ``role``: its own entry, else ``default``."""
        return self.roles.get(role, self.default)

    def all_specs(self) -> list[ModelSpec]:
        """``default`` followed by every role spec (duplicates kept)."""
        return [self.default, *self.roles.values()]

    def with_api_base(
        self, api_base: str, *, per_role: dict[Role, str] | None = None, concurrency_group: str | None = None
    ) -> ModelProfile:
        """A copy with every spec pointed at ``api_base`` (the embedded server fills this in).

        Args:
            api_base: base URL for every role.
            per_role: roles served elsewhere -> their base URL (a role without its own entry gets
                one copied from ``default``).
            concurrency_group: set on every spec so all roles share one concurrency limit.
        """
        per_role = per_role or {}
        extra = {"concurrency_group": concurrency_group} if concurrency_group else {}
        roles = dict(self.roles)
        for role in per_role:
            roles.setdefault(role, self.default)
        return self.model_copy(
            update={
                "default": self.default.model_copy(update={"api_base": api_base, **extra}),
                "roles": {
                    r: s.model_copy(update={"api_base": per_role.get(r, api_base), **extra})
                    for r, s in roles.items()
                },
            }
        )


def normalise_ollama_url(value: str) -> str:
    """Turn an ``OLLAMA_HOST``-style value into a URL.

    Args:
        value: ``host``, ``host:port``, ``0.0.0.0:11434`` or a full ``http(s)://`` URL.

    Returns:
        ``scheme://host:port`` without a trailing slash; ``0.0.0.0`` (a listen address) becomes
        ``127.0.0.1``; the port defaults to 11434.
    """
    url = value.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    if ":" not in host.rsplit("]", 1)[-1]:
        host += ":11434"
    host = host.replace("0.0.0.0", "127.0.0.1")
    return f"{scheme}://{host}" + (f"/{path}" if path else "")


def _merge_roles(raw: dict[str, Any]) -> dict[str, Any]:
    """Merge each role entry over ``default`` so partial role entries validate."""
    default = raw.get("default")
    roles = raw.get("roles")
    if not isinstance(default, dict) or not isinstance(roles, dict):
        return raw
    merged: dict[str, Any] = {}
    for role, entry in roles.items():
        merged[role] = {**default, **entry} if isinstance(entry, dict) else entry
    return {**raw, "roles": merged}


def _problems(error: ValidationError) -> list[str]:
    out = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(top level)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
            if item["loc"] and item["loc"][-1] in {"api_key", "key"}:
                message += "; never put a key in a profile, name its environment variable in api_key_env"
        out.append(f"{where}: {message}")
    return out


def profile_path(name_or_path: str | Path, models_dir: str | Path = "models") -> Path:
    """Find a profile file.

    Args:
        name_or_path: a profile name (``ollama``) or a path to a YAML file.
        models_dir: folder of ``<name>.yaml`` files; when it is relative and holds no such file,
            the repository's own ``models/`` is tried next.

    Returns:
        The file's path.

    Raises:
        ProfileError: no such file (the message lists the profiles that exist).
    """
    candidate = Path(name_or_path)
    if candidate.suffix in {".yaml", ".yml"} or candidate.exists():
        if candidate.is_file():
            return candidate
        raise ProfileError(str(candidate), ["file not found"])
    directory = Path(models_dir)
    path = directory / f"{name_or_path}.yaml"
    if path.is_file():
        return path
    shipped = _REPO_MODELS_DIR / f"{name_or_path}.yaml"
    if not directory.is_absolute() and shipped.is_file():
        return shipped  # run from another folder: the repository's own profiles
    if not directory.is_dir() and not directory.is_absolute() and _REPO_MODELS_DIR.is_dir():
        directory = _REPO_MODELS_DIR
    known = sorted(p.stem for p in directory.glob("*.yaml")) if directory.is_dir() else []
    raise ProfileError(str(name_or_path), [f"no profile file {path} (profiles: {', '.join(known) or 'none'})"])


def load_profile(name_or_path: str | Path, models_dir: str | Path = "models") -> ModelProfile:
    """Load and validate a model profile.

    ``OLLAMA_HOST`` in the environment overrides ``options.ollama_url`` (and so the ``api_base``
    of every Ollama spec that does not set its own).

    Args:
        name_or_path: profile name (``embedded``, ``ollama``) or a YAML path.
        models_dir: folder holding ``<name>.yaml`` files.

    Returns:
        The validated profile, role entries merged over ``default``.

    Raises:
        ProfileError: missing file, bad YAML, or invalid fields; every problem names its field.
    """
    path = profile_path(name_or_path, models_dir)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError(str(path), [f"cannot read YAML: {exc}"]) from None
    if not isinstance(raw, dict):
        raise ProfileError(str(path), ["top level must be a mapping with name, runtime, default"])
    raw = _merge_roles(raw)
    host = os.environ.get("OLLAMA_HOST")
    if host:
        options = raw.get("options")
        raw["options"] = {**(options if isinstance(options, dict) else {}), "ollama_url": host}
    try:
        return ModelProfile.model_validate(raw)
    except ValidationError as exc:
        raise ProfileError(str(path), _problems(exc)) from None
