"""Which generator a job gets from the request and the settings."""

import pytest

from agent.llm.config import LlmConfigError, resolve_llm
from kernelgen.settings import Settings


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


ENDPOINT = {"llm_base_url": "http://127.0.0.1:8001/v1", "llm_model": "Qwen2.5-Coder-32B-Instruct"}


def test_auto_takes_the_llm_only_when_one_is_configured() -> None:
    assert resolve_llm(None, _settings()) is None
    config = resolve_llm("auto", _settings(**ENDPOINT, llm_timeout_s=30, llm_max_repairs=1))
    assert config is not None and config.label() == "openai:Qwen2.5-Coder-32B-Instruct"
    assert config.timeout_s == 30 and config.max_repairs == 1


def test_offline_wins_over_a_configured_endpoint() -> None:
    assert resolve_llm("offline", _settings(**ENDPOINT)) is None
    assert resolve_llm(None, _settings(**ENDPOINT, llm="offline")) is None


def test_asking_for_an_llm_that_is_not_configured_says_what_to_set() -> None:
    with pytest.raises(LlmConfigError, match="KERNELGEN_LLM_BASE_URL .* KERNELGEN_LLM_MODEL"):
        resolve_llm("openai", _settings(llm_base_url="http://127.0.0.1:8001/v1"))


def test_an_unknown_generator_is_refused() -> None:
    with pytest.raises(LlmConfigError, match="unknown generator 'gpt-9'"):
        resolve_llm("gpt-9", _settings())
