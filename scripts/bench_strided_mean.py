"""Time designs of mean(x, dim=1) over [64, 512, 1024] fp32 in turns, beside a row sum over the same bytes.

    python scripts/bench_rows.py generate DIR --match "dim=1"          (any machine: the generated mean)
    python scripts/bench_rows.py generate DIR --match "row sum: torch"  (and the generated row sum)
    python3 scripts/bench_strided_mean.py DIR [--rounds N] [--family NAME]   (the accelerator; on the CPU the
        interpreter checks every design at [2, 512, 1024] and times nothing)

Issue 11 asks 85% of the copy bandwidth for this mean. The generated kernel holds [512, 32] tiles whole; the
designs in `strided_mean_kernels.py` read the same bytes other ways. The row sum of the same buffer viewed as
[8192, 4096] reads it in whole rows: it is what the bytes allow when read in contiguous runs.
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
import triton  # noqa: E402
import triton.testing  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import strided_mean_kernels as k  # noqa: E402
from bench_turns import load  # noqa: E402

Mean = Callable[[torch.Tensor], torch.Tensor]
FAMILIES: dict[str, dict[str, Mean]] = {
    "split": {f"split S{s} R{r} w{w} st{st}": k.split_partials(s, r, w, st)
              for s, r, w, st in [(4, 4, 8, 1), (4, 4, 8, 3), (8, 4, 8, 3), (8, 4, 16, 1), (16, 2, 4, 3)]}
    | {f"semaphore S{s} R{r} w{w} st{st}": k.split_semaphore(s, r, w, st)
       for s, r, w, st in [(4, 4, 8, 3), (8, 4, 8, 3)]}
    | {f"atomic S{s} R{r} w{w} st{st}": k.split_atomic(s, r, w, st) for s, r, w, st in [(4, 4, 8, 3), (8, 4, 8, 3)]},
    "lanes": {f"lanes BK{bk} BM{bm} w{w} st{st}": k.lanes(bk, bm, w, st)
              for bk, bm, w, st in [(16, 256, 8, 3), (16, 256, 8, 1), (16, 128, 4, 4), (32, 128, 4, 4),
                                    (64, 64, 8, 3)]},
    "tiles": {f"tile-semaphore S{s} BM{bm} w{w}": k.tile_sem(s, bm, w)
              for s, bm, w in [(2, 32, 8), (4, 32, 8), (4, 64, 8), (16, 256, 8)]},
    "rows": {f"rows-atomic R{r} w{w}": k.rows_atomic(r, w) for r, w in [(8, 8), (16, 8), (32, 16)]}
    | {f"rows-atomic-unzeroed R{r} w{w}": k.rows_atomic_nozero(r, w) for r, w in [(8, 8), (16, 8), (32, 16)]}
    | {f"rows-semaphore R{r} w{w}": k.rows_sem(r, w) for r, w in [(16, 16), (8, 16)]},
    "prefetch": {f"lanes-prefetch BK{bk} BM{bm} w{w}": k.lanes_prefetch(bk, bm, w)
                 for bk, bm, w in [(32, 512, 32), (16, 512, 16), (64, 256, 32), (32, 256, 16), (64, 128, 16),
                                   (32, 128, 8), (128, 128, 32), (8, 1024, 16), (128, 64, 16)]},
    "tma": {f"tma BK{bk} BM{bm} st{st} w{w}": k.tma_lanes(bk, bm, st, w)
            for bk, bm, st, w in [(32, 256, 3, 4), (16, 256, 6, 4), (64, 64, 4, 4), (128, 32, 3, 4), (64, 256, 2, 8)]},
    "persistent": {f"persistent BM{bm} w{w} x{p}": k.persist(bm, w, p)
                   for bm, w, p in [(32, 16, 1), (32, 8, 1), (32, 16, 2), (16, 8, 2), (64, 16, 1)]},
}


def with_launch(module: ModuleType, warps: int, block_m: int) -> Mean:
    """Run the generated mean at another warp count and lane tile (module constants, restored after)."""
    def run(x: torch.Tensor) -> torch.Tensor:
        saved = getattr(module, "NUM_WARPS"), getattr(module, "BLOCK_M")  # noqa: B009  (a module's constants)
        setattr(module, "NUM_WARPS", warps)  # noqa: B010
        setattr(module, "BLOCK_M", block_m)  # noqa: B010
        try:
            return module.mean(x)
        finally:
            setattr(module, "NUM_WARPS", saved[0])  # noqa: B010
            setattr(module, "BLOCK_M", saved[1])  # noqa: B010
    return run


def main() -> int:
    folder = Path(sys.argv[1])
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 5
    family = sys.argv[sys.argv.index("--family") + 1] if "--family" in sys.argv else None
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    generated = load(next(folder.glob("*_mean/default/mean_triton.py")), "generated_mean")
    row_sum = load(next(folder.glob("*_reduce_sum/default/reduce_sum_triton.py")), "generated_row_sum")
    variants: dict[str, Mean] = {"generated": generated.mean, "generated w32": with_launch(generated, 32, 32),
                                 "generated w16 BM16": with_launch(generated, 16, 16),
                                 "generated w4 BM8": with_launch(generated, 4, 8)}
    for name, members in FAMILIES.items():
        if family in (None, name):
            variants |= members
    if cuda:
        variants["eager"] = lambda x: torch.mean(x, dim=1)
        variants["torch.compile"] = torch.compile(lambda x: torch.mean(x, dim=1))
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=device))  # TMA

    torch.manual_seed(0)
    x = torch.randn(64 if cuda else 2, 512, 1024, device=device)
    want = x.double().mean(dim=1)
    for name, fn in list(variants.items()):
        if "unzeroed" in name:
            continue  # its output is not the mean: timed only
        for _ in range(2):  # twice: the counters' reset is checked too
            error = (fn(x).double() - want).abs().max().item()
            if not error < 1e-5:
                print(f"{name}: WRONG (max error {error:.2e}), left out")
                variants.pop(name)
                break
    if not cuda:
        print(f"interpreter: {len(variants)} designs checked")
        return 0

    source = torch.randn(64 * 1024 * 1024, device=device)
    target = torch.empty_like(source)
    flat = x.view(8192, 4096)

    def bench(fn: Callable[[], object]) -> float:
        return float(triton.testing.do_bench(fn, warmup=50, rep=200, return_mode="median"))

    times: dict[str, list[float]] = {name: [] for name in [*variants, "row sum, same bytes"]}
    copies = []
    for _ in range(rounds):
        copies.append(2 * source.numel() * 4 / (bench(lambda: target.copy_(source)) * 1e-3) / 1e9)
        times["row sum, same bytes"].append(bench(lambda: row_sum.reduce_sum(flat)))
        for name, fn in variants.items():
            times[name].append(bench(functools.partial(fn, x)))
    copy = statistics.median(copies)
    n_bytes = x.numel() * 4 + want.numel() * 4
    print(f"{torch.cuda.get_device_name()}: copy {copy:.0f} GB/s ({min(copies):.0f}-{max(copies):.0f})")
    for name, found in sorted(times.items(), key=lambda item: statistics.median(item[1])):
        ms = statistics.median(found)
        share = 100 * n_bytes / (ms * 1e-3) / 1e9 / copy
        print(f"{name:36s} {ms:.4f} ms ({min(found):.4f}-{max(found):.4f})  {share:5.1f}% of copy")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
