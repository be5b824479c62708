"""The row engine's losses: cross-entropy and NLL along the class dim, and elementwise losses along the last dim.

Each loss is a per-row value; reduction='none' stores it, 'sum' and 'mean' add the rows up in a second, one-program
pass (deterministic: no atomics). Formulas follow PyTorch's own, so NaN and inf come out where PyTorch's do.
"""

from __future__ import annotations

from collections.abc import Callable

from agent.ir.expr import Node
from agent.ir.printer import to_text

from .expander import Expander, NotRowLowerable, Value, attr, operand, scalar
from .graph import EXP_DIFF, INDEX, LENGTH, RowNode, Total, code, number, pick, reduce

_REDUCTIONS = ("none", "sum", "mean", "batchmean")


def _reduction(e: Node) -> str:
    for legacy in ("size_average", "reduce"):
        if attr(e, legacy) is not None:
            raise NotRowLowerable(f"{to_text(e)}: {legacy}= is deprecated in PyTorch and not lowered; "
                                  "say reduction='mean', 'sum' or 'none'")
    found = attr(e, "reduction")
    if found not in _REDUCTIONS:
        raise NotRowLowerable(f"{to_text(e)}: reduction={found!r} is not one of {', '.join(_REDUCTIONS)}")
    return str(found)


def _reduced(x: Expander, e: Node, per_row: RowNode, reduction: str, mean: Total) -> Value:
    """Return the per-row loss as the operator's value, recording the total a 'sum' or 'mean' asks for."""
    if reduction == "none":
        return Value(per_row, "dropped")
    if x.total is not None:
        raise NotRowLowerable(f"{to_text(e)}: two losses reduced to one number each are not lowered")
    x.total, x.total_of = (mean if reduction != "sum" else Total(mean=False)), e
    return Value(per_row, "dropped")


def _nonzero(node: RowNode) -> bool:
    return not (node.kind == "number" and float(node.text) == 0.0)


def _class_loss(x: Expander, e: Node) -> Value:
    """Lower cross_entropy (of logits) or nll_loss (of log-probabilities) over the class dim."""
    logits, target = e.args[0], e.args[1]
    shape = x.shape(logits)
    if not shape:
        raise NotRowLowerable(f"{to_text(e)}: the input has no class dim")
    class_dim = 1 if len(shape) > 1 else 0
    reduction = _reduction(e)
    if reduction == "batchmean":
        raise NotRowLowerable(f"{to_text(e)}: reduction='batchmean' is kl_div's")
    x.reduced_dims(e, logits, class_dim)
    v = x.tile(logits)
    weight = operand(e, "weight")
    if weight is not None and x.shape(weight) != (shape[class_dim],):
        raise NotRowLowerable(f"{to_text(e)}: a class weight of shape {list(x.shape(weight))} (it needs "
                              f"[{shape[class_dim]}])")
    if weight is not None and len(shape) > 2:
        raise NotRowLowerable(f"{to_text(e)}: a class weight with extra dims after the class dim is not lowered yet")
    w = x.tile(weight) if weight is not None else None
    smoothing = scalar(x, e, "label_smoothing") if e.op == "cross_entropy" else number(0.0)
    # log(sum(exp(v - max))): the sum of a shifted exponential, which the looped schedule takes in the same pass as
    # the max (an online softmax); every other sum below reads v itself, so one pass over the row does it all.
    top = reduce("shift_max", v)
    log_sum = code("tl.log({0})", reduce("sum", code(EXP_DIFF, v, top))) if e.op == "cross_entropy" \
        else None
    if x.shape(target) == shape:
        if log_sum is None:
            raise NotRowLowerable(f"{to_text(e)}: nll_loss takes class indices, not a target shaped like the input")
        return _probability_target(x, e, x.tile(target), w, v, top, log_sum, smoothing, reduction)
    if x.shape(target) != shape[:class_dim] + shape[class_dim + 1:]:
        raise NotRowLowerable(f"{to_text(e)}: target of shape {list(x.shape(target))} for input {list(shape)}")
    t = x.row_operand(target)

    def picked(values: RowNode) -> RowNode:
        # A loaded input is gathered at the target (one load a row); anything else is compared along the row.
        if values.kind == "input":
            return pick(values, t)
        return reduce("sum", code("tl.where({0} == {1}, {2}, 0.0)", INDEX, t, values))

    # -log_softmax at the target, as log(sum) - (v[t] - max): no large max is added and taken away again.
    loss = code("({0} - ({1} - {2}))", log_sum, picked(v), top) if log_sum is not None \
        else code("(-{0})", picked(v))
    weight_t = picked(w) if w is not None else None
    if weight_t is not None:
        loss = code("({0} * {1})", weight_t, loss)
    if log_sum is not None and _nonzero(smoothing):
        # PyTorch adds label_smoothing / C times the loss against every class, weighted like the classes:
        # sum_c w_c * (log(sum) - (v_c - max)).
        if w is None:
            spread = code("({0} * {1} - ({2} - {1} * {3}))", log_sum, LENGTH, reduce("sum", v), top)
        else:
            spread = code("({0} * {1} - ({2} - {1} * {3}))", log_sum, reduce("sum", w),
                          reduce("sum", code("({0} * {1})", w, v)), top)
        loss = code("((1.0 - {0}) * {1} + {0} / {2} * {3})", smoothing, loss, LENGTH, spread)
    kept = code("({0} != {1})", t, scalar(x, e, "ignore_index"))
    loss = code("tl.where({0}, {1}, 0.0)", kept, loss)
    denominator = code("tl.where({0}, {1}, 0.0)", kept, weight_t if weight_t is not None else number(1.0))
    return _reduced(x, e, loss, reduction, Total(mean=True, denominator=denominator))


def _probability_target(x: Expander, e: Node, target: RowNode, w: RowNode | None, v: RowNode, top: RowNode,
                        log_sum: RowNode, smoothing: RowNode, reduction: str) -> Value:
    """Lower cross_entropy against class probabilities: sum over classes of target * -log_softmax."""
    if _nonzero(smoothing):
        target = code("((1.0 - {0}) * {1} + {0} / {2})", smoothing, target, LENGTH)
    if w is not None:
        target = code("({0} * {1})", target, w)
    total = reduce("sum", target)
    loss = code("({0} * {1} - ({2} - {3} * {1}))", log_sum, total, reduce("sum", code("({0} * {1})", target, v)),
                top)
    return _reduced(x, e, loss, reduction, Total(mean=True, count="rows"))


Term = Callable[[Expander, Node, RowNode, RowNode], RowNode]


def _pointwise(term: Term) -> Callable[[Expander, Node], Value]:
    """Make the rule of a loss that compares input and target element by element."""

    def rule(x: Expander, e: Node) -> Value:
        first, second = e.args[0], e.args[1]
        shape = x.shape(first)
        if x.shape(second) != shape:
            raise NotRowLowerable(f"{to_text(e)}: input {list(shape)} and target {list(x.shape(second))} differ "
                                  "(a broadcast target is not lowered)")
        if not shape:
            raise NotRowLowerable(f"{to_text(e)}: a loss of two scalars")
        for name in ("weight", "pos_weight"):
            if operand(e, name) is not None:
                raise NotRowLowerable(f"{to_text(e)}: {name}= is not lowered yet")
        reduction = _reduction(e)
        if reduction == "batchmean" and e.op != "kl_div":
            raise NotRowLowerable(f"{to_text(e)}: reduction='batchmean' is kl_div's")
        x.reduced_dims(e, first, len(shape) - 1)
        per_element = term(x, e, x.tile(first), x.tile(second))
        if reduction == "none":
            return Value(per_element, "full")
        mean = Total(mean=True, count="batch" if reduction == "batchmean" else "elements")
        return _reduced(x, e, reduce("sum", per_element), reduction, mean)

    return rule


def _difference(a: RowNode, b: RowNode) -> RowNode:
    return code("tl.abs({0} - {1})", a, b)


def _smooth_l1(x: Expander, e: Node, a: RowNode, b: RowNode) -> RowNode:
    # beta = 0 picks the linear branch everywhere, as PyTorch's l1 fallback does.
    return code("tl.where({0} < {1}, 0.5 * {0} * {0} / {1}, {0} - 0.5 * {1})", _difference(a, b),
                scalar(x, e, "beta"))


def _huber(x: Expander, e: Node, a: RowNode, b: RowNode) -> RowNode:
    return code("tl.where({0} < {1}, 0.5 * {0} * {0}, {1} * ({0} - 0.5 * {1}))", _difference(a, b),
                scalar(x, e, "delta"))


def _kl_div(x: Expander, e: Node, log_q: RowNode, target: RowNode) -> RowNode:
    log_target = attr(e, "log_target")
    if not isinstance(log_target, bool):
        raise NotRowLowerable(f"{to_text(e)}: log_target={log_target!r} must be True or False")
    if log_target:
        return code("(tl.exp({1}) * ({1} - {0}))", log_q, target)
    # xlogy(t, t) - t * input: a zero target contributes nothing.
    return code("(tl.where({1} == 0.0, 0.0, {1} * tl.log({1})) - {1} * {0})", log_q, target)


def _bce_with_logits(x: Expander, e: Node, logits: RowNode, target: RowNode) -> RowNode:
    # (1 - y) * x - log_sigmoid(x), the form PyTorch computes.
    return code("((1.0 - {1}) * {0} - (tl.minimum({0}, 0.0) - tl.log(1.0 + tl.exp(-tl.abs({0})))))", logits, target)


LOSS_RULES: dict[str, Callable[[Expander, Node], Value]] = {
    "cross_entropy": _class_loss,
    "nll_loss": _class_loss,
    "mse_loss": _pointwise(lambda x, e, a, b: code("(({0} - {1}) * ({0} - {1}))", a, b)),
    "l1_loss": _pointwise(lambda x, e, a, b: _difference(a, b)),
    "smooth_l1_loss": _pointwise(_smooth_l1),
    "huber_loss": _pointwise(_huber),
    "kl_div": _pointwise(_kl_div),
    "binary_cross_entropy_with_logits": _pointwise(_bce_with_logits),
}
