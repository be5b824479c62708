"""What every offline engine's templates share: the Jinja environment, literals, dtypes, FLOPs and sample draws."""

from __future__ import annotations

import functools
import math
import pprint
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from agent.ir.count import total_flops
from agent.spec import OpSpec

if TYPE_CHECKING:
    from agent.generators.base import KernelFiles, LaunchConfig

TEMPLATES = Path(__file__).parent / "templates"
FLOATS = ("float32", "float16", "bfloat16")


@cache
def environment() -> jinja2.Environment:
    """Return the Jinja environment of the offline templates (strict: a missing value is an error)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_files(spec: OpSpec, config: LaunchConfig, context: dict[str, Any], triton: str = "triton.py.j2"
                 ) -> KernelFiles:
    """Render the four files from an engine's context: its own kernel template, the shared other three.

    A code spec's baseline embeds the person's own PyTorch: it is the reference.
    """
    from agent.generators.base import FILE_ROLES, KernelFiles

    env = environment()
    templates = {role: f"{role}.py.j2" for role in FILE_ROLES} | {"triton": triton}
    if context["code"] is not None:
        templates["baseline"] = "baseline_code.py.j2"
    files = {f"{spec.name}_{role}.py": env.get_template(templates[role]).render(**context) for role in FILE_ROLES}
    return KernelFiles(op=spec.name, files=files, config=config, holds_user_code=context["code"] is not None)


def small_case(spec: OpSpec, most: int, edges: list[dict[str, list[int]]] | None = None) -> dict[str, list[int]]:
    """Pick the case the self-check runs: the first spec case if its output has at most `most` elements, else the
    largest odd-shape case."""
    first = spec.shape_cases()[0]
    cases = spec.odd_shape_cases() if edges is None else edges
    if math.prod(spec.output_shape(first)) <= most or not cases:
        return first
    return max(cases, key=lambda c: math.prod(spec.output_shape(c)))


def pretty(value: object) -> str:
    """Format a literal for generated code, wrapped to stay readable."""
    return pprint.pformat(value, width=100, sort_dicts=False)


def tuple_literal(items: list[str]) -> str:
    """Render a tuple literal (with the trailing comma a single item needs)."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def signature(spec: OpSpec) -> str:
    """Return the wrapper's and the baseline's parameter list: the tensors, then the scalars with their values."""
    parts = [f"{t.name}: torch.Tensor" for t in spec.inputs]
    return ", ".join(parts + [f"{p.name}: float = {p.value!r}" for p in spec.params])


def code_context(spec: OpSpec) -> dict[str, Any] | None:
    """Return what the code baseline needs: the user's source, entry, constructor arguments and parameters."""
    code = spec.reading.code if spec.reading else None
    if code is None:
        return None
    arguments = [i.name for i in spec.reading.inputs if i.role == "argument"] if spec.reading else []
    parameters = list(code.parameters)
    return {
        "source_literal": repr(code.source), "entry": code.entry, "kind": code.kind,
        "init_args": repr(list(code.init_args)), "parameters": repr(dict(code.parameters)),
        "arguments": ", ".join(arguments) + ("," if len(arguments) == 1 else ""),
        "parameter_args": ", ".join(parameters) + ("," if len(parameters) == 1 else ""),
    }


def output_dtype(spec: OpSpec) -> str | None:
    """Return the wrapper's output dtype: promotion of the float inputs, or a fixed dtype (a cast, argmax's int64).

    The result is Python over `dtypes`, the tuple of input dtypes in signature order; None when the dtype cases
    disagree in a way the wrapper cannot follow.
    """
    import torch

    kinds: set[str] = set()
    for dtypes in spec.dtype_cases():
        found = spec.output_type(spec.shape_cases()[0], dtypes).dtype
        floats = [getattr(torch, dtypes[t.name]) for t in spec.inputs if dtypes[t.name] in FLOATS]
        promoted = str(functools.reduce(torch.promote_types, floats)).replace("torch.", "") if floats else None
        kinds.add("promote" if found == promoted else found)
    if kinds == {"promote"}:
        indices = [i for i, t in enumerate(spec.inputs) if all(d in FLOATS for d in t.dtypes)]
        if len(indices) == len(spec.inputs):
            return "functools.reduce(torch.promote_types, dtypes)"
        return f"functools.reduce(torch.promote_types, [{', '.join(f'dtypes[{i}]' for i in indices)}])"
    return f"torch.{kinds.pop()}" if len(kinds) == 1 else None


def spec_flops(spec: OpSpec) -> list[int]:
    """Return the FLOPs of each spec case (a reduction's cost follows its input, not its output)."""
    dtypes = spec.dtype_cases()[0]
    return [total_flops(spec.expr, spec.input_types(case, dtypes)) for case in spec.shape_cases()]


def sample_draw(shape: list[int], dtype: str, positive: bool, index_high: int | None = None,
                product_length: int | None = None) -> str:
    """Return the expression the self-checks draw an input with (positive inputs stay inside log's domain)."""
    dims = ", ".join(str(d) for d in shape)
    if index_high is not None:
        size = f"({dims}{',' if len(shape) == 1 else ''})"
        return f"torch.randint(0, {index_high}, {size}, dtype=torch.{dtype}, device=device)"
    if product_length is not None and not positive:
        # Multiplied along rows of this length: magnitudes near 1, so that no product over- or underflows.
        spread = round(2.0 / math.sqrt(max(1, product_length)), 6)
        return (f"((torch.randn({dims}, device=device) * {spread}).exp()"
                f" * (torch.rand({dims}, device=device) < 0.5).mul(2).sub(1)).to(torch.{dtype})")
    draw = f"torch.rand({dims}, device=device) * 3.75 + 0.25" if positive else f"torch.randn({dims}, device=device)"
    return f"({draw}).to(torch.{dtype})"


def next_pow2(n: int) -> int:
    """Return the smallest power of two at least n (1 for n <= 1)."""
    return 1 << max(0, (n - 1).bit_length())
