"""Write the split row: each row's chunks dealt out to several programs, the last of which folds their partials."""

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
               wrapped: dict[str, str]) -> KernelSource:
    """Return the body of the split kernel: fold a span of each row, then the last program of a row tile finishes it."""
    roots = (root,)
    level_of = pass_levels(roots, {})
    rows = "lanes" if layout == "last" else "outer * n_lanes + lanes"

    emitter = Emitter(layout, True, streamed, wrapped)
    lines = emitter.outer.lines
    lines += ["split = tl.program_id(axis=1)", f"row_ids = {rows}"]
    found = reduction_pass(emitter, roots, 1, level_of, {})
    # The spans interleave chunk by chunk: the programs running at once read neighbouring chunks, one sweep over
    # memory, rather than each its own distant stretch.
    emitter.loop(found.body, "split * BLOCK_K", "n_reduce", "n_splits * BLOCK_K")
    lines += found.after
    slots = {node: index for index, node in enumerate(found.accumulators)}
    lines += [f"tl.store({_PARTIAL.format(slots[n])}, {acc}, mask=lane_mask)" for n, acc in found.accumulators.items()]

    # One launch, not two: each program takes a ticket once its partials are stored (acq_rel: they are visible to
    # whoever takes a later ticket), and the program with the last ticket folds every split's partials in split
    # order (the same bits each run) and finishes the rows. A second kernel cost a whole launch on the host.
    # The barrier orders every thread's partial stores before the ticket, which one thread takes.
    lines += ["tl.debug_barrier()", "ticket = tl.atomic_add(tickets_ptr + pid, 1, sem=\"acq_rel\")",
              "if ticket == n_splits - 1:"]
    fold = Scope()
    names = {node: emitter.fresh("total") for node in found.accumulators}
    fold.lines += [f"{names[n]} = tl.full([BLOCK_M], {IDENTITY[n.text]}, tl.float32)" for n in names]
    # BLOCK_S splits at a time as a [BLOCK_S, BLOCK_M] tile; loads bypass L1 (".cg"), which may hold stale lines.
    loop = ["ss = s0 + tl.arange(0, BLOCK_S)", "split_mask = (ss < n_splits)[:, None] & lane_mask[None, :]"]
    for node, total in names.items():
        part = emitter.fresh("part")
        emitter.helpers.update(HELPER_OF.get(node.text, ()))
        loop += [f"{part} = tl.load(partials_ptr + ({slots[node]} * n_splits + ss[:, None]) * n_rows + "
                 f"row_ids[None, :], mask=split_mask, other={IDENTITY[node.text]}, cache_modifier=\".cg\")",
                 f"{total} = {COMBINE[node.text].format(total, REDUCE[node.text].format(part, ax=0))}"]
    fold.lines.append("for s0 in range(0, n_splits, BLOCK_S):")
    fold.lines += ["    " + line for line in loop]
    # Row values the finish computes go to the outer scope: here, the branch of the last program.
    emitter.outer = fold
    fold.names.update(names)
    emitter.finish(roots, None, fold, output)
    lines += ["    " + line for line in fold.lines]
    return KernelSource("\n".join(lines), sorted(emitter.helpers))
