"""Whole jobs through a real OpenAI-compatible HTTP server with scripted replies, kernels in the interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from storage import crud
from storage.db import make_engine
from tests.agent.llm.answers import SPEC_TEXT, definition_json, fenced, first_version, source, spec_json
from tests.agent.llm.jobs import llm_settings, run_llm_job, script_start
from tests.scripted_llm import MODEL, Reply, ScriptedLLM

CHECK = """
import sys, torch
sys.path.insert(0, sys.argv[1])
from prefix_sum_triton import prefix_sum
for shape in ([8, 1000], [3, 4096], [7, 1], [4, 5, 333]):
    x = torch.randn(shape)
    assert torch.allclose(prefix_sum(x), torch.cumsum(x, -1), atol=1e-4, rtol=1e-4), shape
print("ok")
"""


@pytest.mark.bubblewrap
def test_an_op_the_offline_generator_does_not_know_becomes_a_verified_kernel(tmp_path: Path, llm: ScriptedLLM) -> None:
    script_start(llm)
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    assert final["status"] == "verified", final.get("message")
    assert llm.stages() == ["requirements", "definition", "triton", "baseline", "accuracy", "performance"]
    out = tmp_path / "out"
    assert sorted(p.name for p in out.glob("prefix_sum_*.py")) == [
        "prefix_sum_accuracy.py", "prefix_sum_baseline.py", "prefix_sum_performance.py", "prefix_sum_triton.py"]
    # The kernel is right by a check the model never saw, and the files run with plain python.
    check = subprocess.run([sys.executable, "-c", CHECK, str(out)], capture_output=True, text=True, timeout=300)
    assert check.stdout.strip() == "ok", check.stderr[-2000:]
    alone = subprocess.run([sys.executable, "prefix_sum_accuracy.py"], cwd=out, capture_output=True, text=True,
                           timeout=300)
    assert alone.returncode == 0, alone.stdout[-2000:] + alone.stderr[-2000:]
    # The service's own cross-check ran too, with its own seeds and the edge shapes.
    v0 = final["rounds"][0]
    cross = v0.accuracy["cross_check"]
    assert cross["status"] == "pass"
    edges = {json.dumps(c["shapes"]) for c in cross["cases"] if c["kind"] == "edge"}
    assert len(edges) >= 3 and cross["cases_run"] == (2 + len(edges)) * 2 * 3  # our odd shapes, 2 dtypes, 3 seeds
    definition = (out / "definition.md").read_text()
    assert "tl.cumsum within a tile" in definition and "32,000" in definition  # the model's plan, our byte count
    assert definition.strip() in llm.seen("triton")[0].user_text  # the whole document, not a cut of it
    # Accounting: every call in the database and in report.json, with tokens and latency.
    report = json.loads((out / "report.json").read_text())
    assert report["generator"] == f"openai:{MODEL}"
    assert report["llm"]["totals"]["calls"] == 6 and report["llm"]["totals"]["total_tokens"] > 0
    assert all(c["latency_ms"] > 0 and c["status"] == "ok" for c in report["llm"]["calls"])
    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    job = crud.get_job(engine, final["job_id"])
    assert job is not None and job.generator == f"openai:{MODEL}" and job.status == "verified"
    assert [c.stage for c in crud.list_llm_calls(engine, final["job_id"])] == llm.stages()


@pytest.mark.bubblewrap
def test_a_masking_bug_is_repaired_from_the_failure_the_prompt_carries(tmp_path: Path, llm: ScriptedLLM) -> None:
    script_start(llm, triton="triton_masking_bug")
    llm.script("repair", fenced(("prefix_sum_triton.py", source("triton")),
                                prose="The mask drops the last column; it must be cols < n_cols."))
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    assert final["status"] == "verified", final.get("message")
    v0, v1 = final["rounds"]
    assert v0.accuracy_status == "fail" and not v0.accepted
    assert v1.repair_of == 0 and v1.accepted and final["best_round"] == 1 and v1.edit_type == "logic"
    prompt = llm.seen("repair")[0].user_text
    assert "failed accuracy" in prompt and "max abs error" in prompt
    assert "shapes {'x': [8, 1000]}" in prompt and "dtypes {'x': 'float32'}" in prompt
    assert "mask = cols < n_cols - 1" in prompt  # the code involved
    log = (tmp_path / "out" / "optimization_log.md").read_text()
    assert "Round 1: repair of v0, logic edit" in log and "-        mask = cols < n_cols - 1" in log
    assert "mask = cols < n_cols\n" in (tmp_path / "out" / "prefix_sum_triton.py").read_text()


@pytest.mark.bubblewrap
def test_repairs_are_bounded_and_each_attempt_is_a_round(tmp_path: Path, llm: ScriptedLLM) -> None:
    script_start(llm, triton="triton_masking_bug")
    still_wrong = fenced(("prefix_sum_triton.py", source("triton_masking_bug").replace("n_cols - 1", "n_cols - 2")))
    llm.script("repair", still_wrong, still_wrong.replace("n_cols - 2", "n_cols - 3"))
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url, llm_max_repairs=2))
    assert final["status"] == "failed"
    assert [r.repair_of for r in final["rounds"]] == [None, 0, 1]
    assert "after 2 repair attempts" in final["message"]
    second = llm.seen("repair")[1].user_text  # the second attempt repairs v1 and hears about v0
    assert "Version v1 failed accuracy" in second and "Earlier attempts that also failed: v0 failed accuracy" in second


@pytest.mark.bubblewrap
def test_a_signature_change_is_an_interface_edit_and_all_four_files_are_rewritten(
    tmp_path: Path, llm: ScriptedLLM,
) -> None:
    script_start(llm, triton="triton_masking_bug")
    llm.script("repair", fenced(("prefix_sum_triton.py", source("triton_dim"))))
    accuracy_dim = source("accuracy").replace("out = prefix_sum(x)", "out = prefix_sum(x, dim=-1)")
    performance_dim = source("performance").replace('PARAMS = {}', 'PARAMS = {"dim": -1}')
    llm.script("baseline", fenced(("prefix_sum_baseline.py", source("baseline_dim"))))
    llm.script("accuracy", fenced(("prefix_sum_accuracy.py", accuracy_dim)))
    llm.script("performance", fenced(("prefix_sum_performance.py", performance_dim)))
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    assert final["status"] == "verified", final.get("message")
    v1 = final["rounds"][1]
    assert v1.edit_type == "interface" and v1.accepted
    assert "rewritten for it" in v1.reason
    # The three rewrite prompts were given the new kernel.
    for stage in ("baseline", "accuracy", "performance"):
        assert "dim: int = -1" in llm.seen(stage)[1].user_text
    out = tmp_path / "out"
    assert (out / "prefix_sum_baseline.py").read_text() == source("baseline_dim")
    assert (out / "prefix_sum_accuracy.py").read_text() == accuracy_dim
    assert (out / "prefix_sum_performance.py").read_text() == performance_dim
    assert "def prefix_sum(x, dim: int = -1)" in (out / "prefix_sum_triton.py").read_text()


@pytest.mark.bubblewrap
def test_malformed_json_gets_a_reask_that_says_what_was_wrong(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.script("requirements", "Sure! Here is the spec: {\"name\": \"prefix_sum\", \"inputs\": [", spec_json())
    llm.script("definition", definition_json())
    for stage, answer in first_version():
        llm.script(stage, answer)
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    assert final["status"] == "verified", final.get("message")
    first, second = llm.seen("requirements")
    assert first.response_format == "json_schema"
    assert "could not be used" in second.user_text and "no JSON object" in second.user_text
    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    calls = crud.list_llm_calls(engine, final["job_id"])
    assert [(c.stage, c.status) for c in calls[:2]] == [("requirements", "invalid"), ("requirements", "ok")]


@pytest.mark.slow
def test_an_endpoint_without_json_schema_gets_json_mode(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.refuse_formats = {"json_schema"}
    script_start(llm)
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    assert final["status"] == "verified", final.get("message")
    formats = [r.response_format for r in llm.requests if r.stage in ("requirements", "definition")]
    assert formats == ["json_schema", "json_object", "json_object"]  # refused once, then remembered
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["llm"]["structured_mode"] == "json_object"


def test_an_endpoint_that_is_down_ends_the_job_with_a_clear_error(tmp_path: Path) -> None:
    settings = llm_settings(tmp_path, "http://127.0.0.1:9/v1")  # the discard port: nothing listens
    final = run_llm_job(tmp_path, settings)
    assert final["status"] == "failed"
    assert "could not be reached" in final["message"] and "127.0.0.1:9" in final["message"]
    engine = make_engine(settings.database_url)
    job = crud.get_job(engine, final["job_id"])
    assert job is not None and job.status == "failed" and "could not be reached" in job.message
    assert job.spec_text == SPEC_TEXT  # the request is kept to run again
    report = json.loads((tmp_path / "out" / "report.json").read_text())  # on disk too, though nothing was read
    assert report["status"] == "failed" and "could not be reached" in report["message"]
    assert report["spec_text"] == SPEC_TEXT and [c["status"] for c in report["llm"]["calls"]] == ["error"]
    assert [c.status for c in crud.list_llm_calls(engine, final["job_id"])] == ["error"]


def test_an_endpoint_that_times_out_ends_the_job_and_keeps_what_was_done(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.script("requirements", spec_json())
    llm.script("definition", definition_json())
    llm.script("triton", Reply(content="late", delay_s=5))
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url, llm_timeout_s=1))
    assert final["status"] == "failed"
    assert "did not answer the triton request within 1 s" in final["message"]
    out = tmp_path / "out"
    assert (out / "definition.md").exists()
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "failed" and "within 1 s" in report["message"]
    assert [c["status"] for c in report["llm"]["calls"]] == ["ok", "ok", "error"]
    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    assert {a.name for a in crud.list_artifacts(engine, final["job_id"])} >= {"definition.md", "report.json"}


@pytest.mark.bubblewrap
def test_a_model_test_that_always_passes_cannot_pass_a_wrong_kernel(tmp_path: Path, llm: ScriptedLLM) -> None:
    lenient = source("accuracy").replace('"status": "fail" if bool(bad.any()) else "pass"', '"status": "pass"')
    assert lenient != source("accuracy")
    llm.script("requirements", spec_json())
    llm.script("definition", definition_json())
    llm.script("triton", fenced(("prefix_sum_triton.py", source("triton_masking_bug"))))
    llm.script("baseline", fenced(("prefix_sum_baseline.py", source("baseline"))))
    llm.script("accuracy", fenced(("prefix_sum_accuracy.py", lenient)))
    llm.script("performance", fenced(("prefix_sum_performance.py", source("performance"))))
    llm.script("repair", fenced(("prefix_sum_triton.py", source("triton")),
                                ("prefix_sum_accuracy.py", source("accuracy"))))
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    v0 = final["rounds"][0]
    assert v0.accuracy["status"] == "pass"  # the model's own test said so
    cross = v0.accuracy["cross_check"]
    assert v0.accuracy_status == "fail" and cross["cases_failed"] == cross["cases_run"] >= 30
    failed = f"the independent check failed {cross['cases_run']}/{cross['cases_run']} cases"
    assert failed in llm.seen("repair")[0].user_text
    # The test itself is caught too: it passes a deliberately wrong kernel, and the repair hears it.
    assert "passed a deliberately wrong kernel" in v0.accuracy["audit"]["message"]
    assert "passed a deliberately wrong kernel" in llm.seen("repair")[0].user_text
    assert final["status"] == "verified" and final["best_round"] == 1


@pytest.mark.bubblewrap
def test_an_interface_edit_may_not_change_what_the_reference_computes(tmp_path: Path, llm: ScriptedLLM) -> None:
    script_start(llm, triton="triton_masking_bug")
    llm.script("repair", fenced(("prefix_sum_triton.py", source("triton_dim"))),
               fenced(*[(f"prefix_sum_{r}.py", source(r)) for r in ("triton", "baseline", "accuracy", "performance")]))
    exclusive = source("baseline_dim").replace("return torch.cumsum(x, dim=dim)",
                                               "return torch.cumsum(x, dim=dim) - x")  # another operator
    llm.script("baseline", fenced(("prefix_sum_baseline.py", exclusive)))
    llm.script("accuracy", fenced(("prefix_sum_accuracy.py", source("accuracy"))))
    llm.script("performance", fenced(("prefix_sum_performance.py", source("performance"))))
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    v1 = final["rounds"][1]
    assert v1.edit_type == "interface" and v1.accuracy_status == "fail"
    assert "the rewritten reference disagrees with the previous one" in json.dumps(v1.accuracy["cross_check"])
    assert "the rewritten reference disagrees" in llm.seen("repair")[1].user_text
    assert final["status"] == "verified" and final["best_round"] == 2


@pytest.mark.slow
def test_a_malformed_result_from_the_model_test_is_a_failure_not_a_crash(tmp_path: Path, llm: ScriptedLLM) -> None:
    garbage = source("accuracy").replace(
        '''    result = {"status": status, "cases_run": len(cases), "cases_failed": len(failed),
              "max_abs_err": max(c.get("max_abs_err", 0.0) for c in cases), "cases": cases}''',
        '''    result = {"status": "fail", "cases_run": "many",
              "cases": ["oops", {"status": None, "message": None}]}''')
    assert garbage != source("accuracy")
    script_start(llm)
    llm.replies["accuracy"] = []
    llm.script("accuracy", fenced(("prefix_sum_accuracy.py", garbage)))
    llm.script("repair", fenced(("prefix_sum_accuracy.py", source("accuracy"))))
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    v0, v1 = final["rounds"]
    assert v0.accuracy_status == "fail" and v0.accuracy["cases_run"] == 1 and v0.accuracy["max_abs_err"] is None
    assert v1.edit_type == "logic" and v1.accepted and final["status"] == "verified"
    assert "Round 0: initial edit" in (tmp_path / "out" / "optimization_log.md").read_text()
