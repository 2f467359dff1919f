"""Run configuration, its hash, and the readable run id (SPEC section 4.8).

A run is one user x model profile x memory condition x seed. Its id names exactly that
(``A-file-embedded-s0``), so rerunning the same command finds the same run and resumes it. The
config hash covers everything else that changes results (repeats, memory options, retry counts,
the donor, the profile's models and sampling, the user's world files); when it differs from the
stored one, the runner refuses to resume and names the fields (:func:`config_diff`).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mempa_tui.llm.types import Role

if TYPE_CHECKING:
    from mempa_tui.llm.profile import ModelProfile

__all__ = [
    "PROBE_ONLY_CONDITIONS",
    "ConfigMismatchError",
    "OptionValue",
    "RunConfig",
    "config_diff",
    "offered_tools_text",
    "profile_fingerprint",
    "worlds_digest",
]

PROBE_ONLY_CONDITIONS: tuple[str, ...] = ("none", "oracle")
"""Conditions that skip accumulation and probe from a donor run's checkpoints (paper Section 4,
'Reference Condition Runs')."""

OptionValue = int | float | str | bool
"""A memory option's value (thresholds, switches)."""

_UNHASHED = frozenset({"worlds_dir", "probe_concurrency", "file_memory_budget"})
"""Fields that do not change results: where the worlds live, how many probes run at once, and
File memory's measured thresholds (they follow from the profile's window, which is hashed)."""

_ID_SAFE = re.compile(r"[^A-Za-z0-9_.]+")


class ConfigMismatchError(Exception):
    """The stored run was made with a different configuration; resuming would mix results.

    Attributes:
        run_id: the stored run.
        differences: one line per differing field, ``field: stored -> current``.
    """

    def __init__(self, run_id: str, differences: list[str]) -> None:
        self.run_id = run_id
        self.differences = differences
        listed = "; ".join(differences) or "(the hash differs but no field does: stored config unreadable)"
        super().__init__(
            f"run {run_id} was started with a different configuration ({listed}); refusing to "
            f"resume. Rerun with the original settings to continue it, or add --fresh to move the "
            f"stored run aside (as {run_id}~N) and start over."
        )


class RunConfig(BaseModel):
    """Everything that defines a run (SPEC section 4.8; paper Sections 3.5 and 4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str = Field(pattern=r"^[A-Z]$")
    """User label, e.g. ``A`` (``worlds/users/A``)."""
    profile: str = Field(min_length=1)
    """Model profile name (``models/<name>.yaml``), e.g. ``embedded`` or ``ollama``."""
    memory: str = "file"
    """Memory condition: ``none``, ``oracle``, ``file`` or any registered condition."""
    seed: int = Field(default=0, ge=0)
    """Run seed (part of the run id; not negative, so ids stay readable)."""
    repeats: int = Field(default=3, ge=1, le=20)
    """Repeats per probe (paper Section 3.5: three)."""
    worlds_dir: Path = Path("worlds")
    """Folder holding ``users/<label>/`` (not hashed: moving it changes nothing)."""
    memory_options: dict[str, OptionValue] = Field(default_factory=dict)
    """Condition-specific options passed to ``make_memory`` (File memory:
    ``consolidate_at_tokens``, ``consolidate_to_tokens``)."""
    donor_run: str | None = None
    """Run whose checkpoints No Memory and Oracle probe from; None: the latest completed
    accumulation run of the same user and profile (resolved when the run starts)."""
    step_attempts: int = Field(default=2, ge=1, le=10)
    """Plays of a timeline step that ends invalid or failed before it is recorded as discarded
    (paper Appendix C.3: a failed step changes nothing and may be retried)."""
    probe_attempts: int = Field(default=3, ge=1, le=10)
    """Runs of a probe repeat that ends floored, invalid or failed (paper Appendix F.2: a floored
    probe is run again, at least three runs in all)."""
    probe_concurrency: int = Field(default=2, ge=1, le=64)
    """Probe repeats run at once (model concurrency is limited by the client; not hashed)."""
    profile_models: dict[str, str] = Field(default_factory=dict)
    """Role -> the model and sampling that serve it (from :func:`profile_fingerprint`)."""
    worlds_digest: str = ""
    """sha256 over the user's world files (from :func:`worlds_digest`); empty until resolved."""
    memory_version: str = ""
    """A plugin condition's ``<import path> <version>`` (:func:`~mempa_tui.memory.plugin_identity`),
    shown in results; empty for built-in conditions (and then not hashed)."""
    file_memory_budget: dict[str, int] = Field(default_factory=dict)
    """File memory runs: the consolidation thresholds in use and what they were scaled by (from
    :func:`mempa_tui.runner._budget.file_memory_budget`; filled when the run starts, shown in its
    header and results tables; empty for other conditions and older runs)."""
    slice: bool = False
    """Play only the timeline's quick-start ``slice`` (see :meth:`UserBundle.sliced`); part of the
    run id as a ``-slice`` suffix."""
    quick: bool = False
    """Play only the timeline's ``quick`` list and the probes of the cells it tests (see
    :meth:`UserBundle.quick_start`); part of the run id as a ``-quick`` suffix."""
    offered_tool_domains: tuple[str, ...] | None = None
    """The tool domains offered to the PA in every step and probe, in Table 7 order; None: all
    26 domains (83 tools). Only a quick start offers fewer (issue 12: the domains its sessions,
    change event and probes use, :func:`~mempa_tui.runner.setup.quick_tool_domains`); the slice and
    the whole timeline always offer all. Hashed; left out of the hash when None, so runs stored
    before the field existed keep their hash."""

    @field_validator("memory")
    @classmethod
    def _known_condition(cls, value: str) -> str:
        from mempa_tui.memory import MEMORY_BUILDERS, canonical_plugin_name, is_plugin_spec

        if value not in MEMORY_BUILDERS and not is_plugin_spec(value):  # a plugin (issue 17) is checked on build
            raise ValueError(f"unknown memory condition {value!r}; valid: {', '.join(MEMORY_BUILDERS)}")
        # one plugin, one spelling: `dir/mod.py:Class` importable as `dir.mod:Class` makes the same run id
        return value if value in MEMORY_BUILDERS else canonical_plugin_name(value)

    @property
    def run_id(self) -> str:
        """Readable id ``<user>-<memory>-<profile>-s<seed>[-slice]``, e.g. ``A-file-embedded-s0``."""
        profile = _ID_SAFE.sub("_", Path(self.profile).stem) or "profile"
        memory = _ID_SAFE.sub("_", self.memory)  # a plugin's pkg.module:Class or mcp:<profile>
        return (f"{self.user}-{memory}-{profile}-s{self.seed}" + ("-slice" if self.slice else "")
                + ("-quick" if self.quick else ""))

    @property
    def timeline_kind(self) -> str:
        """What the run plays: ``whole timeline``, ``quick-start slice`` or ``quick start``."""
        return "quick start" if self.quick else "quick-start slice" if self.slice else "whole timeline"

    @property
    def offered_tools_text(self) -> str:
        """What the PA is offered, for headers: ``all 83 tools`` or the quick start's domains."""
        return offered_tools_text(self.offered_tool_domains)

    @property
    def accumulates(self) -> bool:
        """True when the condition plays the timeline (everything but No Memory and Oracle)."""
        return self.memory not in PROBE_ONLY_CONDITIONS

    def fingerprint(self) -> dict[str, object]:
        """The result-relevant fields as a JSON-ready mapping (what :meth:`config_hash` hashes)."""
        data = self.model_dump(mode="json")
        if not data.get("slice"):
            data.pop("slice", None)  # runs stored before the field existed played whole timelines
        if not data.get("memory_version"):
            data.pop("memory_version", None)  # built-in conditions: hashes as before the field existed
        if not data.get("quick"):
            data.pop("quick", None)
        if data.get("offered_tool_domains") is None:
            data.pop("offered_tool_domains", None)  # every tool: hashes as before the field existed
        return {k: v for k, v in sorted(data.items()) if k not in _UNHASHED}

    def config_hash(self) -> str:
        """sha256 hex over :meth:`fingerprint` (canonical JSON)."""
        text = json.dumps(self.fingerprint(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def with_profile(self, profile: ModelProfile) -> RunConfig:
        """A copy with :attr:`profile_models` filled from a loaded profile."""
        return self.model_copy(update={"profile_models": profile_fingerprint(profile)})


def offered_tools_text(domains: tuple[str, ...] | list[str] | None) -> str:
    """A run's tool offer in words (run header and results tables, issue 12).

    Args:
        domains: a config's ``offered_tool_domains`` (None: every tool).

    Returns:
        ``tools offered: all 83`` or ``tools offered: 21 of 83 (quick start: the domains its
        sessions and probes use: calendar, email, ...)``.
    """
    from mempa_tui.tools import default_registry

    everything = default_registry()
    if domains is None:
        return f"tools offered: all {len(everything)}"
    try:
        count = len(everything.restricted(domains))
    except ValueError as exc:
        return f"tools offered: unreadable domain list ({exc})"
    return (f"tools offered: {count} of {len(everything)} (quick start: the domains its sessions and "
            f"probes use: {', '.join(domains)})")


def profile_fingerprint(profile: ModelProfile) -> dict[str, str]:
    """What in a profile changes results: per role, the model and its sampling.

    Endpoints, timeouts, retries and concurrency are left out (they change how fast, not what).

    Returns:
        Role value -> ``"<model> temperature=.. max_tokens=.. context_window=.. seed=.."`` (and
        `` tool_calling=constrained`` for a spec that calls tools under a grammar), plus
        ``options`` -> the message-checker switch (and the PA's model-call cap per user turn
        when it is not the paper's 40, ``pa_repeated_call`` when it is not ``run``, and
        ``simulator_rewrite_temperature`` when set).
    """
    out: dict[str, str] = {}
    for role in Role:
        spec = profile.spec_for(role)
        out[role.value] = (
            f"{spec.model} temperature={spec.temperature} max_tokens={spec.max_tokens} "
            f"context_window={spec.context_window} seed={spec.seed}"
            + (f" tool_calling={spec.tool_calling}" if spec.tool_calling != "auto" else "")
        )
    out["options"] = f"llm_message_checker={profile.options.llm_message_checker}"
    if profile.options.pa_max_model_calls != 40:  # only when it differs: runs stored before keep their fingerprint
        out["options"] += f" pa_max_model_calls={profile.options.pa_max_model_calls}"
    if profile.options.pa_repeated_call != "run":  # likewise: stored runs keep their fingerprint
        out["options"] += f" pa_repeated_call={profile.options.pa_repeated_call}"
    if profile.options.simulator_rewrite_temperature is not None:  # likewise
        out["options"] += f" simulator_rewrite_temperature={profile.options.simulator_rewrite_temperature}"
    return out


def worlds_digest(user_dir: Path) -> str:
    """sha256 over every file under a user's world folder (relative paths and bytes).

    Args:
        user_dir: ``worlds/users/<label>``.

    Returns:
        Hex digest; editing, adding or removing any file changes it.
    """
    h = hashlib.sha256()
    for path in sorted(p for p in user_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(user_dir).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        h.update(rel.encode("utf-8") + b"\x00")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def config_diff(stored_json: str, current: RunConfig) -> list[str]:
    """The result-relevant fields that differ between a stored config and the current one.

    Args:
        stored_json: the stored :class:`RunConfig` JSON.
        current: the config of this invocation.

    Returns:
        ``field: stored -> current`` lines; nested mappings name the key
        (``profile_models.pa: ...``). Empty when they agree.
    """
    try:
        stored = json.loads(stored_json)
    except json.JSONDecodeError:
        return ["config: the stored configuration is not readable JSON"]
    if not isinstance(stored, dict):
        return ["config: the stored configuration is not a mapping"]
    if not stored.get("slice"):
        stored.pop("slice", None)  # a whole-timeline run, stored with or without the field
    if not stored.get("memory_version"):
        stored.pop("memory_version", None)  # a built-in condition, stored with or without the field
    if not stored.get("quick"):
        stored.pop("quick", None)
    if stored.get("offered_tool_domains") is None:
        stored.pop("offered_tool_domains", None)  # all tools, stored with or without the field
    now = current.fingerprint()
    lines: list[str] = []
    for key in sorted(set(now) | (set(stored) - _UNHASHED)):
        old, new = stored.get(key), now.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            for sub in sorted(set(old) | set(new)):
                if old.get(sub) != new.get(sub):
                    lines.append(f"{key}.{sub}: {old.get(sub)!r} -> {new.get(sub)!r}")
        elif key == "worlds_digest":
            lines.append(f"worlds_digest: the files of user {current.user}'s world changed since the run started")
        else:
            lines.append(f"{key}: {old!r} -> {new!r}")
    return lines
