"""Hostile model-written files, from the scripted OpenAI-compatible endpoint, are refused or contained."""

# Each scenario is one job whose model writes files that try to get out: write outside their folder, reach the
# service over loopback, leave a process behind, read the service's secrets, exhaust memory or processes, or start
# programs and native code. Each is refused by the contract (the first filter) or contained by the sandbox (the
# wall): the job fails with the reason, nothing is written outside the folder, no process is left, the server stays
# healthy. The plainly written attacks are refused; the disguised ones get past the contract on purpose.

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent.llm.answers import SPEC_TEXT, definition_json, fenced, source, spec_json
from tests.processes import new_marker, processes_of_uid, wait_gone
from tests.scripted_llm import MODEL, ScriptedLLM, scripted_llm
from tests.server.live import RELU, LiveServer, submit, wait_final

# What a successful write would leave: built at run time, so the files' own text never holds it.
PRELUDE = "import json, os, sys, time\nbuiltins = sys.modules['builtins']\nMARK = 'PWN' + 'ED-' + sys.argv[0][:0]\n"
IMPORT = "getattr(builtins, '__imp' + 'ort__')"  # an import the contract cannot see


def _accuracy_with(payload: str) -> str:
    text = source("accuracy")
    return text.replace("import contextlib\n", PRELUDE + payload + "\nimport contextlib\n", 1)


def _scenarios(places: dict[str, str], marker: str) -> dict[str, tuple[str, str]]:
    """Return name -> (file role, payload): what each hostile model writes first thing in its file."""
    outside = places["outside"]
    return {
        "a_writes_outside": ("accuracy", f"""
errors = []
for target in {[outside, places['jobs'] + '/pwned.txt', places['database'], places['home'] + '/pwned.txt',
                '/usr/lib/pwned.txt', '/tmp/pwned-' + marker]!r}:
    try:
        with open(target, "a") as handle:
            handle.write(MARK + {marker!r})
    except OSError as exc:
        errors.append(f"{{target}}: {{exc.strerror}}")
raise PermissionError("; ".join(errors))
"""),
        "b_opens_a_socket": ("accuracy", f"""
socket = {IMPORT}('sock' + 'et')
for port in ({places['server_port']}, {places['llm_port']}):
    socket.create_connection(("127.0.0.1", port), timeout=3).sendall(b"GET /jobs HTTP/1.0\\r\\n\\r\\n")
"""),
        "c_leaves_a_daemon": ("accuracy", f"""
if getattr(os, "fo" + "rk")() == 0:
    getattr(os, "set" + "sid")()
    getattr(os, "ex" + "ecv")("/bin/sh", ["sh", "-c", "sleep 240; echo forged > {outside}; # {marker}"])
sys.exit(0)  # no result: the daemon is meant to forge one later
"""),
        "d_reads_secrets": ("accuracy", f"""
import resource
stolen = {{}}
for target in {[places['database'], places['settings'], places['home'] + '/.ssh', '/etc/shadow']!r}:
    try:
        stolen[target] = os.listdir(target) if os.path.isdir(target) else open(target).read()[:200]
    except OSError:
        pass
limit = resource.getrlimit
limits = {{"nproc": limit(resource.RLIMIT_NPROC)[0], "as_mb": limit(resource.RLIMIT_AS)[0] >> 20}}
result = {{"status": "fail", "cases_run": 1, "cases_failed": 1,
          "message": "stolen: " + json.dumps(stolen) + " under " + json.dumps(limits)}}
json.dump(result, open(sys.argv[sys.argv.index("--json") + 1], "w"))
sys.exit(1)
"""),
        "e_allocates_without_bound": ("accuracy", """
blocks = []
while True:
    blocks.append(bytearray(256 * 2**20))
"""),
        "f_fork_bombs": ("accuracy", """
fork = getattr(os, "fo" + "rk")
while True:
    fork()
"""),
        "g_os_system_refused": ("accuracy", f"os.system('touch {outside}')"),
        "g_subprocess_refused": ("accuracy", f"import subprocess\nsubprocess.run(['touch', '{outside}'])"),
        "g_ctypes_refused": ("baseline", "import ctypes\nctypes.CDLL(None).system(b'id')"),
        "g_os_system_disguised": ("baseline", f"""
status = getattr(os, "sys" + "tem")("touch {outside}")
assert status == 0, f"touch exited with {{status}}"
"""),
        "g_importlib_disguised": ("accuracy", f"""
sys.modules["importlib"].import_module("sub" + "process").run(["touch", "{outside}"], check=True)
"""),
        "g_ctypes_disguised": ("accuracy", f"""
libc = {IMPORT}("c" + "types").CDLL(None)
status = libc.system(b"touch {outside}")
if status != 0:
    raise OSError(f"denied: system() returned {{status}}")
"""),
    }


def _script(llm: ScriptedLLM, role: str, payload: str) -> None:
    files = {name: source(name) for name in ("triton", "baseline", "accuracy", "performance")}
    if role == "accuracy":
        files["accuracy"] = _accuracy_with(payload)
    else:
        files["baseline"] = files["baseline"].replace("import torch\n", PRELUDE + payload + "\nimport torch\n", 1)
    llm.script("requirements", spec_json())
    llm.script("definition", definition_json())
    for name, text in files.items():
        llm.script(name, fenced((f"prefix_sum_{name}.py", text)))


# What each job's error must say: the contract's refusal, or the sandbox's containment as the run saw it.
REASONS = {
    "a_writes_outside": "no result file was written: PermissionError",
    "b_opens_a_socket": "Connection refused",
    "c_leaves_a_daemon": "no result file was written",
    "d_reads_secrets": 'stolen: {} under {"nproc": 64, "as_mb": 2048}',  # the service's own sandbox limits
    "e_allocates_without_bound": "MemoryError",
    "f_fork_bombs": "Resource temporarily unavailable",
    "g_os_system_refused": "uses os.system: generated files may not start processes",
    "g_subprocess_refused": "imports subprocess: generated files may not start processes",
    "g_ctypes_refused": "imports ctypes: generated files may not start processes",
    "g_os_system_disguised": "touch exited with",
    "g_importlib_disguised": "CalledProcessError",
    "g_ctypes_disguised": "denied",
}


@pytest.mark.bubblewrap
@pytest.mark.slow_on_postgresql
def test_hostile_model_files_are_refused_or_contained(start_server: Callable[..., LiveServer], tmp_path: Path) -> None:
    marker = new_marker()
    uid = random.randint(61000, 64000)  # this test's own sandbox uid, so its processes are easy to find
    settings_file = tmp_path / "service.env"
    settings_file.write_text("KERNELGEN_API_TOKENS=secret-token-of-the-service\n")
    with scripted_llm() as llm:
        live = start_server(llm_base_url=llm.url, llm_model=MODEL, offline_engines=["elementwise"],
                            llm_max_retries=0, llm_max_repairs=0,
                            llm_max_reasks=0,
                            concurrency=1, sandbox_uid=uid, sandbox_max_processes=64, sandbox_memory_mb=2048,
                            accuracy_timeout_s=60)
        places = {"outside": str(tmp_path / f"outside-{marker}.txt"), "jobs": str(live.settings.artifact_root),
                  "database": live.settings.database_url.removeprefix("sqlite:///")
                  if live.settings.database_url.startswith("sqlite") else str(tmp_path / "kg.db"),
                  "home": str(Path.home()), "settings": str(settings_file),
                  "server_port": live.url.rsplit(":", 1)[1], "llm_port": llm.url.split(":")[2].split("/")[0]}
        Path(places["database"]).touch()
        scenarios = _scenarios(places, marker)
        with live.client() as client:
            jobs, outcomes = {}, {}
            for name, (role, payload) in scenarios.items():  # one at a time: each job takes its own replies
                _script(llm, role, payload)
                jobs[name] = submit(client, SPEC_TEXT, llm="openai")
                outcomes[name] = wait_final(client, jobs[name], timeout=300)
                llm.replies.clear()  # a file refused while it was written leaves the later files unasked for
            for name, job in outcomes.items():
                print(f"\n{name}: {job['status']}: {job['error']}")
                assert job["status"] == "failed", (name, job["status"], job["error"])
                assert REASONS[name] in job["error"], (name, job["error"])
            # Nothing the service holds was read or changed; no secret reached an answer.
            answers = json.dumps([client.get(f"/jobs/{job_id}").json() for job_id in jobs.values()])
            assert "secret-token-of-the-service" not in answers and f"PWNED-{marker}" not in answers
            # The service's own paths are not in them (the attacker's chosen targets may be: it wrote them).
            for path in (live.settings.work_dir, live.settings.artifact_root, Path.home()):
                assert f"{path}/" not in answers, path
            # Nothing written outside the folders, and no process left: not the daemon, not the bomb's children.
            assert not Path(places["outside"]).exists() and not (live.settings.artifact_root / "pwned.txt").exists()
            assert not Path(f"/tmp/pwned-{marker}").exists() and not Path("/usr/lib/pwned.txt").exists()
            assert not (Path.home() / "pwned.txt").exists()
            assert f"PWNED-{marker}".encode() not in Path(places["database"]).read_bytes()
            assert not wait_gone(marker, timeout=5.0)
            if os.geteuid() == 0:  # root mode: every sandboxed process ran as this uid
                assert processes_of_uid(uid) == []
            # The server is healthy and still verifies a plain job.
            assert client.get("/healthz").json()["status"] == "ok"
            assert wait_final(client, submit(client, RELU, llm="offline"))["status"] == "verified"
