"""Run one batch through a real server on this machine's GPUs and write its wall time, verdicts and report.

Usage: python3 scripts/batch_gpus.py SPECS OUT LABEL [--executor local|ray] [--rounds N] [--stop-after S] [--detach]
SPECS holds one spec per line. The server gets a fresh SQLite database; CUDA_VISIBLE_DEVICES picks the GPUs.
nvidia-smi is sampled during the batch, so the summary shows how busy each GPU was.
A batch longer than one device call: with --stop-after the call stops polling and records the time so far, and the
same command in the next call goes on. Without --detach the server stops too (as a restart would) and the next
call starts it again, which resumes the batch. With --detach the server and the sampler run in their own session
and outlive the call: on the same warm machine the next call re-attaches, nothing restarts, and the wall time is
the database's (first task queued to last task finished). When the next call may find a fresh machine, leave out
--detach, put OUT inside the repository (an ignored folder such as .bg), return it from each call (tar it into
$OUT: the server has stopped, so the database is whole) and carry it into the next: the server resumes from the
carried database, and the wall time is the sum of the calls' own times (restarts included, machine starts not).
Through the lent device the next call often finds a fresh machine (it goes back 30 s after a call), so the carried
folder is the way there; build the packages with `scripts/build_device_site.sh --no-ray` so that both fit the
64 MiB carry. Past about 40 MB (some 20 jobs' checkpoints) carry the folder as a gzip archive instead (about a
fifth of the size) and untar it first on the device.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PORT = 8765
# The ray command, where only the package travelled (no console script).
RAY = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"]


def call(path: str, body: dict[str, Any] | None = None, raw: bool = False) -> Any:
    """GET (or POST a JSON body to) the local server; return the JSON (or the bytes)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        payload = response.read()
    return payload if raw else json.loads(payload)


def start_ray(env: dict[str, str], out: Path) -> str:
    """Start a Ray head on loopback with this machine's GPUs; return its address."""
    started = subprocess.run([*RAY, "start", "--head", "--node-ip-address=127.0.0.1", "--port=6399",
                              "--include-dashboard=false", "--disable-usage-stats"],
                             env=env, capture_output=True, text=True, timeout=180)
    (out / "ray_start.txt").write_text(started.stdout + started.stderr)
    if started.returncode != 0:
        raise SystemExit(f"ray start failed: {started.stderr[-2000:]}")
    return "127.0.0.1:6399"


def answers() -> bool:
    """Say whether our server answers (a live pid alone may be another process on a fresh machine)."""
    try:
        call("/healthz")
    except OSError:
        return False
    return True


def alive(pid: int | None) -> bool:
    """Say whether a process still runs (a child of this call that ended is reaped, not taken for alive)."""
    if not pid:
        return False
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass  # not a child of this call: a detached one from an earlier call
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def stop(pid: int | None, command: str) -> None:
    """End a detached process (the leader of its own session) and its session, if it still runs `command`."""
    try:  # on a fresh machine the pid may belong to anything else
        ours = command.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        ours = False
    if ours and alive(pid):
        assert pid is not None
        os.killpg(pid, signal.SIGTERM)
        for _ in range(120):
            if not alive(pid):
                return
            time.sleep(0.5)
        os.killpg(pid, signal.SIGKILL)


def database_wall(database: Path, batch_id: int) -> float | None:
    """Return seconds from the batch's creation to its last task's last change, as the database recorded them."""
    with sqlite3.connect(database) as db:
        created = db.execute("SELECT created_at FROM batch WHERE id = ?", (batch_id,)).fetchone()
        last = db.execute("SELECT max(job.updated_at) FROM job JOIN batchtask ON batchtask.job_id = job.id "
                          "WHERE batchtask.batch_id = ?", (batch_id,)).fetchone()
    if not created or not last or last[0] is None:
        return None  # no task ever got a job
    return (datetime.fromisoformat(str(last[0])) - datetime.fromisoformat(str(created[0]))).total_seconds()


def wait_health(server: subprocess.Popen[bytes] | None) -> Any:
    """Wait for the server to answer /healthz; stop if the one this call started has exited."""
    for _ in range(600):
        if server is not None and server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}: see server.log")
        try:
            return call("/healthz")
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server did not answer /healthz in 120 s: see server.log")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("specs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("label")
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--stop-after", type=float, default=None, help="seconds; then stop and record the time so far")
    parser.add_argument("--detach", action="store_true", help="server outlives the call; re-run to re-attach")
    args = parser.parse_args()
    out: Path = (args.out / args.label).resolve()
    out.mkdir(parents=True, exist_ok=True)
    specs = [line.strip() for line in args.specs.read_text(encoding="utf-8").splitlines() if line.strip()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGEN_")}
    env.update(KERNELGEN_DATABASE_URL=f"sqlite:///{out}/kernelgen.db", KERNELGEN_WORK_DIR=f"/tmp/kg-{args.label}/work",
               KERNELGEN_ARTIFACT_ROOT=f"{out}/jobs", KERNELGEN_SANDBOX_ALLOW_UNISOLATED="true",
               KERNELGEN_EXECUTOR=args.executor)
    state_file = out / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {"spent_s": 0.0, "parts": 0}
    attached = args.detach and alive(state.get("server_pid")) and answers()
    server = sampler = None
    if not attached:
        if args.detach:  # ours from an earlier call that no longer answers
            stop(state.get("server_pid"), "uvicorn")
            stop(state.get("sampler_pid"), "nvidia-smi")
        if answers():
            raise SystemExit(f"port {PORT} answers already: another label's detached server? Stop it first.")
        if args.executor == "ray":
            env["KERNELGEN_RAY_ADDRESS"] = start_ray(env, out)
        smi = "nvidia-smi" if shutil.which("nvidia-smi") else "true"
        sampler = subprocess.Popen(
            [smi, "--query-gpu=timestamp,index,utilization.gpu,memory.used", "--format=csv,noheader,nounits",
             "-lms", "500"], stdout=(out / "gpu_samples.csv").open("a"), stderr=subprocess.DEVNULL,
            start_new_session=args.detach)
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "server.app:create_app", "--factory", "--host", "127.0.0.1",
             "--port", str(PORT), "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=(out / "server.log").open("a"), stderr=subprocess.STDOUT,
            start_new_session=args.detach)
        state.update(server_pid=server.pid, sampler_pid=sampler.pid, parts=state["parts"] + 1)
        state_file.write_text(json.dumps(state))  # a call killed while polling leaves what the next one needs
    finished = False
    try:
        health = wait_health(server)
        started = time.monotonic()
        if "batch" not in state:
            state["batch"] = call("/batches", {"name": args.label, "specs": specs, "device": args.device,
                                               "rounds": args.rounds})["id"]
            state_file.write_text(json.dumps(state))
        batch_id = state["batch"]
        while True:
            detail = call(f"/batches/{batch_id}")
            if detail["status"] in ("done", "cancelled"):
                break
            if args.stop_after is not None and time.monotonic() - started > args.stop_after:
                break
            time.sleep(1.0)
        wall = observed = state["spent_s"] + time.monotonic() - started
        state.update(spent_s=observed)
        state_file.write_text(json.dumps(state))
        finished = detail["status"] in ("done", "cancelled")
        if finished and args.detach and state["parts"] == 1:  # one server saw it all, the calls' gaps too
            wall = database_wall(out / "kernelgen.db", batch_id) or observed
        if not finished:
            print(json.dumps({"label": args.label, "unfinished": True, "spent_s": round(observed, 1),
                              "counts": detail["counts"]}))
            return
        report = call(f"/batches/{batch_id}/report?format=json")
        (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
        (out / "report.md").write_bytes(call(f"/batches/{batch_id}/report?format=md", raw=True))
        for name in ("fast_p", "speedups", "roofline"):
            (out / f"{name}.png").write_bytes(call(f"/batches/{batch_id}/plots/{name}.png", raw=True))
    finally:
        if args.detach and finished:
            stop(state.get("server_pid"), "uvicorn")
            stop(state.get("sampler_pid"), "nvidia-smi")
        elif not args.detach and server is not None and sampler is not None:
            server.terminate()
            server.wait(timeout=60)
            sampler.terminate()
        if args.executor == "ray" and (not args.detach or finished):
            subprocess.run([*RAY, "stop", "--force"], env=env, capture_output=True, timeout=120)
    busy: dict[str, list[float]] = {}
    for line in (out / "gpu_samples.csv").read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[2].isdigit():
            busy.setdefault(parts[1], []).append(float(parts[2]))
    summary = {
        "label": args.label, "executor": args.executor, "tasks": len(specs), "wall_s": round(wall, 1),
        "observed_s": round(observed, 1),  # summed over the calls; without --detach the same as wall_s
        "parts": state["parts"],  # servers started; a stage cut by a restart ran again after it
        "health": health, "counts": detail["counts"],
        "verdicts": [(t["index"], t["op"], t["status"]) for t in detail["tasks"]],
        "gpu_busy_share": {gpu: round(sum(1 for u in values if u > 0) / len(values), 3)
                           for gpu, values in busy.items()},
        "gpu_mean_util": {gpu: round(sum(values) / len(values), 1) for gpu, values in busy.items()},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
