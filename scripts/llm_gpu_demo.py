"""Run an LLM job on an accelerator against the scripted endpoint of the tests (no model needed).

The scripted model writes an inclusive prefix sum with a masking bug, repairs it when the accuracy test
fails, then proposes a parameter edit from the measured figures, then a logic edit (first answered with torch's
cumsum hidden in a class method, which the static check refuses, then honestly), and stops. Everything else is
real: the sandbox, the service's cross-check (launch guard included), the audit of the model's accuracy test, the
timing harness, ncu, the graph, the database.

    python scripts/llm_gpu_demo.py OUT_DIR [cuda|cpu]     (cpu: small shapes, a dry run of the script)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agent.runner import run_job
from agent.state import JobRequest
from kernelgen.settings import Settings
from tests.agent.llm.answers import DEFINITION, SPEC, fenced, source
from tests.scripted_llm import MODEL, scripted_llm

SHAPES = [[4096, 4096], [16384, 1024]]
TEXT = "Inclusive prefix sum (cumsum) along the last dimension of x, shapes {} and {}, fp32/fp16"


def _with_shapes(code: str) -> str:
    """Put this run's shapes into a scripted test file."""
    return code.replace('SPEC_CASES = [{"x": [8, 1000]}, {"x": [3, 4096]}]',
                        f"SPEC_CASES = {json.dumps([{'x': s} for s in SHAPES])}")


def main(out: Path, device: str) -> int:
    """Script the model, run the job on the accelerator, write a summary."""
    global SHAPES
    out.mkdir(parents=True, exist_ok=True)
    if device == "cpu":
        SHAPES = [[8, 1000], [3, 4096]]
    spec = SPEC | {"inputs": [{"name": "x", "shapes": SHAPES, "dtypes": ["float32", "float16"]}],
                   "output_shapes": SHAPES, "target_speedup": 5.0}
    tuned = source("triton").replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 4096").replace("NUM_WARPS = 4",
                                                                                         "NUM_WARPS = 8")
    hidden = source("triton_class_method").replace("mask = cols < n_cols - 1", "mask = cols < n_cols")
    streamed = source("triton").replace("mask=mask, other=0.0)", 'mask=mask, other=0.0, eviction_policy="evict_first")')
    assert hidden != source("triton_class_method") and streamed != source("triton")
    with scripted_llm() as llm:
        llm.script("requirements", json.dumps(spec))
        llm.script("definition", json.dumps(DEFINITION))
        llm.script("triton", fenced(("prefix_sum_triton.py", source("triton_masking_bug"))))
        llm.script("baseline", fenced(("prefix_sum_baseline.py", source("baseline"))))
        llm.script("accuracy", fenced(("prefix_sum_accuracy.py", _with_shapes(source("accuracy")))))
        llm.script("performance", fenced(("prefix_sum_performance.py", _with_shapes(source("performance")))))
        llm.script("repair", fenced(("prefix_sum_triton.py", source("triton"))))
        llm.script("diagnosis", json.dumps({
            "bottleneck": "memory", "evidence": "each row walks its tiles one after another",
            "change": "BLOCK_SIZE 1024 -> 4096 and NUM_WARPS 4 -> 8: one tile per 4096-wide row",
            "edit_type": "parameter", "predicted_gain": "+10-30% on [4096, 4096]"}),
            json.dumps({"bottleneck": "memory", "evidence": "each element is read once",
                        "change": "load the tiles with eviction_policy='evict_first' so they do not crowd L2",
                        "edit_type": "logic", "predicted_gain": "+0-5%"}),
            json.dumps({"bottleneck": "memory", "evidence": "near the copy bandwidth", "change": "none",
                        "edit_type": "parameter", "stop": True}))
        llm.script("edit", fenced(("prefix_sum_triton.py", tuned)), fenced(("prefix_sum_triton.py", hidden)),
                   fenced(("prefix_sum_triton.py", streamed)))
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=f"sqlite:///{out / 'kg.db'}", work_dir=Path("/tmp/kg-work"),
            llm_base_url=llm.url, llm_model=MODEL, llm_max_retries=0,
            offline_engines=["elementwise"],  # prefix sum stands for an op the offline generator does not write
        )
        request = JobRequest(spec_text=TEXT.format(*SHAPES), out_dir=str(out / "prefix_sum"), device=device,
                             llm="openai", rounds=5)
        final = run_job(request, settings, lambda stage, message: print(f"{stage:>12} {message}", flush=True))
        stages, requests = llm.stages(), list(llm.requests)
    rows = [{"round": r.index, "edit": r.edit_type, "repair_of": r.repair_of, "accuracy": r.accuracy_status,
             "speedup": r.speedup, "pct_of_copy": r.pct_of_copy, "accepted": r.accepted,
             "model_file": r.performance.get("model_file"), "config": r.config.label(), "reason": r.reason[:200],
             "verdict": r.verdict[:300] if r.verdict else None,
             "audit": r.accuracy.get("audit"), "cross_check": {k: r.accuracy.get("cross_check", {}).get(k)
                                                               for k in ("status", "cases_run", "cases_failed")}}
            for r in final.get("rounds", [])]
    reasks = list(dict.fromkeys(f"{r.stage}: {m['content'][:300]}" for r in requests for m in r.body["messages"]
                                if m["role"] == "user" and m["content"].startswith("Your answer could not be used")))
    summary = {"status": final["status"], "message": final.get("message"), "rounds": rows, "llm_stages": stages,
               "reasks": reasks}
    (out / "llm_demo.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps(summary, indent=1, default=str))
    return 0 if final["status"] == "verified" else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "cuda"))
