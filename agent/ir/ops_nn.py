"""Normalizations and losses."""

from __future__ import annotations

from agent.ir.costs import per_input
from agent.ir.registry import OpDef, Param, register

X = Param("input", "tensor")
TARGET = Param("target", "tensor")
WEIGHT = Param("weight", "tensor?")
BIAS = Param("bias", "tensor?")
# layer_norm and rms_norm normalize the last `normalized_ndim` dims; a literal normalized_shape is read into it.
NDIM = Param("normalized_ndim", "int", 1, aliases=("normalized_shape",))
REDUCTION = Param("reduction", "str", "mean", ("mean", "sum", "none"))
LEGACY = (Param("size_average", "bool", None), Param("reduce", "bool", None))


def _norm(name: str, torch: str, flops: float, *params: Param, positive: tuple[str, ...] = ()) -> OpDef:
    return OpDef(name, "norm", (X, *params), torch, per_input(flops), positive=positive)


def _loss(name: str, torch: str, flops: float, *params: Param, positive: tuple[str, ...] = ()) -> OpDef:
    return OpDef(name, "loss", (X, TARGET, *params), torch, per_input(flops), positive=positive)


register(
    _norm("layer_norm", "F.layer_norm({input}, {input}.shape[-{normalized_ndim}:], {weight}, {bias}, eps={eps})", 8,
          NDIM, WEIGHT, BIAS, Param("eps", "scalar", 1e-5)),
    _norm("rms_norm", "F.rms_norm({input}, {input}.shape[-{normalized_ndim}:], {weight}, eps={eps})", 5,
          NDIM, WEIGHT, Param("eps", "scalar", None)),
    _norm("normalize", "F.normalize", 4, Param("p", "scalar", 2.0), Param("dim", "int", 1),
          Param("eps", "scalar", 1e-12)),
    _norm("group_norm", "F.group_norm", 8, Param("num_groups", "int"), WEIGHT, BIAS, Param("eps", "scalar", 1e-5)),
    _norm("batch_norm", "F.batch_norm({input}, {running_mean}, {running_var}, {weight}, {bias}, training=False, "
          "eps={eps})", 4, Param("running_mean", "tensor"), Param("running_var", "tensor"), WEIGHT, BIAS,
          Param("training", "bool", False), Param("momentum", "scalar", 0.1), Param("eps", "scalar", 1e-5),
          positive=("running_var",)),
    _norm("instance_norm", "F.instance_norm", 8, Param("running_mean", "tensor?"), Param("running_var", "tensor?"),
          WEIGHT, BIAS, Param("use_input_stats", "bool", True), Param("momentum", "scalar", 0.1),
          Param("eps", "scalar", 1e-5)),
    _loss("cross_entropy", "F.cross_entropy", 6, WEIGHT, *LEGACY[:1], Param("ignore_index", "int", -100),
          LEGACY[1], REDUCTION, Param("label_smoothing", "scalar", 0.0)),
    _loss("nll_loss", "F.nll_loss", 1, WEIGHT, *LEGACY[:1], Param("ignore_index", "int", -100), LEGACY[1],
          REDUCTION),
    _loss("mse_loss", "F.mse_loss", 3, *LEGACY, REDUCTION),
    _loss("l1_loss", "F.l1_loss", 3, *LEGACY, REDUCTION),
    _loss("smooth_l1_loss", "F.smooth_l1_loss", 5, *LEGACY, REDUCTION, Param("beta", "scalar", 1.0)),
    _loss("huber_loss", "F.huber_loss", 5, REDUCTION, Param("delta", "scalar", 1.0)),
    _loss("kl_div", "F.kl_div", 4, *LEGACY, Param("reduction", "str", "mean", ("mean", "sum", "none", "batchmean")),
          Param("log_target", "bool", False), positive=("target",)),  # probabilities: log(target) is taken
    _loss("binary_cross_entropy_with_logits", "F.binary_cross_entropy_with_logits", 8, WEIGHT, *LEGACY,
          REDUCTION, Param("pos_weight", "tensor?")),
    OpDef("cosine_similarity", "loss", (Param("x1", "tensor"), Param("x2", "tensor"), Param("dim", "int", 1),
                                        Param("eps", "scalar", 1e-8)), "F.cosine_similarity", per_input(6)),
)
