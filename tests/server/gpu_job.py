"""A real job measured on an H200 (kept in tests/server/web/data), stored into a test server's database."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from agent.generators.base import LaunchConfig
from storage import crud
from storage.models import Round

MEASURED = Path(__file__).parent / "web" / "data" / "h200_bias_add_gelu.json"


def store_gpu_job(engine: Engine) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """Store the H200 job (files, rounds, final status) and return its id, the kept folder and its report."""
    measured = json.loads(MEASURED.read_text())
    report = json.loads(measured["files"]["report.json"])
    job_id = crud.create_job(engine, measured["spec"], "", status="verified")
    for name, content in measured["files"].items():
        round_dir = re.match(r"rounds/round_(\d+)/", name)
        crud.save_artifact(engine, job_id, name, content, int(round_dir.group(1)) if round_dir else None)
    for r in report["rounds"]:
        crud.add_round(engine, job_id, Round(
            job_id=job_id, index=r["index"], edit_type=r["edit_type"], reason=r["reason"],
            config=LaunchConfig.model_validate(r["config"]).label(), accuracy_status=r["accuracy_status"],
            performance_status=r["performance_status"], speedup=r["speedup"], pct_of_copy=r["pct_of_copy"],
            accepted=r["accepted"], verdict=r["verdict"]))
    crud.add_event(engine, job_id, "finalize", f"verified: best is round {report['best_round']}")
    crud.update_job(engine, job_id, best_round=report["best_round"], message=report["message"], op_name=report["op"])
    return job_id, measured, report
