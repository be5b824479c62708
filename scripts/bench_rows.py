"""Benchmark the offline row engine on an accelerator: generate here, time there, one table.

    python scripts/bench_rows.py generate DIR [--match TEXT] [--large] (any machine: read each spec, or those
        holding TEXT, and write the files per variant; --large takes LARGE_SPECS instead of SPECS)
    python scripts/bench_rows.py run DIR OUT [--variants] [--gpus N] [--warm K] (the accelerator: the defaults, or
        else the variants; with --gpus, N processes at a time, each alone on one of N GPUs of the host; with
        --warm, every file first runs once, K at a time, untimed, so that the timed runs find Triton's and
        torch.compile's caches filled: sixteen specs then fit one call)

`generate` writes DIR/<n>_<op>/<variant>/ with the four files: `default` (the schedule and configuration a job
starts from, timed beside torch.compile), and with --variants the other schedule's default and the two
best-ranked configurations of the default schedule's search space (timed without torch.compile).
"""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SPECS = [
    "row sum: torch.sum(x, dim=-1) x [8192, 4096] fp32",
    "row max: torch.amax(x, dim=-1) x [8192, 4096] fp32",
    "torch.mean(x, dim=1) x [64, 512, 1024] fp32",
    "softmax over the last dim of x [4096, 32000] fp16",
    "log_softmax over the last dim of x [4096, 32000] fp32",
    "F.layer_norm(x, (4096,), w, b) x [8192, 4096] w [4096] b [4096] fp16",
    "F.rms_norm(x, (4096,), w) x [8192, 4096] w [4096] bf16",
    "F.normalize(x, dim=-1) x [8192, 4096] fp32",
    "torch.cumsum(x, dim=-1) x [8192, 4096] fp32",
    "softmax over the last dim of x [8192, 5000] fp16",
    "softmax over the last dim of x [2048, 50257] fp32",
    "cross-entropy, logits [8192, 32000] fp16, labels [8192]",
    "F.cross_entropy(x, t, reduction='none') x [8192, 32000] bf16 t [8192]",
    "F.cross_entropy(x, t, label_smoothing=0.1) x [4096, 50257] fp32 t [4096]",
    "mse loss of pred [8192, 4096] and target [8192, 4096] fp32",
    "F.kl_div(a, b, reduction='batchmean') a [8192, 4096] b [8192, 4096] fp32",
    "F.group_norm(x, 32, w, b) x [8, 256, 64, 64] w [256] b [256] fp16",
    "F.instance_norm(x, weight=w, bias=b) x [8, 256, 64, 64] w [256] b [256] fp32",
    # Rows of an odd length in a half type: read from the 16-byte boundary below each row's start.
    "log_softmax over the last dim of x [4096, 50257] bf16",
    "F.cross_entropy(x, t, reduction='none') x [8192, 50257] bf16 t [8192]",
    # Few long rows, split across programs.
    "sum of all elements of x [8192, 4096] fp32",
    "row sum, x [8, 4194304] fp32",
    "x.sum(dim=0), x [4194304, 8] fp32",
    "torch.amax(x, dim=-1) x [4, 8388608] fp16",
    "torch.linalg.vector_norm(x, dim=-1) x [16, 2097152] bf16",
    # Means over dim 1 of 512 MB: a long reduced dim (looped, 128-byte runs) and a short one (whole rows).
    "torch.mean(x, dim=1) x [8, 4096, 4096] fp32",
    "torch.mean(x, dim=1) x [64, 512, 4096] fp32",
]

# Issue 11's set again, every input 512 MB or more (ten times the 50 MB L2 of an H100 or H200 and over): there a
# launch's fixed costs (the first wave's ramp, the last one's tail, the timer's cache flush drained from L2) are a
# few % of the kernel's time, where at 128 MB they are about a tenth (a row sum reads 88% of copy at 128 MB and 100%
# at 512 MB on an H200). Same ops and dtypes as SPECS, more rows.
LARGE_SPECS = [
    "row sum: torch.sum(x, dim=-1) x [32768, 4096] fp32",
    "row max: torch.amax(x, dim=-1) x [32768, 4096] fp32",
    "torch.mean(x, dim=1) x [256, 512, 1024] fp32",
    "softmax over the last dim of x [8192, 32000] fp16",
    "log_softmax over the last dim of x [4096, 32000] fp32",
    "F.layer_norm(x, (4096,), w, b) x [65536, 4096] w [4096] b [4096] fp16",
    "F.rms_norm(x, (4096,), w) x [65536, 4096] w [4096] bf16",
    "F.normalize(x, dim=-1) x [32768, 4096] fp32",
    "torch.cumsum(x, dim=-1) x [32768, 4096] fp32",
    "softmax over the last dim of x [65536, 5000] fp16",
    "softmax over the last dim of x [4096, 50257] fp32",
    "cross-entropy, logits [8192, 32000] fp16, labels [8192]",
    "F.cross_entropy(x, t, reduction='none') x [8192, 32000] bf16 t [8192]",
    "F.cross_entropy(x, t, label_smoothing=0.1) x [4096, 50257] fp32 t [4096]",
    "log_softmax over the last dim of x [8192, 50257] bf16",
]


def generate(folder: Path, variants: bool) -> None:
    """Read each spec and write its variants' files."""
    from agent.generators.base import LaunchConfig
    from agent.generators.offline.dispatch import OfflineGenerator
    from agent.reader.read import read_spec
    from agent.runtime.devices import DeviceInfo

    generator = OfflineGenerator()
    device = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)
    match = sys.argv[sys.argv.index("--match") + 1] if "--match" in sys.argv else ""
    for index, text in enumerate(LARGE_SPECS if "--large" in sys.argv else SPECS):
        if match not in text:
            continue
        spec = read_spec(text)
        refusal = generator.refusal(spec)
        if refusal:
            raise SystemExit(f"{text}: {refusal}")
        schedules = generator.schedules(spec)
        configs = {"default": generator.default_config(spec, schedules[0], device)}
        if variants:
            if len(schedules) > 1:
                configs["other_schedule"] = generator.default_config(spec, schedules[1], device)
            for rank, config in enumerate(generator.config_space(spec, schedules[0], device).kept[:2]):
                if config not in configs.values():
                    configs[f"search{rank}"] = config
            # Hand-picked probes of the space's corners: fewer warps per row, wide lane tiles for strided dims.
            probes = {"warps4": configs["default"].model_copy(update={"num_warps": 4}),
                      "lanes128": LaunchConfig(schedule="looped_row", block_size=32, block_m=128, num_warps=4),
                      "lanes256": LaunchConfig(schedule="looped_row", block_size=16, block_m=256, num_warps=8)}
            # Long chunks for vocabulary rows: the looped row is one pass for cross-entropy, two for softmax.
            probes |= {"looped4k": LaunchConfig(schedule="looped_row", block_size=4096, block_m=1, num_warps=8),
                       "looped8k": LaunchConfig(schedule="looped_row", block_size=8192, block_m=1, num_warps=16)}
            for name, config in probes.items():
                if config not in configs.values() and (name == "warps4" or "dim=1" in text
                                                       or name.startswith("looped") and spec.shape_cases()[0][
                                                           spec.inputs[0].name][-1] >= 16384):
                    configs[name] = config
        for name, config in configs.items():
            out = folder / f"{index:02d}_{spec.name}" / name
            out.mkdir(parents=True, exist_ok=True)
            for file_name, source in generator.generate(spec, config).files.items():
                (out / file_name).write_text(source)
            (out / "meta.json").write_text(json.dumps({"spec": text, "op": spec.name, "config": config.label()}))


def cores_of(gpu: str | None, gpus: int) -> set[int] | None:
    """Return this GPU's share of the host's cores: one process's torch.compile must not slow another's launches."""
    if gpu is None:
        return None
    cores = sorted(os.sched_getaffinity(0))
    share = max(1, len(cores) // gpus)
    return set(cores[int(gpu) * share:(int(gpu) + 1) * share]) or None


def time_variant(variant: Path, parts: Path, gpu: str | None, cores: set[int] | None = None) -> tuple[list[dict], str]:
    """Run one variant's performance file (on one GPU and its cores when given); return its rows and a failure note."""
    meta = json.loads((variant / "meta.json").read_text())
    result_file = parts / f"{variant.parent.name}-{variant.name}.json"
    args = [sys.executable, f"{meta['op']}_performance.py", "--json", str(result_file)]
    if variant.name != "default":
        args.append("--no-compile")
    env = dict(os.environ)
    if gpu is not None:  # the gpu-th of the GPUs this process may use
        visible = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
        env["CUDA_VISIBLE_DEVICES"] = visible[int(gpu)] if int(gpu) < len(visible) else gpu
    if cores is not None:  # taskset, not preexec_fn: the pool's threads make a fork's pre-exec hook unsafe
        args = ["taskset", "-c", ",".join(map(str, sorted(cores))), *args]
    start = time.time()
    try:
        done = subprocess.run(args, cwd=variant, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        return [], f"{variant}: no result (over 300 s)"
    if not result_file.exists():
        return [], f"{variant}: no result ({done.returncode}): {(done.stdout + done.stderr)[-400:]}"
    result = json.loads(result_file.read_text())
    return [{"spec": meta["spec"], "variant": variant.name, "config": meta["config"], "gpu": gpu,
             "seconds": round(time.time() - start, 1), "copy_gbs": result.get("copy_gbs"), **case}
            for case in result.get("cases", [])], ""


def run(folder: Path, out: Path, gpus: int, warm: int) -> None:
    """Time every variant, each alone on one of `gpus` GPUs, and print one row per spec (default) or variant."""
    started = time.time()
    out.mkdir(parents=True, exist_ok=True)
    variants = [v for v in sorted(p for p in folder.glob("*/*") if p.is_dir())
                # one call times the defaults beside torch.compile, another the variants
                if ("--variants" in sys.argv) != (v.name == "default")]
    free: queue.Queue[str | None] = queue.Queue()
    for gpu in (range(gpus) if gpus > 1 else [None]):
        free.put(None if gpu is None else str(gpu))

    def on_a_free_gpu(variant: Path) -> list[dict]:
        gpu = free.get()
        try:
            found, note = time_variant(variant, parts, gpu, cores_of(gpu, gpus))
        finally:
            free.put(gpu)
        for row in found:
            print(json.dumps(row), flush=True)  # as it goes: a run cut short still reports what it timed
        if note:
            print(note, flush=True)
        return found

    with tempfile.TemporaryDirectory(prefix="bench_rows_") as kept, ThreadPoolExecutor(max(1, gpus)) as pool:
        parts = Path(kept)
        if warm > 1:  # compiling is the slow part; results of runs sharing a GPU are thrown away
            (parts / "warm").mkdir()
            with ThreadPoolExecutor(warm) as warming:
                list(warming.map(lambda v: time_variant(v, parts / "warm", None), variants))
            print(f"warmed the caches in {time.time() - started:.0f} s", flush=True)
        rows = [row for found in pool.map(on_a_free_gpu, variants) for row in found]
    (out / "rows.json").write_text(json.dumps(rows, indent=1))
    print(f"{'spec':58} {'variant':14} {'triton ms':>9} {'GB/s':>7} {'%copy':>6} {'x eager':>7} {'x compile':>9}")
    for row in rows:
        compile_x = row.get("speedup_vs_compile")
        shown = "-" if compile_x is None else f"{compile_x:.2f}"
        print(f"{row['spec'][:58]:58} {row['variant']:14} {row['triton_ms']:9.4f} {row['gbs']:7.0f} "
              f"{row['pct_of_copy']:6.1f} {row['speedup']:7.2f} {shown:>9}")
    defaults = [r for r in rows if r["variant"] == "default" and r.get("speedup_vs_compile")]
    if defaults:
        geomean = math.exp(sum(math.log(r["speedup_vs_compile"]) for r in defaults) / len(defaults))
        print(f"geomean speedup vs torch.compile over {len(defaults)} default kernels: x{geomean:.3f}")


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(Path(sys.argv[2]), "--variants" in sys.argv)
    else:
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        gpus = int(sys.argv[sys.argv.index("--gpus") + 1]) if "--gpus" in sys.argv else 1
        warm = int(sys.argv[sys.argv.index("--warm") + 1]) if "--warm" in sys.argv else 0
        run(Path(sys.argv[2]), Path(sys.argv[3]), gpus, warm)
