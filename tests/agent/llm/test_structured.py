"""Structured answers and code through the real openai client against a scripted HTTP endpoint."""

from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from agent.llm.client import LlmCall, LlmClient, LlmUnavailable
from agent.llm.config import LlmConfig
from agent.llm.structured import LlmReplyError, ask_files, ask_json
from tests.scripted_llm import MODEL, Reply, ScriptedLLM, scripted_llm

MESSAGES = [{"role": "user", "content": "answer"}]
KERNEL = "def relu(x):\n    return x\n"


class Answer(BaseModel):
    name: str
    count: int


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with scripted_llm() as server:
        yield server


def _client(url: str, **extra: object) -> tuple[LlmClient, list[LlmCall]]:
    records: list[LlmCall] = []
    config = LlmConfig.model_validate({"base_url": url, "model": MODEL, "max_retries": 0, "timeout_s": 30} | extra)
    return LlmClient(config, records.append), records


def test_a_valid_answer_is_taken_with_a_json_schema_and_counted(llm: ScriptedLLM) -> None:
    llm.script("spec", '{"name": "relu", "count": 2}')
    client, records = _client(llm.url)
    assert ask_json(client, "spec", MESSAGES, Answer) == Answer(name="relu", count=2)
    body = llm.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["name", "count"]
    assert body["model"] == MODEL and body["temperature"] == 0.2 and body["max_tokens"] == 8192
    assert records[0].status == "ok" and records[0].prompt_tokens > 0 and records[0].latency_ms > 0


def test_an_answer_that_breaks_the_schema_is_reasked_with_the_reason(llm: ScriptedLLM) -> None:
    llm.script("spec", '{"name": "relu", "count": "two"}', '{"name": "relu", "count": 2}')
    client, records = _client(llm.url)
    assert ask_json(client, "spec", MESSAGES, Answer).count == 2
    reask = llm.requests[1].body["messages"]
    assert reask[-2] == {"role": "assistant", "content": '{"name": "relu", "count": "two"}'}
    assert "count: Input should be a valid integer" in reask[-1]["content"]
    # The first call is recorded again (same uid) once it is found invalid: storage keeps one row per call.
    assert list({r.uid: r.status for r in records}.values()) == ["invalid", "ok"]


def test_reasks_are_bounded(llm: ScriptedLLM) -> None:
    llm.script("spec", "no", "still no", "never")
    client, _ = _client(llm.url, max_reasks=1)
    with pytest.raises(LlmReplyError, match="after 2 tries: the answer holds no JSON object"):
        ask_json(client, "spec", MESSAGES, Answer)
    assert len(llm.requests) == 2


def test_an_endpoint_without_schema_or_json_mode_gets_plain_text(llm: ScriptedLLM) -> None:
    llm.refuse_formats = {"json_schema", "json_object"}
    llm.script("spec", 'Here: ```json\n{"name": "relu", "count": 3}\n```')
    client, records = _client(llm.url)
    assert ask_json(client, "spec", MESSAGES, Answer).count == 3
    assert [r.response_format for r in llm.requests] == ["json_schema", "json_object", "none"]
    assert client.structured_mode == "none"
    assert [r.status for r in records] == ["error", "error", "ok"]


def test_a_forced_format_that_is_refused_is_a_clear_error(llm: ScriptedLLM) -> None:
    llm.refuse_formats = {"json_schema"}
    client, _ = _client(llm.url, structured="json_schema")
    with pytest.raises(LlmReplyError, match="refused the json_schema response format.*KERNELGEN_LLM_STRUCTURED"):
        ask_json(client, "spec", MESSAGES, Answer)


def test_code_is_reasked_when_missing_broken_or_cut_off(llm: ScriptedLLM) -> None:
    llm.script("triton", "I would write a kernel.", "```python\ndef relu(x:\n```",
               Reply(content=f"```python\n{KERNEL}", finish_reason="length"), f"```python\n{KERNEL}```")
    client, _ = _client(llm.url, max_reasks=3)
    assert ask_files(client, "triton", MESSAGES, ["relu_triton.py"]) == {"relu_triton.py": KERNEL}
    followups = [r.body["messages"][-1]["content"] for r in llm.requests[1:]]
    assert "no code block for relu_triton.py" in followups[0]
    assert "relu_triton.py does not parse" in followups[1]
    assert "cut off at max_tokens=8192" in followups[2]


@pytest.mark.parametrize(("reply", "expected"), [
    (Reply(status=401, error="bad key"), "refused the API key"),
    (Reply(status=404, error="no such model"), "check the base URL"),
    (Reply(status=503, error="overloaded"), "answered HTTP 503 to the spec request: overloaded"),
])
def test_http_errors_become_messages_a_user_can_act_on(llm: ScriptedLLM, reply: Reply, expected: str) -> None:
    llm.script("spec", reply)
    client, records = _client(llm.url)
    with pytest.raises(LlmUnavailable, match=expected):
        client.chat("spec", MESSAGES)
    assert records[0].status == "error"


def test_a_slow_endpoint_times_out(llm: ScriptedLLM) -> None:
    llm.script("spec", Reply(content="late", delay_s=3))
    client, _ = _client(llm.url, timeout_s=0.5)
    with pytest.raises(LlmUnavailable, match="did not answer the spec request within 0.5 s"):
        client.chat("spec", MESSAGES)
