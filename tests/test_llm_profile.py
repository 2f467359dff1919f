"""Model profiles: the shipped files, role fallback, env overrides and field-naming errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from mempa_tui.llm import ModelProfile, ModelSpec, ProfileError, Role, load_profile
from mempa_tui.llm.profile import normalise_ollama_url

REPO_MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(autouse=True)
def _no_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)


def write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_profiles_load() -> None:
    embedded = load_profile("embedded", REPO_MODELS)
    assert embedded.runtime == "embedded"
    assert embedded.default.context_window == 32768
    assert embedded.default.model.startswith("openai/")
    assert embedded.default.resolved_wire(embedded.runtime) == "llama_cpp"
    ollama = load_profile("ollama", REPO_MODELS)
    assert ollama.spec_for(Role.PA).model == "ollama_chat/qwen2.5:7b-instruct"
    assert ollama.spec_for(Role.SIMULATOR).model == "ollama_chat/qwen2.5:7b-instruct"
    assert ollama.spec_for(Role.PA).api_base == "http://127.0.0.1:11434"
    example = load_profile(REPO_MODELS / "openai-example.yaml")
    assert example.default.api_key_env == "OPENAI_API_KEY"
    assert "sk-" not in (REPO_MODELS / "openai-example.yaml").read_text()


def test_roles_fall_back_and_merge_over_default(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
name: t
runtime: openai_compatible
default: {model: openai/base, api_base: "http://127.0.0.1:9/v1", temperature: 0.3, max_tokens: 100}
roles:
  judge: {temperature: 0.0}
  pa: {model: openai/other}
""",
    )
    profile = load_profile(path)
    assert profile.spec_for(Role.JUDGE).temperature == 0.0
    assert profile.spec_for(Role.JUDGE).max_tokens == 100
    assert profile.spec_for(Role.PA).model == "openai/other"
    assert profile.spec_for(Role.PA).temperature == 0.3
    assert profile.spec_for(Role.MEMORY) == profile.default


def test_ollama_host_overrides_the_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:11500")
    profile = load_profile("ollama", REPO_MODELS)
    assert profile.options.ollama_url == "http://127.0.0.1:11500"
    assert all(spec.api_base == "http://127.0.0.1:11500" for spec in profile.all_specs())


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("localhost", "http://localhost:11434"),
        ("0.0.0.0:11434", "http://127.0.0.1:11434"),
        ("https://ollama.example.org", "https://ollama.example.org:11434"),
        ("http://10.0.0.5:8080/", "http://10.0.0.5:8080"),
    ],
)
def test_normalise_ollama_url(value: str, url: str) -> None:
    assert normalise_ollama_url(value) == url


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        ("name: t\nruntime: ollama\ndefault: {model: ollama_chat/x, temperature: hot}\n", ["default.temperature"]),
        ("name: t\nruntime: ollama\ndefault: {model: ollama_chat/x}\nroles: {pa: {max_tokens: 0}}\n", ["roles.pa.max_tokens"]),
        ("name: t\nruntime: gpu-cloud\ndefault: {model: ollama_chat/x}\n", ["runtime"]),
        ("name: t\nruntime: ollama\ndefault: {model: ollama_chat/x}\nroles: {boss: {}}\n", ["roles.boss"]),
        ("name: t\nruntime: ollama\n", ["default", "Field required"]),
        (
            "name: t\nruntime: litellm\ndefault: {model: openai/x, api_key: sk-123}\n",
            ["default.api_key", "api_key_env"],
        ),
        ("name: t\nruntime: litellm\ndefault: {model: openai/x, api_key_env: sk-123}\n", ["default.api_key_env", "environment variable"]),
        ("- just\n- a list\n", ["top level must be a mapping"]),
        ("name: [unclosed\n", ["cannot read YAML"]),
    ],
)
def test_invalid_profiles_name_the_field(tmp_path: Path, body: str, fragments: list[str]) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    message = str(caught.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message


def test_unknown_profile_lists_the_known_ones(tmp_path: Path) -> None:
    write(tmp_path, "name: a\nruntime: ollama\ndefault: {model: ollama_chat/x}\n", "alpha.yaml")
    with pytest.raises(ProfileError, match="profiles: alpha"):
        load_profile("beta", tmp_path)


def test_with_api_base_points_every_spec() -> None:
    profile = ModelProfile(
        name="t",
        runtime="embedded",
        default=ModelSpec(model="openai/m"),
        roles={Role.JUDGE: ModelSpec(model="openai/m", temperature=0.0)},
    )
    ready = profile.with_api_base("http://127.0.0.1:1234/v1")
    assert {s.api_base for s in ready.all_specs()} == {"http://127.0.0.1:1234/v1"}
    assert profile.default.api_base is None


def test_shipped_profiles_are_found_from_another_folder_with_its_own_models_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "models" / "weights").mkdir(parents=True)  # what an embedded run leaves behind
    monkeypatch.chdir(tmp_path)
    assert load_profile("ollama").name == "ollama"
