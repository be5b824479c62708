"""Calls whose results have parts or change a type: max/min over a dim, chunk/split, indexing, .T, .to()."""

from __future__ import annotations

from typing import Any

from agent.ir import registry
from agent.ir.bind import DType
from agent.ir.expr import Const, Expr
from agent.reader.code.base import ReaderBase
from agent.reader.code.values import Extreme, Marker, Pieces, Reading, is_tensor, plain


class PartsReader(ReaderBase):
    """Read results with parts (values and indices, pieces), indexing, attributes and casts."""

    def cast(self, receiver: Expr, dtype: DType) -> Expr:
        """Cast to a dtype; a cast to the dtype the tensor has already is no node at all."""
        return receiver if self.dtype_of(receiver) == dtype.name else self.call("cast", [receiver, dtype], {})

    def to(self, receiver: Expr, args: list[Any]) -> Reading:
        """Read `.to(dtype)`, `.to(other)`, `.type_as(other)` as a cast; `.to(device)` changes nothing."""
        for value in args:
            if isinstance(value, DType):
                return self.cast(receiver, value)
            if is_tensor(value):
                return self.cast(receiver, DType(self.dtype_of(value)))
            if isinstance(value, Marker) and value.kind == "dtype":
                return self.problem(f"{self.where()}: the IR does not carry dtype {value.value}")
        return receiver

    def extreme(self, kind: str, args: list[Any], kwargs: dict[str, Any]) -> Reading:
        """Read max/min: of two tensors (maximum), over a dim (values and indices), or over everything (amax)."""
        reduce, pair, index = ("amax", "maximum", "argmax") if kind == "max" else ("amin", "minimum", "argmin")
        if len(args) > 1 and is_tensor(args[1]) or "other" in kwargs:
            return self.call(pair, [args[0], args[1] if len(args) > 1 else kwargs.pop("other")], kwargs)
        if len(args) > 1 or "dim" in kwargs:
            dim = args[1] if len(args) > 1 else kwargs.pop("dim")
            keep = {"keepdim": args[2] if len(args) > 2 else kwargs.pop("keepdim", Const(False))}
            return Extreme(self.call(reduce, [args[0]], {"dim": dim, **keep}),
                           self.call(index, [args[0]], {"dim": dim, **keep}))
        return self.call(reduce, [args[0]], kwargs)

    def pieces(self, method: str, tensor: Expr, args: list[Any], kwargs: dict[str, Any]) -> Reading:
        """Record chunk/split pieces; a piece is read when taken, with narrow when the IR has it."""
        shape = self.shape_of(tensor)
        dim = int(plain(args[1] if len(args) > 1 else kwargs.get("dim", Const(0))))
        size = shape[dim]
        if method == "unbind":
            bounds = tuple((i, 1) for i in range(size))
        else:
            given = args[0] if args else kwargs.get("chunks", kwargs.get("split_size_or_sections", Const(1)))
            spec = plain(given)
            if method == "chunk":
                step = -(-size // int(spec))
                lengths = [min(step, size - s) for s in range(0, size, step)]
            elif isinstance(spec, tuple):
                lengths = [int(n) for n in spec]
            else:
                lengths = [min(int(spec), size - s) for s in range(0, size, int(spec))]
            starts = [sum(lengths[:i]) for i in range(len(lengths))]
            bounds = tuple(zip(starts, lengths, strict=True))
        return Pieces(method, tensor, dim, bounds)

    def getitem(self, base: Any, index: Any) -> Reading:
        """Read `pair[0]`, `pieces[k]`, `shape[i]` and `x[:, None]` (other indexing is not in the IR)."""
        if isinstance(base, Extreme):
            return base.values if plain(index) == 0 else base.indices
        if isinstance(base, Pieces):
            if registry.resolve("narrow") is None:
                return self.unmapped_op(f"Tensor.{base.method}")
            start, length = base.bounds[int(plain(index))]
            return self.call("narrow", [base.input, Const(base.dim), Const(start), Const(length)], {})
        if isinstance(base, tuple):
            return base[int(plain(index))]  # type: ignore[no-any-return]
        items = index if isinstance(index, tuple) else (index,)
        kinds = ["new" if isinstance(i, Const) and i.value is None else
                 "all" if isinstance(i, Marker) and i.kind == "slice" and i.value == (None, None, None) else
                 "rest" if isinstance(i, Marker) and i.kind == "ellipsis" else "other" for i in items]
        if "other" in kinds or kinds.count("rest") > 1 or "new" not in kinds:
            return self.unmapped_op("tensor indexing x[...] (slices and integer indices)")
        ndim = len(self.shape_of(base))
        split = kinds.index("rest") if "rest" in kinds else len(kinds)
        before, after = kinds[:split], kinds[split + 1:]
        out_ndim = ndim + kinds.count("new")
        positions = [i for i, k in enumerate(before) if k == "new"]
        positions += [out_ndim - len(after) + i for i, k in enumerate(after) if k == "new"]
        result: Expr = base
        for position in positions:
            result = self.call("unsqueeze", [result, Const(position)], {})
        return result

    def attribute(self, base: Any, attr: str) -> Reading:
        """Read `.values`/`.indices` of max/min and `.T`/`.mT`."""
        if isinstance(base, Extreme) and attr in ("values", "indices"):
            return base.values if attr == "values" else base.indices
        if is_tensor(base) and attr in ("T", "mT"):
            ndim = len(self.shape_of(base))
            if attr == "mT" or ndim == 2:
                return self.call("transpose", [base, Const(-2), Const(-1)], {})
            return self.call("permute", [base, tuple(Const(d) for d in reversed(range(ndim)))], {})
        return self.unmapped_op(f"Tensor.{attr}")
