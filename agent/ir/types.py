"""Tensor types of the IR, the dtypes it knows, and its error."""

from __future__ import annotations

from dataclasses import dataclass

# Dtypes an IR input may have; kernels are generated for the float ones, the others index or mask.
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
INDEX_DTYPES = ("int64", "int32", "bool")
IR_DTYPES = (*FLOAT_DTYPES, "float64", *INDEX_DTYPES)
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "bool": 1}


class IRError(ValueError):
    """An operator graph that is not well-formed: the message names the node and the reason."""


@dataclass(frozen=True)
class TensorType:
    """The dtype and concrete shape of a tensor value."""

    dtype: str
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        """Count the elements."""
        count = 1
        for d in self.shape:
            count *= d
        return count

    @property
    def nbytes(self) -> int:
        """Count the bytes."""
        return self.numel * ITEMSIZE[self.dtype]

    def __str__(self) -> str:
        """Render as `float16[8, 64]`."""
        return f"{self.dtype}{list(self.shape)}"


@dataclass(frozen=True)
class ScalarType:
    """A Python number operand (a literal or a scalar parameter): it never widens a tensor's dtype."""

    value: float | int | bool

    def __str__(self) -> str:
        """Render as `scalar 0.5`."""
        return f"scalar {self.value!r}"


ValueType = TensorType | ScalarType
