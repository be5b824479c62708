"""A job's sandbox folders go when it ends (its results stay in the database), unless the settings keep them."""

from __future__ import annotations

from pathlib import Path

from agent.generators.base import LaunchConfig
from agent.runner import remove_work_dir, run_job, work_dir_of
from agent.runtime.sandbox import run_file
from agent.state import JobRequest
from kernelgen.settings import Settings
from storage import crud
from storage.db import make_engine


def _settings(tmp_path: Path, *, keep: bool = False) -> Settings:
    return Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                    work_dir=tmp_path / "work", keep_work_dirs=keep)


def test_the_work_folder_of_an_ended_job_is_removed_and_its_results_kept(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    # A kernel that raises (tl.arange(0, 300)) ends the job after one sandboxed accuracy run: quick, and it fails.
    request = JobRequest(spec_text="ReLU on x [4, 4] fp32", out_dir=str(tmp_path / "out"), device="cpu", rounds=1,
                         initial_config=LaunchConfig(schedule="flat", block_size=300, num_warps=4))
    seen: list[str] = []
    final = run_job(request, settings, lambda stage, message: seen.append(stage))
    assert "accuracy" in seen  # a sandboxed run was made in the folder
    assert not work_dir_of(settings, final["job_id"]).exists()
    engine = make_engine(settings.database_url)
    job = crud.get_job(engine, final["job_id"])
    assert job is not None and job.status == "failed"
    assert crud.list_artifacts(engine, final["job_id"])  # what it made is in the database as before
    assert (tmp_path / "out" / "report.json").is_file()


def test_the_settings_can_keep_work_folders(tmp_path: Path) -> None:
    settings = _settings(tmp_path, keep=True)
    folder = work_dir_of(settings, 7)
    run = run_file({"probe.py": "open('kept.txt', 'w').write('x')\n"}, "probe.py", folder / "round-0-accuracy",
                   device="cpu", timeout_s=60, trusted=True)
    assert run.status == "crashed"  # it wrote no result; what matters is the folder it leaves
    remove_work_dir(settings, 7)
    assert (folder / "round-0-accuracy" / "kept.txt").read_text() == "x"
    remove_work_dir(_settings(tmp_path), 7)
    assert not folder.exists()
