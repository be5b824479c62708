"""The service runs LLM jobs: a real uvicorn server, a real database, a scripted OpenAI-compatible endpoint."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.agent.llm.answers import SPEC_TEXT, definition_json, first_version, spec_json
from tests.scripted_llm import MODEL, Reply, scripted_llm
from tests.server.live import RELU, LiveServer, submit, wait_final

RELU_READING = {
    "supported": True, "name": "relu", "description": "max(x, 0)", "semantics": "out = max(x, 0)",
    "ir": "relu(x)", "inputs": [{"name": "x", "shapes": [[64, 64]], "dtypes": ["float32"]}], "params": [],
    "output": "out", "output_shapes": [[64, 64]], "edge_cases": [], "flops_per_output": 1,
}


@pytest.mark.bubblewrap
@pytest.mark.slow_on_postgresql
def test_a_job_for_an_unknown_op_is_written_by_the_llm_and_accounted(start_server: Callable[..., LiveServer]) -> None:
    with scripted_llm() as llm:
        llm.script("requirements", spec_json())
        llm.script("definition", definition_json())
        for stage, answer in first_version():
            llm.script(stage, answer)
        server = start_server(llm_base_url=llm.url, llm_model=MODEL, offline_engines=["elementwise"], llm_max_retries=0)
        with server.client() as client:
            job_id = submit(client, SPEC_TEXT, llm="openai")
            job = wait_final(client, job_id, timeout=300)
            assert job["status"] == "verified", job
            assert job["generator"] == f"openai:{MODEL}" and job["op_name"] == "prefix_sum"
            usage = job["llm_usage"]
            assert usage["calls"] == 6 and usage["by_status"] == {"ok": 6} and usage["total_tokens"] > 0
            names = {a["name"] for a in client.get(f"/jobs/{job_id}/artifacts").json()}
            assert {"prefix_sum_triton.py", "definition.md", "report.json"} <= names
            # auto on a server with an endpoint: the model reads the spec too (one call); a known family keeps
            # the offline kernel, so no file is asked for, and the job says the offline generator wrote it.
            llm.script("requirements", json.dumps(RELU_READING))
            relu = wait_final(client, submit(client, RELU))
            assert relu["status"] == "verified" and relu["generator"] == "offline"
            assert relu["llm_usage"]["calls"] == 1 and relu["llm_usage"]["by_status"] == {"ok": 1}
            assert llm.stages()[-1] == "requirements"


def test_an_llm_job_whose_endpoint_fails_ends_with_the_reason(start_server: Callable[..., LiveServer]) -> None:
    with scripted_llm() as llm:
        llm.script("requirements", Reply(status=503, error="model is loading"))
        server = start_server(llm_base_url=llm.url, llm_model=MODEL, offline_engines=["elementwise"], llm_max_retries=0)
        with server.client() as client:
            job = wait_final(client, submit(client, SPEC_TEXT, llm="openai"))
            assert job["status"] == "failed"
            assert "answered HTTP 503 to the requirements request: model is loading" in job["error"]
            assert job["llm_usage"]["by_status"] == {"error": 1}
