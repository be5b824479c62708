"""Turn PyTorch code given as a spec into an OpSpec: shapes and dtypes from the prose around it, the code's reading."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from agent.catalogue import load_catalogue
from agent.ir.family import family_of
from agent.ir.printer import to_statements, to_text
from agent.reader import fields as fl
from agent.reader.code import CodeReading, CodeSource, read_code
from agent.reader.errors import SpecQuestion
from agent.reader.inputs import merge, resolve_shapes
from agent.reader.scan import scan_text
from agent.reader.text import normalize
from agent.reader.vocabulary import dtype_of
from agent.reading import CodeSpec, InputReading, Reading
from agent.spec import OpSpec, TensorSpec, safe_name


def read_code_spec(code: CodeSource, work_dir: Path | None) -> OpSpec:
    """Read the code in the sandbox; the prose may give shapes, dtypes, a device and a target."""
    prose = normalize(code.prose)
    declared, dtype = _from_prose(prose)
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="kernelgen-code-") as temp:
            reading = read_code(code, work_dir=Path(temp), declared=declared)
    else:
        reading = read_code(code, work_dir=work_dir, declared=declared)
    return _spec(reading, prose, dtype)


def _from_prose(prose: str) -> tuple[dict[str, tuple[list[int], str]], str | None]:
    """Return the shapes and dtypes the prose gives by name, and a dtype it gives for every input."""
    if not prose.strip():
        return {}, None
    found = scan_text(prose, load_catalogue())
    infos, _ = merge(found.decls, None)
    named = [i for i in infos.values() if i.shapes]
    shapes = resolve_shapes(named, found.bindings) if named else {}
    loose = next((d for d in found.loose_dtypes if d in ("float32", "float16", "bfloat16")), None)
    declared = {n: (s[0], (infos[n].dtypes or [loose or "float32"])[0]) for n, s in shapes.items()}
    for name, source in found.same_shape.items():  # `mask: bool, same shape`
        if name not in declared and source in declared:
            said = re.search(rf"(?<![\w.]){re.escape(name)}\s*:\s*(?:torch\.)?([A-Za-z]\w*)", prose)
            dtype = dtype_of(said.group(1)) if said else None
            declared[name] = (declared[source][0], dtype or declared[source][1])
    return declared, loose


def _spec(reading: CodeReading, prose: str, dtype: str | None) -> OpSpec:
    notes = list(reading.notes)
    inputs = []
    for item in reading.inputs:
        item_dtype = dtype if dtype and item.dtype in ("float32", "float16", "bfloat16") else item.dtype
        if item_dtype != item.dtype:
            notes.append(f"{item.name}: {item_dtype}, as the text asks (the code's example uses {item.dtype})")
        inputs.append(TensorSpec(name=item.name, shapes=[list(item.shape)], dtypes=[item_dtype]))  # type: ignore[list-item]
    name = _name(reading)
    family = family_of(reading.expr)
    spec = OpSpec(name=name, category=family, formula=to_text(reading.expr), inputs=inputs,  # type: ignore[arg-type]
                  description=f"PyTorch code ({reading.entry})", device=fl.find_device(prose, []) if prose else "auto")
    outputs = [spec.output_type(case, spec.dtype_cases()[0]) for case in spec.shape_cases()]
    understood = Reading(
        source="code", op=name, family=family, ir=spec.formula, pytorch="\n".join(to_statements(reading.expr, "out")),
        inputs=[InputReading(name=t.name, dtypes=list(t.dtypes), shapes=t.shapes, role=i.role)
                for t, i in zip(inputs, reading.inputs, strict=True)],
        output_shapes=[list(o.shape) for o in outputs], output_dtype=outputs[0].dtype, accounting="code",
        notes=[*notes, "your code is the reference: the generated baseline runs it, and the reading was checked "
               f"against it on 3 random inputs (max abs error {reading.max_abs_error:.1e})"],
        code=CodeSpec(source=reading.runnable or reading.source, entry=reading.entry, kind=reading.kind,
                      init_args=list(reading.init_args), parameters=dict(reading.parameters)),
    )
    extra: dict[str, object] = {}
    speedup, rounds = fl.find_speedup(prose, []), fl.find_rounds(prose)
    if speedup is not None:
        extra["target_speedup"] = speedup
    if rounds is not None:
        extra["max_rounds"] = rounds
    return spec.model_copy(update={"reading": understood, **extra})


# Function names that say what the code is for, not what it computes.
_GENERIC_NAMES = frozenset({"reference", "ref", "baseline", "forward", "model", "fn", "f", "func", "op", "kernel",
                            "torch_reference", "reference_impl", "golden", "compute", "run", "main"})


def _name(reading: CodeReading) -> str:
    """Name the operator after the function, or after what its ops do (`Model`, `reference` say nothing)."""
    if reading.kind == "function" and re.fullmatch(r"[a-z_][a-z0-9_]*", reading.entry) and (
            reading.entry not in _GENERIC_NAMES):
        return safe_name(reading.entry)
    from agent.reader.scene import derived_name

    return safe_name(derived_name(reading.expr))


__all__ = ["SpecQuestion", "read_code_spec"]
