"""Write the split row: each row's chunks dealt out to several programs, then a kernel that folds their partials."""

from __future__ import annotations

from .emit import COMBINE, HELPER_OF, REDUCE, Emitter, KernelSource, Layout, Scope
from .graph import IDENTITY, RowNode, Total, topological
from .passes import online_sums, pass_levels, reduction_pass

# Where a program's partial of accumulator `{0}` for its split goes: [accumulators, splits, rows] in float32.
_PARTIAL = "partials_ptr + ({0} * n_splits + split) * n_rows + row_ids"


def split_refusal(root: RowNode, total: Total | None) -> str | None:
    """Say why a graph cannot be split along its rows (None when it can): one level of reductions, one value a row."""
    if total is not None:
        return "a loss reduced to one number already adds up partial sums per program"
    if root.level != "row":
        return "the output has the input's shape (a softmax or a norm writes every element)"
    roots = (root,)
    if not any(n.kind == "reduce" for n in topological(root)):
        return "nothing is reduced"
    online = online_sums(roots)
    if online:
        return "a running max and its sum of exponentials are taken together"
    if max(pass_levels(roots, online).values()) > 1:
        return "a reduction reads another (a variance or a norm's centred sum) and would need a split per level"
    return None


def emit_split(root: RowNode, layout: Layout, output: str, streamed: frozenset[str],
               wrapped: dict[str, str]) -> tuple[KernelSource, KernelSource]:
    """Return the bodies of the partial kernel (one span of a row per program) and of the combining kernel."""
    roots = (root,)
    level_of = pass_levels(roots, {})
    rows = "lanes" if layout == "last" else "outer * n_lanes + lanes"

    partial = Emitter(layout, True, streamed, wrapped)
    partial.last_pass = True
    partial.outer.lines += ["split = tl.program_id(axis=1)", f"row_ids = {rows}"]
    found = reduction_pass(partial, roots, 1, level_of, {})
    # The spans interleave chunk by chunk: the programs running at once read neighbouring chunks, one sweep over
    # memory, rather than each its own distant stretch.
    partial.loop(found.body, "split * BLOCK_K", "n_reduce", "n_splits * BLOCK_K")
    partial.outer.lines += found.after
    accumulators = found.accumulators
    slots = {node: index for index, node in enumerate(accumulators)}
    partial.outer.lines += [f"tl.store({_PARTIAL.format(slots[n])}, {acc}, mask=lane_mask)"
                            for n, acc in accumulators.items()]

    # The combining kernel folds BLOCK_S splits at a time as a [BLOCK_S, BLOCK_M] tile: a loop of one load per
    # split would wait on each load in turn.
    combine = Emitter(layout, True, streamed, wrapped)
    combine.outer.lines.append(f"row_ids = {rows}")
    names = {node: combine.fresh("acc") for node in accumulators}
    combine.outer.lines += [f"{names[n]} = tl.full([BLOCK_M], {IDENTITY[n.text]}, tl.float32)" for n in names]
    loop = Scope(["ss = s0 + tl.arange(0, BLOCK_S)", "split_mask = (ss < n_splits)[:, None] & lane_mask[None, :]"])
    parts = {node: combine.fresh("part") for node in accumulators}
    loop.lines += [f"{parts[n]} = tl.load(partials_ptr + ({slots[n]} * n_splits + ss[:, None]) * n_rows + "
                   f"row_ids[None, :], mask=split_mask, other={IDENTITY[n.text]})" for n in accumulators]
    for node, acc in names.items():
        combine.helpers.update(HELPER_OF.get(node.text, ()))
        folded = REDUCE[node.text].format(parts[node], ax=0)
        loop.lines.append(f"{acc} = {COMBINE[node.text].format(acc, folded)}")
    combine.outer.lines.append("for s0 in range(0, n_splits, BLOCK_S):")
    combine.outer.lines += ["    " + line for line in loop.lines]
    combine.outer.names.update(names)
    combine.finish(roots, None, combine.outer, output)
    return (KernelSource("\n".join(partial.outer.lines), sorted(partial.helpers)),
            KernelSource("\n".join(combine.outer.lines), sorted(combine.helpers)))

