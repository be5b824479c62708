"""Read torch functions, Tensor methods, operators and nn modules of a traced graph into IR ops."""

from __future__ import annotations

from typing import Any

from agent.ir import registry
from agent.ir.bind import DType, ShapeTail, Value
from agent.ir.expr import Const
from agent.ir.registry import OpDef
from agent.reader.code.modules import MODULES, module_call
from agent.reader.code.parts import PartsReader
from agent.reader.code.values import Marker, Reading, plain

_PREFIXES = ("torch.nn.functional.", "torch.special.", "torch.linalg.", "torch.")
_OPERATORS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "pow": "pow", "matmul": "matmul",
              "neg": "neg", "gt": "gt", "ge": "ge", "lt": "lt", "le": "le", "eq": "eq", "ne": "ne",
              "and_": "logical_and", "or_": "logical_or", "invert": "logical_not", "abs": "abs"}
_OPERATOR_WORDS = {"floordiv": "floor division (//)", "mod": "the % operator", "lshift": "<<", "rshift": ">>",
                   "xor": "^ (xor)"}
_IDENTITY = {"contiguous", "clone", "detach", "cpu", "cuda", "torch.clone", "torch.detach", "operator.pos"}
_CASTS = {"float": "float32", "half": "float16", "bfloat16": "bfloat16", "double": "float64", "long": "int64",
          "int": "int32", "bool": "bool"}
_LIKE = {"torch.zeros_like": 0, "torch.ones_like": 1, "torch.full_like": None}
_DROPOUT = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
_PIECES = ("chunk", "split", "tensor_split", "unbind")
_NORMS = ("torch.nn.functional.layer_norm", "torch.layer_norm", "torch.nn.functional.rms_norm", "torch.rms_norm")


class CallReader(PartsReader):
    """The calls of a graph, each read into an IR node (or recorded as unmapped or unreadable)."""

    def function(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Reading:
        """Read a call_function node (with inplace=True it also replaces its first argument for later nodes)."""
        result = self._function(name, args, kwargs)
        if plain(kwargs.get("inplace", Const(False))) is True:
            self._alias(result)
        return result

    def _function(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Reading:
        short = name.rsplit(".", 1)[-1]
        if name in _IDENTITY:
            return args[0]  # type: ignore[no-any-return]
        if name == "operator.getitem":
            return self.getitem(args[0], args[1])
        if name == "builtins.getattr":
            return self.attribute(args[0], args[1])
        if name in ("torch.max", "torch.min"):
            return self.extreme(short, list(args), kwargs)
        if name in _LIKE:
            fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
            value = _LIKE[name] if name != "torch.full_like" else plain(fill) if fill is not None else None
            dtype = ((self.current.get("value") or {}).get("tensor") or {}).get("dtype", "float32")
            if not isinstance(value, (int, float)):
                return self.unmapped_op(name)
            number = bool(value) if dtype == "bool" else int(value) if dtype.startswith("int") else float(value)
            self.notes.append(f"{name}(…) is read as the number {number!r}, broadcast where it is used")
            return Const(number)
        if name.startswith("torch.nn.functional.") and short in _DROPOUT or name in ("torch.dropout",):
            training = kwargs.get("training", args[2] if len(args) > 2 else Const(name == "torch.dropout"))
            if plain(training):
                return self.problem(f"{self.where()}: dropout in training mode is random; no kernel can match it")
            return args[0]  # type: ignore[no-any-return]
        if name in (f"torch.{m}" for m in _PIECES):
            return self.pieces(short, args[0], list(args[1:]), kwargs)
        if name in _NORMS:
            return self.norm("rms_norm" if "rms" in short else "layer_norm", list(args), kwargs)
        if name.startswith("operator."):
            if short in _OPERATORS:
                return self.call(_OPERATORS[short], list(args), kwargs)
            return self.unmapped_op(_OPERATOR_WORDS.get(short, name))
        op = _torch_op(name)
        if op is not None:
            return self.call(op, list(args), kwargs)
        return self.unmapped_op(name)

    def norm(self, op: str, args: list[Any], kwargs: dict[str, Any]) -> Reading:
        """Read F.layer_norm / F.rms_norm with its normalized_shape as `x.shape[-k:]` (valid on any sizes)."""
        shape = kwargs.pop("normalized_shape") if "normalized_shape" in kwargs else args.pop(1)
        sizes = plain(shape)
        sizes = sizes if isinstance(sizes, tuple) else (sizes,)
        return self.call(op, [args[0], ShapeTail(len(sizes)), *args[1:]], kwargs)

    # ---------------------------------------------------------------- methods

    def method(self, name: str, receiver: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Reading:
        """Read a call_method node (an in-place method also replaces its receiver for later nodes)."""
        if name.endswith("_") and not name.startswith("_") and name[:-1]:
            result = self.method(name[:-1], receiver, args, kwargs)
            self._alias(result)
            return result
        if name in _IDENTITY:
            return receiver  # type: ignore[no-any-return]
        if name in _CASTS and not args:
            return self.cast(receiver, DType(_CASTS[name]))
        if name in ("to", "type", "type_as"):
            return self.to(receiver, [*args, *kwargs.values()])
        if name in ("view", "reshape", "permute"):
            sizes = args[0] if len(args) == 1 and isinstance(args[0], tuple) else tuple(args)
            if any(isinstance(s, (DType, Marker)) for s in sizes):
                return self.unmapped_op(f"Tensor.{name} to a dtype")
            return self.call("permute" if name == "permute" else "reshape", [receiver, sizes], {})
        if name in ("max", "min"):
            return self.extreme(name, [receiver, *args], kwargs)
        if name == "t":
            return self.call("transpose", [receiver, Const(0), Const(1)], {}) if len(self.shape_of(receiver)) == 2 \
                else receiver
        if name in ("clamp_min", "clamp_max"):
            bound = name.removeprefix("clamp_")
            return self.call("clamp", [receiver], {bound: args[0] if args else kwargs[bound]})
        if name == "masked_fill":
            return self.call("where", [args[0], args[1], receiver], {})
        if name == "where":
            return self.call("where", [args[0], receiver, *args[1:]], kwargs)
        if name in _PIECES:
            return self.pieces(name, receiver, list(args), kwargs)
        op = registry.resolve(name)
        if op is not None and op.name != "cast":
            return self.call(op, [receiver, *args], kwargs)
        return self.unmapped_op(f"Tensor.{name}")

    def module(self, info: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Reading:
        """Read a call_module node: the module's class, attributes and tensors."""
        cls = info["class"]
        if cls not in MODULES:
            return self.unmapped_op(cls)
        tensors: dict[str, Value] = {k: self.module_tensor(p) for k, p in info["tensors"].items() if p}  # type: ignore
        built = module_call(cls, info["attrs"], tensors, list(args), kwargs)
        if isinstance(built, str):
            return self.problem(f"{self.where()}: {built}")
        if built is None:
            return args[0]  # type: ignore[no-any-return]
        op, positional, keywords = built
        return self.call(op, positional, keywords)


def _torch_op(name: str) -> OpDef | None:
    """Return the op of `torch.X`, `torch.nn.functional.X`, `torch.special.X` or `torch.linalg.X`."""
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            rest = name.removeprefix(prefix)
            return registry.resolve(rest) if "." not in rest else None
    return None
