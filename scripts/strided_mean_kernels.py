"""Hand-written kernels for mean(x, dim=1) over [outer, reduced, inner] fp32, for scripts/bench_strided_mean.py.

Each family reads the reduced dim another way: split into spans whose partial sums a second kernel, the last
program to arrive (a counter per output tile) or float atomics combine; wide lane tiles walked in a loop, by
pointers or by TMA; one program per SM walking tiles with the next tile's load issued before the current
tile is reduced. Each launcher takes the tile sizes and returns a function of x with mean(x, dim=1)'s result.
The shapes are assumed to divide the tiles (the bench's [64, 512, 1024] does).
"""

from collections.abc import Callable

import torch
import triton
import triton.language as tl

Mean = Callable[[torch.Tensor], torch.Tensor]
COUNTERS: dict[tuple[str, int], torch.Tensor] = {}


def _counter(kind: str, n: int, device: torch.device) -> torch.Tensor:
    """Return a zeroed int32 counter per output tile, kept between calls (the last program resets its own)."""
    if (kind, n) not in COUNTERS:
        COUNTERS[(kind, n)] = torch.zeros(n, device=device, dtype=torch.int32)
    return COUNTERS[(kind, n)]


@triton.jit
def _span_sum(x_ptr, b, s, n_reduce, n_inner, rows_per_split, R: tl.constexpr, BN: tl.constexpr,
              STAGES: tl.constexpr):
    """Return the column sums of outer index b's s-th span of rows, looped R rows at a time."""
    cols = tl.arange(0, BN)
    rows = tl.arange(0, R)
    base = x_ptr + b.to(tl.int64) * n_reduce * n_inner + s * rows_per_split * n_inner
    acc = tl.zeros([R, BN], dtype=tl.float32)
    for r0 in tl.range(0, rows_per_split, R, num_stages=STAGES):
        acc += tl.load(base + (r0 + rows)[:, None] * n_inner + cols[None, :], eviction_policy="evict_first")
    return tl.sum(acc, axis=0)


@triton.jit
def _rows_sum(x_ptr, b, s, n_reduce, n_inner, R: tl.constexpr, BN: tl.constexpr):
    """Return the column sums of outer index b's s-th R whole rows, loaded at once as a row sum loads them."""
    rows = s * R + tl.arange(0, R)
    base = x_ptr + b.to(tl.int64) * n_reduce * n_inner
    cols = tl.arange(0, BN)
    return tl.sum(tl.load(base + rows[:, None] * n_inner + cols[None, :], eviction_policy="evict_first"), axis=0)


@triton.jit
def _add_when_last(ws_ptr, cnt_ptr, out_ptrs, group, s, part, inv, S: tl.constexpr, W: tl.constexpr):
    """Store a program's partial sums; the last of its group's S programs to arrive adds them into out_ptrs."""
    lanes = tl.arange(0, W)
    tl.store(ws_ptr + (group * S + s) * W + lanes, part)
    tl.debug_barrier()
    arrived = tl.atomic_add(cnt_ptr + group, 1, sem="acq_rel")
    if arrived == S - 1:
        total = tl.zeros([W], dtype=tl.float32)
        for t in range(S):
            total += tl.load(ws_ptr + (group * S + t) * W + lanes, cache_modifier=".cg")
        tl.store(out_ptrs, total * inv)
        tl.store(cnt_ptr + group, 0)  # ready for the next call


@triton.jit
def part_kernel(x_ptr, ws_ptr, n_reduce, n_inner, rows_per_split,
                S: tl.constexpr, R: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    part = _span_sum(x_ptr, pid // S, pid % S, n_reduce, n_inner, rows_per_split, R, BN, STAGES)
    tl.store(ws_ptr + pid * BN + tl.arange(0, BN), part)


@triton.jit
def finish_kernel(ws_ptr, out_ptr, inv, n_inner, S: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = n_inner // BLOCK
    b = pid // n_tiles
    cols = (pid % n_tiles) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in tl.static_range(S):
        acc += tl.load(ws_ptr + (b * S + s) * n_inner + cols)
    tl.store(out_ptr + b * n_inner + cols, acc * inv)


@triton.jit
def sem_kernel(x_ptr, ws_ptr, cnt_ptr, out_ptr, inv, n_reduce, n_inner, rows_per_split,
               S: tl.constexpr, R: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    b = pid // S
    part = _span_sum(x_ptr, b, pid % S, n_reduce, n_inner, rows_per_split, R, BN, STAGES)
    _add_when_last(ws_ptr, cnt_ptr, out_ptr + b * n_inner + tl.arange(0, BN), b, pid % S, part, inv, S, BN)


@triton.jit
def atomic_kernel(x_ptr, out_ptr, inv, n_reduce, n_inner, rows_per_split,
                  S: tl.constexpr, R: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    b = pid // S
    part = _span_sum(x_ptr, b, pid % S, n_reduce, n_inner, rows_per_split, R, BN, STAGES)
    tl.atomic_add(out_ptr + b * n_inner + tl.arange(0, BN), part * inv, sem="relaxed")


@triton.jit
def lanes_kernel(x_ptr, out_ptr, inv, n_reduce, n_inner,
                 BK: tl.constexpr, BM: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = n_inner // BM
    b = pid // n_tiles
    cols = (pid % n_tiles) * BM + tl.arange(0, BM)
    ks = tl.arange(0, BK)
    base = x_ptr + b.to(tl.int64) * n_reduce * n_inner
    acc = tl.zeros([BK, BM], dtype=tl.float32)
    for k0 in tl.range(0, n_reduce, BK, num_stages=STAGES):
        acc += tl.load(base + (k0 + ks)[:, None] * n_inner + cols[None, :], eviction_policy="evict_first")
    tl.store(out_ptr + b * n_inner + cols, tl.sum(acc, axis=0) * inv)


def split_partials(S: int, R: int, warps: int, stages: int) -> Mean:
    """Split the reduced dim into S spans looped R rows at a time; a second kernel adds the partial sums."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        ws = torch.empty(nb * S * ni, device=x.device, dtype=torch.float32)
        out = torch.empty(nb, ni, device=x.device, dtype=x.dtype)
        part_kernel[(nb * S,)](x, ws, nr, ni, nr // S, S=S, R=R, BN=ni, STAGES=stages, num_warps=warps)
        finish_kernel[(nb * ni // 256,)](ws, out, 1.0 / nr, ni, S=S, BLOCK=256, num_warps=2)
        return out
    return run


def split_semaphore(S: int, R: int, warps: int, stages: int) -> Mean:
    """Split as split_partials; the last program of an outer index to arrive adds the partial sums."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        cnt = _counter("split", nb, x.device)
        ws = torch.empty(nb * S * ni, device=x.device, dtype=torch.float32)
        out = torch.empty(nb, ni, device=x.device, dtype=x.dtype)
        sem_kernel[(nb * S,)](x, ws, cnt, out, 1.0 / nr, nr, ni, nr // S, S=S, R=R, BN=ni, STAGES=stages,
                              num_warps=warps)
        return out
    return run


def split_atomic(S: int, R: int, warps: int, stages: int) -> Mean:
    """Split as split_partials; each span adds its partial mean to a zeroed output with float atomics."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        out = torch.zeros(nb, ni, device=x.device, dtype=torch.float32)
        atomic_kernel[(nb * S,)](x, out, 1.0 / nr, nr, ni, nr // S, S=S, R=R, BN=ni, STAGES=stages,
                                 num_warps=warps)
        return out
    return run


def lanes(BK: int, BM: int, warps: int, stages: int) -> Mean:
    """Give each program BM lanes of one outer index and walk the reduced dim BK rows at a time."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        out = torch.empty(nb, ni, device=x.device, dtype=x.dtype)
        lanes_kernel[(nb * ni // BM,)](x, out, 1.0 / nr, nr, ni, BK=BK, BM=BM, STAGES=stages, num_warps=warps)
        return out
    return run


@triton.jit
def tile_sem_kernel(x_ptr, ws_ptr, cnt_ptr, out_ptr, inv, n_reduce, n_inner,
                    S: tl.constexpr, BK: tl.constexpr, BM: tl.constexpr):
    pid = tl.program_id(0)
    s = pid % S
    tile = pid // S
    n_tiles = n_inner // BM
    b = tile // n_tiles
    cols = (tile % n_tiles) * BM + tl.arange(0, BM)
    ks = s * BK + tl.arange(0, BK)
    base = x_ptr + b.to(tl.int64) * n_reduce * n_inner
    part = tl.sum(tl.load(base + ks[:, None] * n_inner + cols[None, :], eviction_policy="evict_first"), axis=0)
    _add_when_last(ws_ptr, cnt_ptr, out_ptr + b * n_inner + cols, tile, s, part, inv, S, BM)


@triton.jit
def rows_atomic_kernel(x_ptr, out_ptr, inv, n_reduce, n_inner, S: tl.constexpr, R: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    b = pid // S
    part = _rows_sum(x_ptr, b, pid % S, n_reduce, n_inner, R, BN)
    tl.atomic_add(out_ptr + b * n_inner + tl.arange(0, BN), part * inv, sem="relaxed")


@triton.jit
def rows_sem_kernel(x_ptr, ws_ptr, cnt_ptr, out_ptr, inv, n_reduce, n_inner,
                    S: tl.constexpr, R: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    b = pid // S
    part = _rows_sum(x_ptr, b, pid % S, n_reduce, n_inner, R, BN)
    _add_when_last(ws_ptr, cnt_ptr, out_ptr + b * n_inner + tl.arange(0, BN), b, pid % S, part, inv, S, BN)


def tile_sem(S: int, BM: int, warps: int) -> Mean:
    """Read [n_reduce / S, BM] tiles whole; the last of the S programs of a lane tile adds their sums."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        n_tiles = nb * ni // BM
        cnt = _counter("tile", n_tiles, x.device)
        ws = torch.empty(n_tiles * S * BM, device=x.device, dtype=torch.float32)
        out = torch.empty(nb, ni, device=x.device, dtype=x.dtype)
        tile_sem_kernel[(n_tiles * S,)](x, ws, cnt, out, 1.0 / nr, nr, ni, S=S, BK=nr // S, BM=BM, num_warps=warps)
        return out
    return run


def rows_atomic(R: int, warps: int) -> Mean:
    """Read R whole rows (every lane) at once, as a row sum does; add to a zeroed output with atomics."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        out = torch.zeros(nb, ni, device=x.device, dtype=torch.float32)
        rows_atomic_kernel[(nb * nr // R,)](x, out, 1.0 / nr, nr, ni, S=nr // R, R=R, BN=ni, num_warps=warps)
        return out
    return run


def rows_atomic_nozero(R: int, warps: int) -> Mean:
    """Time rows_atomic without zeroing its output (wrong results: for the kernel's own time only)."""

    cache: dict[int, torch.Tensor] = {}

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        out = cache.get(nb)
        if out is None:
            out = cache[nb] = torch.zeros(nb, ni, device=x.device, dtype=torch.float32)
        rows_atomic_kernel[(nb * nr // R,)](x, out, 1.0 / nr, nr, ni, S=nr // R, R=R, BN=ni, num_warps=warps)
        return out
    return run


@triton.jit
def tma_lanes_kernel(x_ptr, out_ptr, inv, n_rows, n_reduce, n_inner,
                     BK: tl.constexpr, BM: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = n_inner // BM
    b = pid // n_tiles
    c0 = (pid % n_tiles) * BM
    desc = tl.make_tensor_descriptor(x_ptr, shape=[n_rows, n_inner], strides=[n_inner, 1], block_shape=[BK, BM])
    acc = tl.zeros([BK, BM], dtype=tl.float32)
    for k0 in tl.range(0, n_reduce, BK, num_stages=STAGES):
        acc += desc.load([b * n_reduce + k0, c0])
    tl.store(out_ptr + b * n_inner + c0 + tl.arange(0, BM), tl.sum(acc, axis=0) * inv)


def tma_lanes(BK: int, BM: int, stages: int, warps: int) -> Mean:
    """Walk the reduced dim as lanes does, loading [BK, BM] tiles by TMA descriptors."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        out = torch.empty(nb, ni, device=x.device, dtype=x.dtype)
        tma_lanes_kernel[(nb * ni // BM,)](x, out, 1.0 / nr, nb * nr, nr, ni, BK=BK, BM=BM, STAGES=stages,
                                           num_warps=warps)
        return out
    return run


def rows_sem(R: int, warps: int) -> Mean:
    """Read R whole rows at once; the last program of an outer index adds the partial sums."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        cnt = _counter("rows", nb, x.device)
        ws = torch.empty(nb * nr // R * ni, device=x.device, dtype=torch.float32)
        out = torch.empty(nb, ni, device=x.device, dtype=x.dtype)
        rows_sem_kernel[(nb * nr // R,)](x, ws, cnt, out, 1.0 / nr, nr, ni, S=nr // R, R=R, BN=ni, num_warps=warps)
        return out
    return run


@triton.jit
def persist_kernel(x_ptr, out_ptr, inv, n_reduce, n_inner, n_items, BK: tl.constexpr, BM: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    n_tiles = n_inner // BM
    ks = tl.arange(0, BK)
    lanes = tl.arange(0, BM)
    b = pid // n_tiles
    cols = (pid % n_tiles) * BM + lanes
    cur = tl.load(x_ptr + b.to(tl.int64) * n_reduce * n_inner + ks[:, None] * n_inner + cols[None, :],
                  mask=(ks[:, None] < tl.where(pid < n_items, n_reduce, 0)) & (cols[None, :] < n_inner), other=0.0,
                  eviction_policy="evict_first")
    for item in range(pid, n_items, nprog):
        # The next tile's load goes out before this tile is reduced: a tile is always in flight.
        following = item + nprog
        nb = following // n_tiles
        ncols = (following % n_tiles) * BM + lanes
        nxt = tl.load(x_ptr + nb.to(tl.int64) * n_reduce * n_inner + ks[:, None] * n_inner + ncols[None, :],
                      mask=(ks[:, None] < tl.where(following < n_items, n_reduce, 0)) & (ncols[None, :] < n_inner),
                      other=0.0, eviction_policy="evict_first")
        tl.store(out_ptr + b * n_inner + cols, tl.sum(cur, axis=0) * inv)
        cur = nxt
        b = nb
        cols = ncols


def persist(BM: int, warps: int, per_sm: int) -> Mean:
    """Launch per_sm programs per SM, each walking [n_reduce, BM] tiles with the next tile's load issued first."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        out = torch.empty(nb, ni, device=x.device, dtype=x.dtype)
        n_items = nb * ni // BM
        sms = torch.cuda.get_device_properties(0).multi_processor_count if x.is_cuda else 3
        persist_kernel[(min(n_items, sms * per_sm),)](x, out, 1.0 / nr, nr, ni, n_items,
                                                      BK=triton.next_power_of_2(nr), BM=BM, num_warps=warps)
        return out
    return run



@triton.jit
def lanes_prefetch_kernel(x_ptr, out_ptr, inv, n_reduce, n_inner, BK: tl.constexpr, BM: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = n_inner // BM
    b = pid // n_tiles
    cols = (pid % n_tiles) * BM + tl.arange(0, BM)
    ks = tl.arange(0, BK)
    base = x_ptr + b.to(tl.int64) * n_reduce * n_inner + cols[None, :]
    current = tl.load(base + ks[:, None] * n_inner, eviction_policy="evict_first")
    acc = tl.zeros([BK, BM], dtype=tl.float32)
    for k0 in range(BK, n_reduce, BK):
        # The next rows' load goes out before the current rows are added: two tiles in flight per program.
        following = tl.load(base + (k0 + ks)[:, None] * n_inner, eviction_policy="evict_first")
        acc += current
        current = following
    acc += current
    tl.store(out_ptr + b * n_inner + cols, tl.sum(acc, axis=0) * inv)


def lanes_prefetch(BK: int, BM: int, warps: int) -> Mean:
    """Walk the reduced dim as lanes does, each step's load issued before the step before it is added."""

    def run(x: torch.Tensor) -> torch.Tensor:
        nb, nr, ni = x.shape
        out = torch.empty(nb, ni, device=x.device, dtype=x.dtype)
        lanes_prefetch_kernel[(nb * ni // BM,)](x, out, 1.0 / nr, nr, ni, BK=BK, BM=BM, num_warps=warps)
        return out
    return run
