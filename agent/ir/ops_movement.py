"""Data movement: views, layout changes, concatenation and indexing."""

from __future__ import annotations

from agent.ir.costs import free
from agent.ir.registry import OpDef, Param, register

X = Param("input", "tensor")
INDEX = Param("index", "tensor")

register(
    OpDef("transpose", "data-movement", (X, Param("dim0", "int"), Param("dim1", "int")), "torch.transpose", free(),
          spellings=("swapaxes", "swapdims")),
    OpDef("permute", "data-movement", (X, Param("dims", "ints")), "torch.permute", free()),
    OpDef("reshape", "data-movement", (X, Param("shape", "ints")), "torch.reshape", free(), spellings=("view",)),
    OpDef("flatten", "data-movement", (X, Param("start_dim", "int", 0), Param("end_dim", "int", -1)),
          "torch.flatten", free()),
    OpDef("unsqueeze", "data-movement", (X, Param("dim", "int")), "torch.unsqueeze", free()),
    OpDef("squeeze", "data-movement", (X, Param("dim", "dims", None)), "torch.squeeze", free()),
    OpDef("flip", "data-movement", (X, Param("dims", "ints")), "torch.flip", free(), spellings=("reverse",)),
    OpDef("cat", "data-movement", (Param("tensors", "tensors"), Param("dim", "int", 0)), "torch.cat", free(),
          spellings=("concat", "concatenate")),
    OpDef("stack", "data-movement", (Param("tensors", "tensors"), Param("dim", "int", 0)), "torch.stack", free()),
    OpDef("gather", "data-movement", (X, Param("dim", "int"), INDEX), "torch.gather", free()),
    OpDef("index_select", "data-movement", (X, Param("dim", "int"), INDEX), "torch.index_select", free()),
    OpDef("embedding", "data-movement", (X, Param("weight", "tensor")), "F.embedding", free(),
          summary="rows of weight picked by the integer input"),
)
