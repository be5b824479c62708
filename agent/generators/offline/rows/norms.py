"""The normalizations' rules for the row engine: layer, RMS, batch (inference), instance and group norm."""

from __future__ import annotations

from collections.abc import Callable

import torch

from agent.ir.expr import Const, Node, Ref
from agent.ir.infer import torch_dtype
from agent.ir.printer import to_text

from .expander import Expander, NotRowLowerable, Value, attr, full_rule, operand, scalar
from .graph import RowNode, code, mean, number


def _last_dims(x: Expander, e: Node) -> object:
    count = attr(e, "normalized_ndim")
    if not isinstance(count, int) or count < 1:
        raise NotRowLowerable(f"{to_text(e)}: normalized_ndim={count!r} must be a positive integer")
    return tuple(range(-count, 0))


def _affine(x: Expander, e: Node, v: RowNode) -> RowNode:
    for name in ("weight", "bias"):
        given = operand(e, name)
        if given is not None:
            v = code("({0} * {1})" if name == "weight" else "({0} + {1})", v, x.tile(given))
    return v


def _layer_norm(x: Expander, e: Node, v: RowNode) -> RowNode:
    centred = code("({0} - {1})", v, mean(v))
    variance = mean(code("({0} * {0})", centred))
    return _affine(x, e, code("({0} * tl.rsqrt({1} + {2}))", centred, variance, scalar(x, e, "eps")))


def _rms_norm(x: Expander, e: Node, v: RowNode) -> RowNode:
    eps = e.attr("eps", None)
    if eps is None or (isinstance(eps, Const) and eps.value is None):
        # PyTorch takes the machine epsilon of the input's dtype when eps is not given.
        eps_node = number(torch.finfo(torch_dtype(x.tensor(e.args[0]).dtype)).eps)
    else:
        eps_node = scalar(x, e, "eps")
    return _affine(x, e, code("({0} * tl.rsqrt({1} + {2}))", v, mean(code("({0} * {0})", v)), eps_node))


def _batch_norm(x: Expander, e: Node) -> Value:
    """Lower batch_norm with running statistics: per-channel vectors read along dim 1, no reduction."""
    shape = x.shape(e.args[0])
    if len(shape) < 2:
        raise NotRowLowerable(f"{to_text(e)}: batch_norm needs a channel dim (input of rank 2 or more)")
    x.reduced_dims(e, e.args[0], 1)
    v = x.tile(e.args[0])
    channel: dict[str, RowNode] = {}
    for name in ("running_mean", "running_var", "weight", "bias"):
        given = operand(e, name)
        if given is None:
            continue
        x.view(e, given, "channel", (shape[1],))
        channel[name] = x.tile(given)
    if "running_mean" not in channel or "running_var" not in channel:
        raise NotRowLowerable(f"{to_text(e)}: inference batch_norm needs running_mean and running_var")
    out = code("(({0} - {1}) * tl.rsqrt({2} + {3}))", v, channel["running_mean"], channel["running_var"],
               scalar(x, e, "eps"))
    if "weight" in channel:
        out = code("({0} * {1})", out, channel["weight"])
    if "bias" in channel:
        out = code("({0} + {1})", out, channel["bias"])
    return Value(out, "full")


def _instance_norm(x: Expander, e: Node, v: RowNode) -> RowNode:
    for name in ("running_mean", "running_var"):
        if operand(e, name) is not None:
            raise NotRowLowerable(f"{to_text(e)}: instance_norm with {name} is not lowered (it matters only when "
                                  "use_input_stats=False)")
    if attr(e, "use_input_stats") is not True:
        raise NotRowLowerable(f"{to_text(e)}: instance_norm with use_input_stats=False is not lowered")
    channels = x.shape(e.args[0])[1]
    affine: dict[str, RowNode] = {}
    for name in ("weight", "bias"):
        given = operand(e, name)
        if given is None:
            continue
        if not isinstance(given, Ref) or x.shape(given) != (channels,):
            raise NotRowLowerable(f"{to_text(e)}: {name} must be an input of shape [{channels}]")
        # One value per (sample, channel) row: read once per row, lined up with the [N, C] rows.
        affine[name] = x.row_operand(given)
    return _scaled_and_shifted(x, e, v, affine.get("weight"), affine.get("bias"))


def _group_norm(x: Expander, e: Node) -> Value:
    """Lower group_norm: the [N, C, *S] input seen as [N, groups, C / groups, S], the last two dims reduced."""
    given = e.args[0]
    shape = x.shape(given)
    groups = attr(e, "num_groups")
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise NotRowLowerable(f"{to_text(e)}: num_groups={groups!r} must be a positive integer")
    if len(shape) < 2 or shape[1] % groups:
        raise NotRowLowerable(f"{to_text(e)}: {groups} groups must divide the channel dim (dim 1) of {list(shape)}")
    x.view(e, given, "grouped", shape)
    x.groups = groups
    x.fix_dims(e, (2, 3), 4)
    v = x.tile(given)
    affine: dict[str, RowNode] = {}
    for name in ("weight", "bias"):
        found = operand(e, name)
        if found is not None:
            x.view(e, found, "channel", (shape[1],))
            affine[name] = x.tile(found)
    return Value(_scaled_and_shifted(x, e, v, affine.get("weight"), affine.get("bias")), "full")


def _scaled_and_shifted(x: Expander, e: Node, v: RowNode, weight: RowNode | None, bias: RowNode | None) -> RowNode:
    """Normalize v by its row statistics as PyTorch's group and instance norms do: v * a + (bias - mean * a)."""
    # a = rstd * weight; written in PyTorch's order so that an inf weight or bias gives NaN where eager does.
    centred = code("({0} - {1})", v, mean(v))
    rstd = code("tl.rsqrt({0} + {1})", mean(code("({0} * {0})", centred)), scalar(x, e, "eps"))
    scale = rstd if weight is None else code("({0} * {1})", rstd, weight)
    shift = code("(-{0} * {1})", scale, mean(v))
    if bias is not None:
        shift = code("({0} + {1})", shift, bias)
    return code("({0} * {1} + {2})", v, scale, shift)


def _spatial_dims(x: Expander, e: Node) -> object:
    rank = len(x.shape(e.args[0]))
    if rank < 3:
        raise NotRowLowerable(f"{to_text(e)}: instance_norm needs spatial dims (input of rank 3 or more)")
    return tuple(range(2, rank))


NORM_RULES: dict[str, Callable[[Expander, Node], Value]] = {
    "layer_norm": full_rule(_layer_norm, _last_dims),
    "rms_norm": full_rule(_rms_norm, _last_dims),
    "batch_norm": _batch_norm,
    "instance_norm": full_rule(_instance_norm, _spatial_dims),
    "group_norm": _group_norm,
}
