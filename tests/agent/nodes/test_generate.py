"""The first version: a requested configuration the generator cannot write for the spec ends the job, saying why."""

from pathlib import Path

from agent.generators.config_rules import config_from_label
from agent.runner import run_job
from agent.state import JobRequest
from kernelgen.settings import Settings


def _run(tmp_path: Path, spec: str, label: str) -> dict[str, object]:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    request = JobRequest(spec_text=spec, out_dir=str(tmp_path / "out"), device="cpu", rounds=1,
                         initial_config=config_from_label(label))
    return dict(run_job(request, settings, lambda stage, message: None))


def test_a_schedule_the_spec_has_no_use_for_is_rejected_naming_the_ones_it_offers(tmp_path: Path) -> None:
    final = _run(tmp_path, "row sum of x [6, 70]", "flat: BLOCK_SIZE=256, NUM_WARPS=4")
    assert final["status"] == "rejected"
    assert "flat schedule is not one the offline generator writes for it (it offers whole_row, looped_row" in str(
        final["message"])


def test_a_row_schedule_the_spec_offers_is_the_first_version(tmp_path: Path) -> None:
    final = _run(tmp_path, "row sum of x [6, 70]", "looped_row: BLOCK_M=2, BLOCK_K=16, NUM_WARPS=2")
    assert final["status"] == "verified", final.get("message")
    assert "looped_row: BLOCK_M=2, BLOCK_K=16, NUM_WARPS=2" in (tmp_path / "out" / "optimization_log.md").read_text()
