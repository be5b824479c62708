"""Plan the looped schedule's passes over a row and write them: one loop per level of reductions, then the output."""

from __future__ import annotations

from dataclasses import dataclass

from .emit import COMBINE, REDUCE, Emitter, KernelSource, Layout, Scope, shifted_store
from .graph import EXP_DIFF, IDENTITY, RowNode, Total, depth, topological


def online_sums(roots: tuple[RowNode, ...]) -> dict[RowNode, RowNode]:
    """Find the sums of exp(a - max(a)) over a loaded value a: each maps to its max, taken in the same pass."""
    found = {}
    for node in topological(*roots):
        if node.kind == "reduce" and node.text == "sum" and node.args[0].text == EXP_DIFF:
            shifted, top = node.args[0].args
            if top.kind == "reduce" and top.text == "shift_max" and top.args[0] == shifted and depth(shifted) == 0:
                found[node] = top
    return found


def pass_levels(roots: tuple[RowNode, ...], online: dict[RowNode, RowNode]) -> dict[RowNode, int]:
    """Give each reduction the pass it is taken in: one more than the reductions it reads (an online sum: 1)."""
    level: dict[RowNode, int] = {}
    for node in topological(*roots):
        inner = max((level[a] for a in node.args), default=0)
        level[node] = 1 if node in online else inner + 1 if node.kind == "reduce" else inner
    return level


def root_values(root: RowNode, total: Total | None = None) -> tuple[RowNode, ...]:
    """Return the values a kernel computes per row: the root, and a total's denominator where it has one."""
    return (root,) if total is None or total.denominator is None else (root, total.denominator)


def unmasks_shifted_rows(root: RowNode, total: Total | None = None) -> bool:
    """Say whether a looped row read from the boundary below its start takes its inside chunks unmasked.

    Faster where the row is written back or reduced online only; slower where a value per row is folded into tile
    accumulators (H200, ms: logsumexp over [4096, 40001] fp16 0.205 against 0.172 with every chunk masked, over
    [4096, 50257] bf16 0.243 against 0.223; cross-entropy with label smoothing over [4096, 50257] fp32 0.235
    against 0.232).
    """
    roots = root_values(root, total)
    online = online_sums(roots)
    paired = set(online) | set(online.values())
    return root.level == "tile" or not any(n.kind == "reduce" and n not in paired for n in topological(*roots))


def reduction_levels(root: RowNode, total: Total | None = None) -> tuple[int, bool]:
    """Return the levels of nested reductions and whether a softmax's sum rides with its running max in one."""
    roots = root_values(root, total)
    online = online_sums(roots)
    return max(pass_levels(roots, online).values()), bool(online)


def looped_passes(root: RowNode, total: Total | None = None) -> int:
    """Count the looped schedule's passes over a row: one per level of reductions, one more to write a tile."""
    return reduction_levels(root, total)[0] + (1 if root.level == "tile" else 0)


@dataclass
class ReductionPass:
    """One loop over the row: accumulator set-up (in the outer scope), the chunk body, and the lines after it."""

    body: Scope
    accumulators: dict[RowNode, str]
    after: list[str]


def reduction_pass(emitter: Emitter, roots: tuple[RowNode, ...], level: int, level_of: dict[RowNode, int],
                   online: dict[RowNode, RowNode]) -> ReductionPass:
    """Declare one pass's accumulators, write the loop body that folds a chunk into them and the final reductions."""
    # Chunks fold into tile-shaped accumulators element by element and the rows are reduced once, after the loop:
    # a reduction across the program per chunk puts a barrier between each chunk's loads and the next's (H100,
    # group_norm of [8, 256, 64, 64] fp16: 23.2 us against 26.3).
    found = ReductionPass(Scope(), {}, [])
    body, tiles = found.body, {}
    for node in [n for n in topological(*roots) if n.kind == "reduce" and level_of[n] == level]:
        acc = emitter.fresh("acc")
        found.accumulators[node] = acc
        if node in online or any(top is node for top in online.values()):  # an online pair: one value per row
            emitter.outer.lines.append(f"{acc} = tl.full([BLOCK_M], {IDENTITY[node.text]}, tl.float32)")
        else:
            tiles[node] = f"{acc}_tile"
            emitter.outer.lines.append(f"{tiles[node]} = tl.full({emitter.tile_shape}, {IDENTITY[node.text]}, "
                                       "tl.float32)")
    for node, acc in found.accumulators.items():
        if node in online:
            continue  # taken with its max below
        sums = [n for n, top in online.items() if top is node]
        if not sums:
            masked = emitter.masked(node.args[0], node.text, body)
            body.lines.append(f"{tiles[node]} = {COMBINE[node.text].format(tiles[node], masked)}")
            found.after.append(f"{acc} = {REDUCE[node.text].format(tiles[node], ax=emitter.ax)}")
            continue
        # Online softmax: rescale the running sums to the new max, then add this chunk's terms. Per row, not per
        # element: rescaling sum tiles cost 6-7% of the copy bandwidth (H100, cross-entropy over 32000 columns).
        new_top = emitter.fresh("top")
        body.lines.append(f"{new_top} = tl.maximum({acc}, {emitter.reduced(node, body)})")
        for total_node in sums:
            scale, terms = emitter.fresh("scale"), emitter.fresh("terms")
            shifted = emitter.value(total_node.args[0].args[0], body)
            body.lines += [
                f'{scale} = tl.where({new_top} == -float("inf"), 0.0, {EXP_DIFF.format(acc, new_top)})',
                f"{terms} = tl.where(mask, {EXP_DIFF.format(shifted, emitter.spread(new_top))}, 0.0)",
                f"{found.accumulators[total_node]} = {found.accumulators[total_node]} * {scale} + "
                f"tl.sum({terms}, axis={emitter.ax})",
            ]
        body.lines.append(f"{acc} = {new_top}")
    return found


def emit_body(root: RowNode, layout: Layout, looped: bool, output: str, total: Total | None = None,
              streamed: frozenset[str] = frozenset(), wrapped: dict[str, str] | None = None,
              shifted: tuple[str, ...] = ()) -> KernelSource:
    """Return the kernel body after the lane set-up: loads, passes, the store (of per-program partials for a total).

    `streamed` names the inputs of the iteration shape's full size: each element is read once per pass.
    `wrapped` gives, per input, the groups of dims it spans only in part (see index_term).
    `shifted` names the inputs a looped row reads from the 16-byte boundary below each row's start.
    """
    emitter = Emitter(layout, looped, streamed, wrapped or {}, shifted)
    # The streamed loads' cache hint, per pass. Measured on an H100: a row sum over [8192, 4096] fp32 took 56 us
    # with the default policy and 50 us with evict_first (torch.compile: 50 us). A looped row's earlier passes keep
    # it for the next one (evict_last). A whole row written back as a tile takes no hint: evict_first there slowed
    # log_softmax over [4096, 32000] fp32 7% on an H200 (2% on an H100), l2 normalize and instance_norm fp32 3-6%,
    # and no such kernel ran faster with it.
    roots = root_values(root, total)
    if not looped:
        emitter.stream_policy = "" if root.level == "tile" else "evict_first"
        emitter.outer.lines += emitter.chunk("0")
        emitter.finish(roots, total, emitter.outer, output)
        return KernelSource("\n".join(emitter.outer.lines), sorted(emitter.helpers))
    online = online_sums(roots)
    emitter.unmask_shifted = unmasks_shifted_rows(root, total)
    level_of = pass_levels(roots, online)
    levels = max(level_of.values())
    for level in range(1, levels + 1):
        emitter.stream_policy = "evict_first" if level == levels and root.level != "tile" else "evict_last"
        found = reduction_pass(emitter, roots, level, level_of, online)
        emitter.loop(found.body)
        emitter.outer.lines += found.after
        for node, acc in found.accumulators.items():
            emitter.outer.names[node] = acc
    if root.level == "tile":
        emitter.stream_policy = "evict_first"
        emitter.store_shifted = emitter.shifted and shifted_store(root)
        final = Scope()
        emitter.finish(roots, total, final, output)
        emitter.outer.lines += [f"{carry} = tl.full([BLOCK_M], {identity}, tl.float32)"
                                for carry, identity in emitter.carries]
        emitter.loop(final)
        if emitter.store_shifted:
            emitter.ragged_ends(final)
    else:
        emitter.finish(roots, total, emitter.outer, output)
    return KernelSource("\n".join(emitter.outer.lines), sorted(emitter.helpers))
