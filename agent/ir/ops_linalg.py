"""Matrix products, convolution and attention: the compute-bound ops."""

from __future__ import annotations

from agent.ir.costs import attention_flops, conv_flops, matmul_flops
from agent.ir.registry import OpDef, Param, register

X = Param("input", "tensor")
BIAS = Param("bias", "tensor?")
_CONV = (Param("stride", "ints", 1), Param("padding", "ints", 0, ("same", "valid")), Param("dilation", "ints", 1),
         Param("groups", "int", 1))

register(
    OpDef("matmul", "matmul", (X, Param("other", "tensor")), "torch.matmul", matmul_flops, infix="@",
          spellings=("mm",)),
    OpDef("bmm", "matmul", (X, Param("mat2", "tensor")), "torch.bmm", matmul_flops),
    OpDef("linear", "matmul", (X, Param("weight", "tensor"), BIAS), "F.linear", matmul_flops,
          summary="x @ weight.T + bias"),
    OpDef("conv1d", "conv", (X, Param("weight", "tensor"), BIAS, *_CONV), "F.conv1d", conv_flops),
    OpDef("conv2d", "conv", (X, Param("weight", "tensor"), BIAS, *_CONV), "F.conv2d", conv_flops),
    OpDef("scaled_dot_product_attention", "attention",
          (Param("query", "tensor"), Param("key", "tensor"), Param("value", "tensor"), Param("attn_mask", "tensor?"),
           Param("dropout_p", "scalar", 0.0), Param("is_causal", "bool", False), Param("scale", "scalar", None)),
          "F.scaled_dot_product_attention", attention_flops, spellings=("sdpa",)),
)
