"""The quick start offers the PA only the tool domains its scripts use (issue 12, item 4).

The slice and the whole timeline offer every world tool; a ``--quick`` run offers the domains its
sessions, change event and probes touch (:func:`quick_tool_domains`), in every step and probe,
stored in the run's config (``offered_tool_domains``), printed in its header and results.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_runner_support import protocol_responder, quick_worlds, runner_config

from mempa_tui.llm import LLMClient, ScriptedModelServer
from mempa_tui.llm.embedded import prefix_key
from mempa_tui.llm.profile import load_profile
from mempa_tui.runner import DonorError, RunConfig, RunEvent, Runner
from mempa_tui.runner._settings import donor_mismatches, settings_lines
from mempa_tui.runner.config import config_diff
from mempa_tui.runner.setup import build_run_config, pa_prefix, quick_tool_domains
from mempa_tui.scripts.loader import load_user
from mempa_tui.store import RunRecord, RunStatus, RunStore
from mempa_tui.tools import default_registry

SHIPPED = Path(__file__).resolve().parent.parent / "worlds"




def test_quick_domains_come_from_sessions_event_and_probes(tmp_path: Path) -> None:
    bundle = load_user(quick_worlds(tmp_path), "R")
    # email (R-s1/R-s2 records and tool steps), contacts (R-s2's records), calendar (the change
    # event's replayed search and the probes' records), documents (only a final probe's record)
    assert quick_tool_domains(bundle) == ("email", "calendar", "documents", "contacts")
    assert "R-final-work-verbosity" in bundle.quick_start().probes


def test_every_shipped_quick_start_offers_fewer_tools_and_the_slice_all(tmp_path: Path) -> None:
    profile = load_profile("embedded", SHIPPED.parent / "models")
    for user in ("A", "B", "C", "D"):
        quick = build_run_config(user=user, memory="file", profile=profile, worlds=SHIPPED, quick=True)
        domains = quick.offered_tool_domains
        assert domains is not None and domains == quick_tool_domains(load_user(SHIPPED, user)), user
        assert 0 < len(default_registry().restricted(domains)) < len(default_registry()), user
        assert quick.offered_tools_text.startswith(f"tools offered: {len(default_registry().restricted(domains))} of 83")
        assert build_run_config(user=user, memory="file", profile=profile, worlds=SHIPPED,
                                slice=True).offered_tool_domains is None
        assert build_run_config(user=user, memory="file", profile=profile,
                                worlds=SHIPPED).offered_tool_domains is None


def test_runs_stored_before_the_field_keep_their_hash_and_resume() -> None:
    plain = RunConfig(user="A", profile="embedded")
    assert "offered_tool_domains" not in plain.fingerprint()
    stored = plain.model_dump(mode="json")
    stored.pop("offered_tool_domains")
    import json

    assert config_diff(json.dumps(stored), plain) == []
    narrowed = plain.model_copy(update={"quick": True, "offered_tool_domains": ("email", "calendar")})
    assert narrowed.config_hash() != plain.model_copy(update={"quick": True}).config_hash()
    assert any(line.startswith("offered_tool_domains: None -> ")
               for line in config_diff(json.dumps(stored | {"quick": True}), narrowed))


def test_a_restricted_registry_holds_only_its_domains_and_refuses_unknown_ones() -> None:
    full = default_registry()
    assert full.restricted(None) is full
    some = full.restricted(["calendar", "email"])
    assert some.domains() == ("email", "calendar") and {t.domain for t in some} == {"email", "calendar"}
    assert "mcp_state_hotel_search" not in some and len(full) == 83
    with pytest.raises(ValueError, match="unknown tool domain.*emails"):
        full.restricted(["emails"])


def test_the_quick_starts_prefix_is_cached_under_its_own_key() -> None:
    everything, narrowed = pa_prefix(), pa_prefix(("email", "calendar"))
    assert len(everything.tools) == 83 and 0 < len(narrowed.tools) < 83
    assert all(t.name.startswith(("mcp_state_email", "mcp_state_calendar")) for t in narrowed.tools)
    assert everything.messages == narrowed.messages

    def key(prefix: object) -> str:
        return prefix_key(weights_sha256="w", chat_template="t", messages=[{"role": "system", "content": "i"}],
                          tools=[t.model_dump() for t in prefix.tools], n_ctx=32768)  # type: ignore[attr-defined]

    assert key(everything) != key(narrowed)


@pytest.fixture
async def recording() -> AsyncIterator[tuple[LLMClient, list[tuple[str, list[str]]]]]:
    """A scripted model playing every role that records each PA request's context message (with its date) and tools."""
    seen: list[tuple[str, list[str]]] = []

    def responder(request):  # type: ignore[no-untyped-def]
        if request.model == "scripted-pa":
            context = request.messages[1].content if len(request.messages) > 1 else ""
            seen.append((context, request.tool_names))  # the date line sits after the memory section
        return protocol_responder(request)

    async with ScriptedModelServer(responder) as server:
        yield LLMClient(server.profile(context_window=131072)), seen


async def test_every_step_and_probe_of_a_quick_run_and_its_reference_run_offers_the_same_tools(
    tmp_path: Path, recording: tuple[LLMClient, list[tuple[str, list[str]]]]
) -> None:
    client, seen = recording
    worlds = quick_worlds(tmp_path)
    offered = {t.full_name for t in default_registry().restricted(("email", "calendar", "documents", "contacts"))}
    events: list[object] = []
    async with RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
        config = runner_config(worlds_dir=worlds, quick=True, repeats=1)
        assert config.offered_tool_domains is None  # filled when the run starts, as for any caller
        outcome = await Runner(config, store, client, default_registry(), events.append,
                               memory_root=tmp_path / "lm", resamples=100).run()
        assert outcome.status is RunStatus.COMPLETED
        stored = await store.get_run(outcome.run_id)
        assert stored is not None
        assert RunConfig.model_validate_json(stored.config_json).offered_tool_domains == (
            "email", "calendar", "documents", "contacts")
        header = next(e.message for e in events if isinstance(e, RunEvent) and e.kind == "run_started")
        assert (f"tools offered: {len(offered)} of 83 (quick start: the domains its sessions and probes use: "
                "email, calendar, documents, contacts)") in header
        donor_calls = len(seen)
        reference = await Runner(runner_config(worlds_dir=worlds, quick=True, repeats=1, memory="none"), store,
                                 client, default_registry(), memory_root=tmp_path / "lm", resamples=100).run()
        assert reference.status is RunStatus.COMPLETED
        assert len(seen) > donor_calls
        dates = {date for date, _tools in seen}
        assert any("2026-06-20" in d for d in dates) and any("2026-03-02" in d for d in dates)  # probes, steps
        for date, tools in seen:
            world = {name for name in tools if not name.startswith("IX_")}
            assert world == offered, date
        # a donor that offered other tools (e.g. stored before this change) is refused
        other = stored.model_copy(update={
            "id": "R-file-old", "config_json": RunConfig.model_validate_json(stored.config_json).model_copy(
                update={"offered_tool_domains": None}).model_dump_json()})
        await store.create_run(other)
        await store.update_run(other.id, status=RunStatus.COMPLETED)
        with pytest.raises(DonorError, match="offered the PA other tools"):
            await Runner(runner_config(worlds_dir=worlds, quick=True, repeats=1, memory="oracle",
                                       donor_run="R-file-old"), store, client, default_registry(),
                         memory_root=tmp_path / "lm", resamples=100).run()
        records = [r for r in [await store.get_run(outcome.run_id), await store.get_run(reference.run_id)] if r]
        lines = settings_lines(records)
        assert [line for line in lines if "tools offered" in line] == [
            f"{r.id}: tools offered: {len(offered)} of 83 (quick start: the domains its sessions and probes use: "
            "email, calendar, documents, contacts)" for r in records]
        assert donor_mismatches(records) == []


def test_results_warn_when_a_reference_run_offered_other_tools_than_its_donor() -> None:
    def record(run_id: str, memory: str, **fields: object) -> RunRecord:
        config = RunConfig(user="A", profile="embedded", memory=memory, quick=True, **fields)  # type: ignore[arg-type]
        return RunRecord(id=run_id, user="A", profile="embedded", memory=memory, seed=0, repeats=1,
                         config_json=config.model_dump_json(), config_hash=config.config_hash())

    donor = record("A-file", "file", offered_tool_domains=("email",))
    plain = record("A-plain", "file")
    paired = record("A-none", "none", donor_run="A-file", offered_tool_domains=("email",))
    mixed = record("A-oracle", "oracle", donor_run="A-file")
    assert donor_mismatches([donor, paired]) == []
    assert any("A-oracle offered the PA other tools than its donor A-file" in line
               for line in donor_mismatches([donor, mixed]))
    assert [line for line in settings_lines([plain, donor]) if "tools offered" in line] == [
        "A-file: tools offered: 6 of 83 (quick start: the domains its sessions and probes use: email)"]


def test_the_quick_starts_file_memory_consolidates_at_each_sessions_end(tmp_path: Path) -> None:
    # Issue 12: three steps never reach the threshold and probes get no raw turns (paper 3.5).
    profile = load_profile("embedded", SHIPPED.parent / "models")
    quick = build_run_config(user="A", memory="file", profile=profile, worlds=SHIPPED, quick=True)
    assert quick.memory_options == {"consolidate_at_session_end": True}
    kept = build_run_config(user="A", memory="file", profile=profile, worlds=SHIPPED, quick=True,
                            memory_options={"consolidate_at_session_end": False})
    assert kept.memory_options == {"consolidate_at_session_end": False}  # the user's choice stands
    for other in (build_run_config(user="A", memory="file", profile=profile, worlds=SHIPPED, slice=True),
                  build_run_config(user="A", memory="none", profile=profile, worlds=SHIPPED, quick=True)):
        assert "consolidate_at_session_end" not in other.memory_options


async def test_a_quick_runs_probes_are_handed_what_its_sessions_consolidated(tmp_path: Path) -> None:
    worlds = quick_worlds(tmp_path)
    probe_systems: list[str] = []

    def responder(request):  # type: ignore[no-untyped-def]
        if request.model == "scripted-memory":
            return json.dumps({"history_entry": "Talked about invoices.",
                               "memory": "# About the user\n- Wants short answers at work (noted by consolidation)."})
        if request.model == "scripted-pa" and "2026-06-20" in " ".join(m.content for m in request.messages[:2]):
            probe_systems.append(" ".join(m.content for m in request.messages[:2]))
        return protocol_responder(request)

    async with ScriptedModelServer(responder) as server, RunStore(tmp_path / "saves" / "mempa.sqlite") as store:
        client = LLMClient(server.profile(context_window=131072))
        config = runner_config(worlds_dir=worlds, quick=True, repeats=1,
                               memory_options={"consolidate_at_tokens": 50_000, "consolidate_to_tokens": 20_000,
                                               "consolidate_at_session_end": True})
        outcome = await Runner(config, store, client, default_registry(), memory_root=tmp_path / "lm",
                               resamples=100).run()
        assert outcome.status is RunStatus.COMPLETED
        memory_calls = [r for r in server.requests if r.model == "scripted-memory"]
        assert len(memory_calls) == 3  # R-s1, R-s2 and the change event R-ev1: one round each
        assert probe_systems and all("noted by consolidation" in s for s in probe_systems)
        stored = await store.get_run(outcome.run_id)
        assert stored is not None
        budget = RunConfig.model_validate_json(stored.config_json).file_memory_budget
        assert budget["consolidate_at_session_end"] == 1
        assert "and at the end of every session" in " ".join(settings_lines([stored]))
