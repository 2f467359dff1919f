"""Ollama checks through the official client against the scripted server's Ollama endpoints."""

from __future__ import annotations

import pytest

from mempa_tui.llm import Role, ScriptedModelServer
from mempa_tui.llm.ollama_check import (
    OllamaError,
    check_ollama,
    ollama_models,
    pull_model,
)


def never(request: object) -> str:
    raise AssertionError("no chat expected")


async def test_check_passes_when_models_are_pulled() -> None:
    async with ScriptedModelServer(never, models=["qwen2.5:7b-instruct", "llama3:latest"]) as server:
        check = await check_ollama(server.url, ["qwen2.5:7b-instruct", "llama3"])
    assert check.ok and check.reachable and check.missing == []
    assert check.version == "0.9.0-scripted"
    assert "has every model" in check.message


async def test_missing_model_names_the_pull_command() -> None:
    async with ScriptedModelServer(never, models=["llama3:latest"]) as server:
        check = await check_ollama(server.url, ["qwen2.5:7b-instruct"])
    assert not check.ok and check.missing == ["qwen2.5:7b-instruct"]
    assert "`ollama pull qwen2.5:7b-instruct`" in check.message


async def test_no_server_says_how_to_start_one() -> None:
    with ScriptedModelServer(never) as server:
        url = server.url
    check = await check_ollama(url, ["qwen2.5:7b-instruct"])
    assert not check.reachable and not check.ok
    assert f"no Ollama server at {url}: start it with `ollama serve`" in check.message


async def test_pull_model_reports_progress_and_adds_the_model() -> None:
    seen: list[str] = []
    async with ScriptedModelServer(never, models=[]) as server:
        await pull_model(server.url, "qwen2.5:7b-instruct", on_progress=lambda status, done, total: seen.append(status))
        check = await check_ollama(server.url, ["qwen2.5:7b-instruct"])
    assert seen == ["success"] and check.ok


async def test_pull_without_server_is_a_clear_error() -> None:
    with ScriptedModelServer(never) as server:
        url = server.url
    with pytest.raises(OllamaError, match="ollama serve"):
        await pull_model(url, "qwen2.5:7b-instruct")


def test_ollama_models_of_a_profile() -> None:
    with ScriptedModelServer(never) as server:
        profile = server.profile({Role.PA: "ollama_chat/a:1", Role.JUDGE: "openai/b", Role.SIMULATOR: "ollama_chat/a:1"})
    assert ollama_models(profile) == ["scripted-default", "a:1"]
