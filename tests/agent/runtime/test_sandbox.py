"""Generated code runs in its own process group; results come back only as JSON."""

import time
from pathlib import Path

import pytest

from agent.runtime.sandbox import run_file
from tests.processes import new_marker, wait_gone

pytestmark = pytest.mark.bubblewrap  # each test runs untrusted code

WRITES_JSON = '''
import json, os, sys
with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
    json.dump({"status": "pass", "cwd": os.getcwd(), "cache": os.environ["TRITON_CACHE_DIR"],
               "interpret": os.environ.get("TRITON_INTERPRET")}, f)
print('{"status": "fail"}')  # prints are never parsed
'''

SPAWNS_AND_HANGS = '''
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "MARKER"])
time.sleep(600)
'''


def test_result_comes_from_the_json_file_in_a_private_workdir(tmp_path: Path) -> None:
    result = run_file({"probe.py": WRITES_JSON}, "probe.py", tmp_path / "w", device="cpu", timeout_s=60)
    assert result.status == "pass"
    assert Path(result.result["cwd"]) == (tmp_path / "w").resolve()
    assert result.result["cache"] == str(tmp_path / "w" / ".triton-cache")
    assert result.result["interpret"] == "1"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = new_marker()
    started = time.monotonic()
    result = run_file({"hang.py": SPAWNS_AND_HANGS.replace("MARKER", marker)}, "hang.py", tmp_path / "w",
                      device="cpu", timeout_s=3)
    assert result.status == "timeout"
    assert time.monotonic() - started < 30
    assert not wait_gone(marker), "the grandchild survived the timeout"


def test_a_crash_keeps_stderr_for_diagnosis(tmp_path: Path) -> None:
    result = run_file({"crash.py": "raise RuntimeError('kernel exploded')"}, "crash.py", tmp_path / "w",
                      device="cpu", timeout_s=60)
    assert result.status == "crashed"
    assert "kernel exploded" in result.stderr_tail
    assert "kernel exploded" in result.result["message"]


LEAVES_A_DAEMON = '''
import json, subprocess, sys
code = "import time, json; time.sleep(2); json.dump({'status': 'pass', 'forged': True}, open('result.json', 'w'))"
child = subprocess.Popen([sys.executable, "-c", code, "MARKER"])
json.dump({"status": "fail"}, open(sys.argv[sys.argv.index("--json") + 1], "w"))
'''

READS_THE_ENVIRONMENT = '''
import json, os, sys
json.dump({"status": "pass", "names": sorted(os.environ)}, open(sys.argv[sys.argv.index("--json") + 1], "w"))
'''


def test_a_process_left_behind_is_killed_when_the_run_ends(tmp_path: Path) -> None:
    marker = new_marker()
    result = run_file({"leave.py": LEAVES_A_DAEMON.replace("MARKER", marker)}, "leave.py", tmp_path / "w",
                      device="cpu", timeout_s=60)
    assert result.status == "fail"
    assert not wait_gone(marker, timeout=1.0)
    time.sleep(2.5)  # past the daemon's forgery, had it lived
    assert "forged" not in (tmp_path / "w" / "result.json").read_text()


def test_generated_code_sees_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELGEN_LLM_API_KEY", "sk-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("KERNELGEN_DATABASE_URL", "postgresql://user:pw@db/kg")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    result = run_file({"env.py": READS_THE_ENVIRONMENT}, "env.py", tmp_path / "w", device="cpu", timeout_s=60)
    names = set(result.result["names"])
    assert not names & {"KERNELGEN_LLM_API_KEY", "OPENAI_API_KEY", "KERNELGEN_DATABASE_URL", "AWS_SECRET_ACCESS_KEY"}
    assert {"PATH", "KERNELGEN_DEVICE", "TRITON_CACHE_DIR", "TRITON_INTERPRET", "HOME"} <= names
