"""nn modules as IR ops: which op a module class computes, from which attributes, with which of its tensors."""

from __future__ import annotations

from typing import Any

from agent.ir import registry
from agent.ir.bind import ShapeTail, Value
from agent.reader.code.values import lift

# Module class -> (IR op, the module attributes that are the op's keywords).
_PLAIN: dict[str, tuple[str, tuple[str, ...]]] = {
    "nn.ReLU": ("relu", ()), "nn.ReLU6": ("relu6", ()), "nn.LeakyReLU": ("leaky_relu", ("negative_slope",)),
    "nn.GELU": ("gelu", ("approximate",)), "nn.SiLU": ("silu", ()), "nn.Sigmoid": ("sigmoid", ()),
    "nn.Tanh": ("tanh", ()), "nn.Softplus": ("softplus", ("beta", "threshold")), "nn.Mish": ("mish", ()),
    "nn.ELU": ("elu", ("alpha",)), "nn.CELU": ("celu", ("alpha",)), "nn.SELU": ("selu", ()),
    "nn.Hardswish": ("hardswish", ()), "nn.Hardsigmoid": ("hardsigmoid", ()),
    "nn.Hardtanh": ("hardtanh", ("min_val", "max_val")), "nn.Softsign": ("softsign", ()),
    "nn.Tanhshrink": ("tanhshrink", ()), "nn.Hardshrink": ("hardshrink", ("lambd",)),
    "nn.Softshrink": ("softshrink", ("lambd",)), "nn.LogSigmoid": ("logsigmoid", ()),
    "nn.Softmax": ("softmax", ("dim",)), "nn.LogSoftmax": ("log_softmax", ("dim",)),
    "nn.Softmin": ("softmin", ("dim",)), "nn.Flatten": ("flatten", ("start_dim", "end_dim")),
    "nn.Linear": ("linear", ()), "nn.Conv1d": ("conv1d", ("stride", "padding", "dilation", "groups")),
    "nn.Conv2d": ("conv2d", ("stride", "padding", "dilation", "groups")),
    "nn.LayerNorm": ("layer_norm", ("eps",)), "nn.RMSNorm": ("rms_norm", ("eps",)),
    "nn.GroupNorm": ("group_norm", ("num_groups", "eps")), "nn.Embedding": ("embedding", ()),
    "nn.CosineSimilarity": ("cosine_similarity", ("dim", "eps")),
    "nn.MSELoss": ("mse_loss", ("reduction",)), "nn.L1Loss": ("l1_loss", ("reduction",)),
    "nn.SmoothL1Loss": ("smooth_l1_loss", ("reduction", "beta")),
    "nn.HuberLoss": ("huber_loss", ("reduction", "delta")), "nn.KLDivLoss": ("kl_div", ("reduction", "log_target")),
    "nn.NLLLoss": ("nll_loss", ("ignore_index", "reduction")),
    "nn.CrossEntropyLoss": ("cross_entropy", ("ignore_index", "reduction", "label_smoothing")),
    "nn.BCEWithLogitsLoss": ("binary_cross_entropy_with_logits", ("reduction",)),
    **{f"nn.BatchNorm{n}d": ("batch_norm", ("eps",)) for n in (1, 2, 3)},
    **{f"nn.InstanceNorm{n}d": ("instance_norm", ("eps",)) for n in (1, 2, 3)},
}
# Modules that compute nothing in eval mode.
_IDENTITY = {"nn.Identity", "nn.Dropout", "nn.Dropout1d", "nn.Dropout2d", "nn.Dropout3d", "nn.AlphaDropout",
             "nn.FeatureAlphaDropout"}
MODULES = frozenset(_PLAIN) | _IDENTITY

Call = tuple[str, list[Any], dict[str, Any]]


def module_call(cls: str, attrs: dict[str, Any], tensors: dict[str, Value], args: list[Any],
                kwargs: dict[str, Any]) -> Call | str | None:
    """Return (op, positional, keywords) for a module call, None when it changes nothing, or why it cannot be read."""
    if cls in _IDENTITY:
        return None
    op_name, keys = _PLAIN[cls]
    given = {k: lift(attrs[k]) for k in keys if k in attrs}
    why = _refusal(cls, attrs)
    if why:
        return why
    if op_name in ("layer_norm", "rms_norm"):
        shape = attrs["normalized_shape"]
        given["normalized_ndim"] = ShapeTail(len(shape) if isinstance(shape, list) else 1)
    if op_name == "batch_norm":
        given["training"] = lift(False)
    if op_name == "instance_norm":
        given["use_input_stats"] = lift(not attrs.get("track_running_stats", False))
    op = registry.get(op_name)
    operands = [p.name for p in op.operands]
    for name in operands[len(args):]:
        if name in tensors:
            given[name] = tensors[name]
    return op_name, list(args), {**given, **kwargs}


def _refusal(cls: str, attrs: dict[str, Any]) -> str | None:
    """Say why a module's configuration is outside the IR, if it is."""
    if cls in ("nn.Softmax", "nn.LogSoftmax", "nn.Softmin") and attrs.get("dim") is None:
        return f"{cls}() without dim picks the axis from the input's rank; give dim"
    if cls.startswith("nn.Conv") and attrs.get("padding_mode", "zeros") != "zeros":
        return f"{cls} with padding_mode={attrs['padding_mode']!r} is not in the IR (zero padding only)"
    if cls.startswith("nn.BatchNorm") and not attrs.get("track_running_stats", True):
        return f"{cls} without running statistics normalizes by the batch (training mode), which is not in the IR"
    if cls == "nn.Embedding" and attrs.get("max_norm") is not None:
        return "nn.Embedding with max_norm renormalizes its weight in place, which is not in the IR"
    return None
