"""A job's runs share the kernels they compiled (Triton's cache), never across jobs or from untrusted runs."""

from pathlib import Path

from agent.runtime.compile_cache import job_cache
from agent.runtime.sandbox import run_file

# Stands in for Triton: reads the entries its cache holds, then "compiles" one (a folder named by a hash).
COMPILES = '''
import json, os, sys
cache = os.environ["TRITON_CACHE_DIR"]
seen = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
name = sys.argv[sys.argv.index("--entry") + 1]
os.makedirs(os.path.join(cache, name), exist_ok=True)
with open(os.path.join(cache, name, "kernel.cubin"), "w") as f:
    f.write(name)
if "--link" in sys.argv:  # a run planting a link to outside its folder
    os.makedirs(os.path.join(cache, "planted"), exist_ok=True)
    os.symlink("/etc/passwd", os.path.join(cache, "planted", "kernel.cubin"))
with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
    json.dump({"status": "pass", "seen": seen}, f)
'''


def _run(workdir: Path, entry: str, *, trusted: bool = True, link: bool = False) -> list[str]:
    args = ("--entry", entry, *(("--link",) if link else ()))
    result = run_file({"compile.py": COMPILES}, "compile.py", workdir, device="cpu", timeout_s=60, args=args,
                      trusted=trusted)
    assert result.status == "pass", result
    return list(result.result["seen"])


def test_a_later_run_of_the_job_starts_with_what_earlier_runs_compiled(tmp_path: Path) -> None:
    job = tmp_path / "job-7"
    assert _run(job / "round-0-accuracy", "aaa") == []
    assert _run(job / "round-0-performance", "bbb") == ["aaa"]
    assert _run(job / "round-0-profile", "ccc") == ["aaa", "bbb"]
    # An entry the cache holds is never replaced by a later run's
    assert (job / ".compile-cache" / "trusted" / "aaa" / "kernel.cubin").read_text() == "aaa"


def test_jobs_and_trust_levels_do_not_share(tmp_path: Path) -> None:
    _run(tmp_path / "job-1" / "round-0-accuracy", "aaa")
    assert _run(tmp_path / "job-2" / "round-0-accuracy", "bbb") == []  # another job
    # A model-written file's run neither sees the offline files' kernels nor feeds them
    assert _run(tmp_path / "job-1" / "round-1-accuracy", "evil", trusted=False) == []
    assert _run(tmp_path / "job-1" / "round-1-performance", "ddd") == ["aaa"]


def test_links_a_run_planted_are_not_kept(tmp_path: Path) -> None:
    job = tmp_path / "job-3"
    _run(job / "round-0-accuracy", "aaa", link=True)
    assert _run(job / "round-0-performance", "bbb") == ["aaa"]


def test_runs_that_are_not_a_jobs_get_no_shared_cache(tmp_path: Path) -> None:
    assert job_cache(tmp_path / "reads" / "read-1", trusted=True) is None
    assert _run(tmp_path / "reads" / "read-1", "aaa") == []
    assert _run(tmp_path / "reads" / "read-2", "bbb") == []
