"""Write the row engine's Triton kernel: one pass with the row in registers, or passes looping over chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .graph import IDENTITY, SCAN_REDUCER, RowNode, Total, topological

Layout = Literal["last", "strided"]

COMBINE = {"sum": "({0} + {1})", "prod": "({0} * {1})", "max": "_max_nan({0}, {1})", "min": "_min_nan({0}, {1})",
            "shift_max": "tl.maximum({0}, {1})", "logaddexp": "_logaddexp({0}, {1})"}
# Max and min reduce with tl.max / tl.min plus a NaN count rather than tl.reduce with a NaN-aware combine: the same
# result, and the Triton interpreter runs a custom combine one element at a time (minutes on a 1M-element case).
REDUCE = {"sum": "tl.sum({0}, axis={ax})", "prod": "tl.reduce({0}, {ax}, _mul)",
           "max": "_amax({0}, {ax})", "min": "_amin({0}, {ax})", "shift_max": "tl.max({0}, axis={ax})",
           "logaddexp": "tl.reduce({0}, {ax}, _logaddexp)"}
_SCAN = {"cumsum": "tl.cumsum({0}, axis={ax})",
         "cumprod": "tl.cumprod({0}, axis={ax})",
         "cummax": "tl.associative_scan({0}, {ax}, _max_nan)", "cummin": "tl.associative_scan({0}, {ax}, _min_nan)",
         "logcumsumexp": "tl.associative_scan({0}, {ax}, _logaddexp)"}
HELPER_OF = {"prod": ("_mul",), "max": ("_max_nan", "_amax"), "min": ("_min_nan", "_amin"),
              "logaddexp": ("_logaddexp",)}

class NotEmittable(ValueError):
    """A graph this schedule cannot write (a reduction over a scan, say)."""


@dataclass
class Scope:
    lines: list[str] = field(default_factory=list)
    names: dict[RowNode, str] = field(default_factory=dict)


@dataclass
class KernelSource:
    """The kernel's text and the helpers it calls."""

    text: str
    helpers: list[str]


def unwrapped_streamed(tile_inputs: list[str], streamed: frozenset[str], wrapped: dict[str, str]) -> list[str]:
    """Name the full-size inputs addressed without a wrap: their rows (or lanes) can be told how they align."""
    return [n for n in tile_inputs if n in streamed and not wrapped.get(n)]


def shifted_store(root: RowNode) -> bool:
    """Say whether a looped row's output pass can store 16 bytes at a time: a whole-row output and no scan."""
    # A scan's carry runs from the row's start, so its ends cannot be written apart after the loop.
    return root.level == "tile" and not any(n.kind == "scan" for n in topological(root))


def index_term(name: str, group: str, index: str, wrapped: str) -> str:
    """Return a tensor's offset along one group of dims (m outer, k reduced, n inner) at an index into it."""
    if group in wrapped:
        # The tensor spans only part of the group (a per-channel vector): (index // divisor % modulus) * stride.
        return f"(({index} // {name}_d{group}) % {name}_q{group}) * {name}_s{group}"
    return f"{index} * {name}_s{group}"


def stride_params(name: str, groups: str, wrapped: str) -> str:
    """Return a tensor's stride parameters of the kernel, with a divisor and modulus for each wrapped group."""
    # Compile-time divisors: a runtime integer division costs tens of instructions an element (a group norm's
    # per-channel weight ran at 13% of the copy bandwidth), a constant one is a shift or a multiply.
    return ", ".join(f"{name}_s{g}, {name}_d{g}: tl.constexpr, {name}_q{g}: tl.constexpr" if g in wrapped
                     else f"{name}_s{g}" for g in groups)


class Emitter:
    def __init__(self, layout: Layout, looped: bool, streamed: frozenset[str], wrapped: dict[str, str],
                 shifted: tuple[str, ...] = ()) -> None:
        self.layout = layout
        self.looped = looped
        self.streamed = streamed
        self.wrapped = wrapped
        self.stream_policy = "evict_first"  # the cache hint of the current pass's streamed loads (see eviction)
        self.ax = 1 if layout == "last" else 0
        self.outer = Scope()
        self.count = 0
        self.helpers: set[str] = set()
        self.carries: list[tuple[str, str]] = []  # scan carries to set up before the final loop
        # The inputs a looped row along the last dim reads from the 16-byte boundary below each row's start (see
        # the kernel's prologue): chunk positions kk count from there, columns ks from the row's start.
        self.shifted_inputs = shifted
        self.shifted = bool(shifted)
        self.store_shifted = False  # set for the output pass of a row written whole (see shifted_store)
        self.unmask_shifted = True  # a shifted row's inside chunks unmasked (see loop; emit_body says where not)
        self.first_chunk_told = False  # the comment on a shifted row's first chunk is written once, not per pass

    def fresh(self, prefix: str = "t") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def spread(self, code: str) -> str:
        """Turn a per-row vector into a tile column (or row) that broadcasts over the chunk."""
        return f"{code}[:, None]" if self.layout == "last" else f"{code}[None, :]"

    def value(self, node: RowNode, scope: Scope) -> str:
        if node.level != "tile":
            scope = self.outer
        if node in scope.names:
            return scope.names[node]
        name = self._compute(node, scope)
        scope.names[node] = name
        return name

    def tile_offsets(self, name: str) -> str:
        """Return the offsets of a tensor's [lanes, chunk] tile (or [chunk, lanes] when strided)."""
        wrapped = self.wrapped.get(name, "")
        if "k" in wrapped:
            along = f"{index_term(name, 'k', 'ks', wrapped)}"
            return f"{name}_base[:, None] + ({along})[None, :]" if self.layout == "last" \
                else f"({along})[:, None] + {name}_base[None, :]"
        if self.layout == "last":
            if self._shifted_load(name):
                return f"{name}_lbase[:, None] + kk[None, :] * {name}_sk"
            return f"{name}_base[:, None] + ks[None, :] * {name}_sk"
        return f"ks[:, None] * {name}_sk + {name}_base[None, :]"

    def _shifted_load(self, name: str) -> bool:
        return name in self.shifted_inputs

    def eviction(self, name: str) -> str:
        """Return the cache hint of a tile load: the pass's policy for full-size inputs, none for broadcast ones."""
        # Inputs broadcast along the rows (a norm's weight) are read by every row and keep the default policy.
        if name not in self.streamed or not self.stream_policy:
            return ""
        return f', eviction_policy="{self.stream_policy}"'

    def _compute(self, node: RowNode, scope: Scope) -> str:
        if node.kind in ("number", "param"):
            return node.text
        if node.kind == "length":
            return "n_reduce_f"
        name = self.fresh()
        if node.kind == "input":
            if node.tile_input:
                # A shifted load also reads the elements around the row that fill its first and last 16 bytes:
                # every use of the tile masks them out again.
                load_mask = "span_mask" if self._shifted_load(node.text) else "mask"
                load = (f"tl.load({node.text}_ptr + ({self.tile_offsets(node.text)}), mask={load_mask}, other=0.0"
                        f"{self.eviction(node.text)})")
            else:
                load = f"tl.load({node.text}_ptr + {node.text}_base, mask=lane_mask, other=0)"
            scope.lines.append(f"{name} = {load}.to(tl.float32)")
            return name
        if node.kind == "pick":
            return self._pick(node, scope, name)
        if node.kind == "index":
            index = "ks[None, :]" if self.layout == "last" else "ks[:, None]"
            scope.lines.append(f"{name} = {index}.to(tl.float32)")
            return name
        if node.kind == "code":
            args = [self.value(a, scope) for a in node.args]
            if node.level == "tile":
                args = [self.spread(c) if a.level == "row" else c for a, c in zip(node.args, args, strict=True)]
            scope.lines.append(f"{name} = {node.text.format(*args)}")
            return name
        if node.kind == "reduce":
            if self.looped:
                raise NotEmittable("internal: a reduction was not computed in its pass")
            scope.lines.append(f"{name} = {self.reduced(node, scope)}")
            return name
        if node.kind == "scan":
            return self._scan(node, scope, name)
        raise NotEmittable(f"internal: unknown node kind {node.kind}")

    def _pick(self, node: RowNode, scope: Scope, name: str) -> str:
        """Load one element per row at a per-row index: a gather instead of a compare over the whole row."""
        values, index = node.args
        if values.kind != "input" or not values.tile_input:
            raise NotEmittable("internal: only a loaded tile input is picked from")
        tensor, at = values.text, self.fresh("at")
        wrapped = self.wrapped.get(tensor, "")
        along = index_term(tensor, "k", at, wrapped) if "k" in wrapped else f"{at} * {tensor}_sk"
        # An index input is read as it is stored: through float32, classes past 2**24 would round.
        source = (f"tl.load({index.text}_ptr + {index.text}_base, mask=lane_mask, other=0)"
                  if index.kind == "input" and not index.tile_input else self.value(index, scope))
        scope.lines += [f"{at} = {source}.to(tl.int32)", "if INDEX_64:",
                        f"    {at} = {at}.to(tl.int64)",
                        f"{name} = tl.load({tensor}_ptr + {tensor}_base + {along}, "
                        f"mask=lane_mask & ({at} >= 0) & ({at} < n_reduce), other=0.0).to(tl.float32)"]
        return name

    def masked(self, arg: RowNode, reducer: str, scope: Scope) -> str:
        """Emit the tile with masked-out elements set to the reducer's identity; return its name."""
        masked = self.fresh("m")
        scope.lines.append(f"{masked} = tl.where(mask, {self.value(arg, scope)}, {IDENTITY[reducer]})")
        self.helpers.update(HELPER_OF.get(reducer, ()))
        return masked

    def reduced(self, node: RowNode, scope: Scope) -> str:
        arg = node.args[0]
        if arg.level != "tile":
            raise NotEmittable("a reduction of a value that is constant along the reduced dims is not lowered")
        if any(n.kind == "scan" for n in topological(arg)):
            raise NotEmittable("a reduction over a scan is not lowered")
        return REDUCE[node.text].format(self.masked(arg, node.text, scope), ax=self.ax)

    def _scan(self, node: RowNode, scope: Scope, name: str) -> str:
        reducer = SCAN_REDUCER[node.text]
        masked = self.masked(node.args[0], reducer, scope)
        scope.lines.append(f"{name} = {_SCAN[node.text].format(masked, ax=self.ax)}")
        if not self.looped:
            return name
        carry = self.fresh("carry")
        self.carries.append((carry, IDENTITY[reducer]))
        merged = self.fresh()
        scope.lines.append(f"{merged} = {COMBINE[reducer].format(name, self.spread(carry))}")
        scope.lines.append(f"{carry} = {COMBINE[reducer].format(carry, REDUCE[reducer].format(masked, ax=self.ax))}")
        return merged

    def chunk(self, start: str, inside: bool = False) -> list[str]:
        mask = ("lane_mask[:, None] & k_mask[None, :]" if self.layout == "last"
                else "k_mask[:, None] & lane_mask[None, :]")
        # With one row per program the row exists, and the mask is the columns' alone (an instruction less).
        one_row = ["if BLOCK_M == 1:", "    mask = k_mask[None, :]", "else:", f"    mask = {mask}"]
        if self.shifted:
            index = [f"kk = {start} + tl.arange(0, BLOCK_K)", "if INDEX_64:", "    kk = kk.to(tl.int64)",
                     "ks = kk - row_shift"]
        else:
            index = [f"ks = {start} + tl.arange(0, BLOCK_K)", "if INDEX_64:", "    ks = ks.to(tl.int64)"]
        if inside:
            # A chunk wholly inside the row (rows along the last dim): constant masks, which the compiler folds
            # out of every load and select.
            return index + ["k_mask = tl.full([BLOCK_K], 1, tl.int1)"] + one_row + (
                ["span_mask = mask"] if self.shifted else [])
        if self.shifted:
            # One unsigned compare per element: a column before the row's start wraps to a large value.
            return index + ["k_mask = ks.to(tl.uint64 if INDEX_64 else tl.uint32) < n_reduce"] + one_row + [
                "span_mask = lane_mask[:, None] & (kk < n_span)[None, :]"]
        return index + ["k_mask = ks < n_reduce", f"mask = {mask}"]

    @property
    def tile_shape(self) -> str:
        """Return the shape of one chunk's tile: [rows, chunk], or [chunk, lanes] when strided."""
        return "[BLOCK_M, BLOCK_K]" if self.layout == "last" else "[BLOCK_K, BLOCK_M]"

    def loop(self, body: Scope, start: str = "0", end: str = "n_reduce", step: str = "BLOCK_K") -> None:
        if self.shifted and end == "n_reduce":
            end = "n_reduce + row_shift"
        # The whole 16 bytes of the row's inner part: bounds that are multiples of ROW_VEC keep the stores wide.
        inner = (["store_mask = lane_mask[:, None] & ((kk >= n_head) & (kk < n_body))[None, :]"]
                 if self.store_shifted else [])
        if self.layout == "last" and (start, step) == ("0", "BLOCK_K") and not self.carries:
            # The chunks wholly inside the row first, without masks (a compare and a select less per element: on an
            # H200, cross-entropy over [8192, 32000] fp16 0.1502 ms against 0.1608, bf16 with no reduction 0.1435
            # against 0.1558), then the same body over the row's last, partial chunk. Not for scans: a cumsum over
            # [2048, 65536] fp32 so written gave wrong sums on an H200 (right in the interpreter, and on the GPU
            # with the same loops masked: the compiler's, with `tl.cumsum` of a tile whose mask folded away).
            first = "0"
            if self.shifted and self.unmask_shifted:
                # A row read from the boundary below its start: the first chunk masked, then unmasked up to the
                # last 16-byte boundary (H200, ms, against every chunk masked: cross-entropy (none) over [8192,
                # 50257] bf16 0.245 against 0.289, softmax fp16 0.319 against 0.332). Under 16-byte chunks: masked.
                if not self.first_chunk_told:
                    self.first_chunk_told = True
                    self.outer.lines += ["# The first chunk holds the elements before the row (masked); the chunks",
                                         "# after it up to the row's last 16-byte boundary hold the row's alone."]
                self.outer.lines += ["n_first = 0", "n_last = n_body", "if ROW_VEC > 1:", "    n_last = 0",
                                     "    if BLOCK_K >= ROW_VEC:", "        n_first = BLOCK_K",
                                     "        n_last = n_body"]
                self.outer.lines += ["        " + line for line in self.chunk("0") + inner + body.lines]
                self.outer.lines += ["n_full = n_first + tl.maximum(n_last - n_first, 0) // BLOCK_K * BLOCK_K"]
                first = "n_first"
            else:
                self.outer.lines += ["n_full = n_reduce // BLOCK_K * BLOCK_K"]
                if self.shifted:
                    self.outer.lines += ["if ROW_VEC > 1:", "    n_full = 0"]
            self.outer.lines.append(f"for k0 in range({first}, n_full, {step}):")
            self.outer.lines += ["    " + line for line in self.chunk("k0", inside=True)
                                 + (["store_mask = mask"] if self.store_shifted else []) + body.lines]
            start = "n_full"
        self.outer.lines.append(f"for k0 in range({start}, {end}, {step}):")
        self.outer.lines += ["    " + line for line in self.chunk("k0") + inner + body.lines]

    def ragged_ends(self, body: Scope) -> None:
        """Write the output pass again over the two ragged ends of each row that the loop's wide stores skip."""
        ends = ["ke = tl.arange(0, 2 * ROW_VEC)",
                "ks = tl.where(ke < ROW_VEC, ke, n_tail - row_shift + ke - ROW_VEC)",
                "if INDEX_64:", "    ks = ks.to(tl.int64)",
                "kk = ks + row_shift",
                "k_mask = (ks < tl.where(ke < ROW_VEC, n_head - row_shift, n_reduce)) & (ks < n_reduce)",
                "mask = lane_mask[:, None] & k_mask[None, :]", "span_mask = mask", "store_mask = mask"]
        self.outer.lines += ["# The row's first and last few elements, a 16-byte group at most at each end.",
                             "if ROW_VEC > 1:"] + ["    " + line for line in ends + body.lines]

    def finish(self, roots: tuple[RowNode, ...], total: Total | None, scope: Scope, output: str) -> None:
        """Store the result, or for a total this program's partial sums (the value's, then the denominator's)."""
        if total is None:
            self.store(roots[0], self.value(roots[0], scope), scope, output)
            return
        if roots[0].level != "row":
            raise NotEmittable("internal: a total of a value that is not one per row")
        for index, node in enumerate(roots):
            offset = "pid" if index == 0 else "tl.num_programs(axis=0) + pid"
            scope.lines.append(f"tl.store({output}_ptr + {offset}, "
                               f"tl.sum(tl.where(lane_mask, {self.value(node, scope)}, 0.0), axis=0))")

    def store(self, root: RowNode, code: str, scope: Scope, output: str) -> None:
        if root.level == "tile" and self.store_shifted:
            # 16 bytes at a time over the row's inner part; its ragged ends are written after the loop.
            scope.lines.append(f"tl.store({output}_ptr + ({output}_lbase[:, None] + kk[None, :] * {output}_sk), "
                               f"{code}.to({output}_ptr.dtype.element_ty), mask=store_mask)")
        elif root.level == "tile":
            scope.lines.append(f"tl.store({output}_ptr + ({self.tile_offsets(output)}), "
                               f"{code}.to({output}_ptr.dtype.element_ty), mask=mask)")
        else:
            scope.lines.append(f"tl.store({output}_ptr + {output}_base, {code}.to({output}_ptr.dtype.element_ty), "
                               "mask=lane_mask)")
