"""Load, validate and evaluate the spec-reader corpus (tests/agent/reader/corpus/*.toml).

The corpus is a list of operator specs written the way people write them, each with the reading a careful
kernel engineer would give it: either the inputs (names, shapes, dtypes) and ONE PyTorch reference
expression, or a refusal (the spec needs a question, not a kernel).

Rules of the corpus (the reader is judged by them; the well-formedness test enforces what it can):

* Input order is the order in which the spec names the inputs (the signature order for code).
* An input the text does not name is ``x``. An input without a dtype of its own takes the dtype the text
  gives the other floating inputs; with no dtype anywhere it is ``float32``.
* Several shape cases of one input (``shapes``) run in parallel with the other inputs that have several:
  shape case k takes ``shapes[k]`` of each such input and the single shape of the others. The same goes for
  ``dtypes``. Inputs with several shapes (or dtypes) in one case therefore list the same number of them.
  Shape cases and dtype cases are independent: every shape case runs with every dtype case.
* A scalar is a ``param`` when the formula refers to it by name (``y = alpha * x``, ``alpha = 0.5``); an
  operator's keyword written with its value (``hardtanh(min_val=-0.5)``, ``slope 0.01``) is a literal.
* References never hard-code a size taken from a shape: they read it from a tensor (``x.shape[-1:]`` in
  ``F.layer_norm``, ``q.shape[-1]`` in an attention scale, ``x.reshape(x.shape[0], -1)``), so that the
  references stay valid on the shrunk shapes of ``shrink_shapes``.
* The ``high`` bound of an int64 input that equals a dim size of the case (a class count, a row count for
  indices) shrinks with that size. Module-level int constants of code specs that equal a dim size shrink too.
"""

from __future__ import annotations

import inspect
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"

LANGS = ("en", "zh", "mixed")
STYLES = ("user", "clean")
FAMILIES = (
    "elementwise",
    "reduction",
    "softmax",
    "norm",
    "scan",
    "loss",
    "matmul",
    "conv",
    "attention",
    "data-movement",
)
EXPECTS = ("read", "refuse")
DTYPES = ("float32", "float16", "bfloat16", "int64", "bool")
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
DEVICES = ("cuda", "npu", "cpu")
CODE_REFERENCE = "code"

CASE_KEYS = frozenset(
    {
        "id",
        "lang",
        "style",
        "family",
        "spec",
        "expect",
        "reference",
        "inputs",
        "params",
        "output",
        "device",
        "target_speedup",
        "rounds",
        "note",
        "why",
        "must_mention",
    }
)
REQUIRED_KEYS = frozenset({"id", "lang", "style", "family", "spec", "expect"})
READ_ONLY_KEYS = frozenset({"reference", "inputs", "params", "output"})
REFUSE_ONLY_KEYS = frozenset({"why", "must_mention"})
INPUT_KEYS = frozenset({"name", "shape", "shapes", "dtype", "dtypes", "low", "high", "positive"})

SMALL = 16  # dims up to this size are kept by shrink_shapes
TWO_ADIC_CAP = 5  # shrink_shapes keeps divisibility by 2, 4, 8, 16 and 32

_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_CODE_START = re.compile(r"^(?:import |from |def |class |@)")


class CorpusError(ValueError):
    """A corpus file breaks the format."""


@dataclass(frozen=True)
class InputSpec:
    """One input tensor of a case, normalized: every shape case and every dtype case as a list."""

    name: str
    shapes: list[list[int]]
    dtypes: list[str]
    low: int | None = None
    high: int | None = None
    positive: bool = False


@dataclass(frozen=True)
class Case:
    """One spec of the corpus with its expected reading."""

    id: str
    lang: str
    style: str
    family: str
    spec: str
    expect: str
    source: str
    reference: str | None = None
    inputs: list[InputSpec] = field(default_factory=list)
    params: dict[str, float | int] = field(default_factory=dict)
    output: str | None = None
    device: str | None = None
    target_speedup: float | None = None
    rounds: int | None = None
    note: str | None = None
    why: str | None = None
    must_mention: list[str] = field(default_factory=list)

    @property
    def is_code(self) -> bool:
        """Tell whether the user's code is the reference."""
        return self.reference == CODE_REFERENCE

    @property
    def shape_cases(self) -> int:
        """Return how many shape cases the inputs describe."""
        return max((len(i.shapes) for i in self.inputs), default=0)


def load_corpus(directory: Path | None = None) -> list[Case]:
    """Read and validate every corpus file; return the cases in file and then document order."""
    folder = directory or CORPUS_DIR
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise CorpusError(f"no corpus files in {folder}")
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in files:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
        extra = set(document) - {"case"}
        if extra:
            raise CorpusError(f"{path.name}: unknown top-level keys {sorted(extra)}")
        for raw in document.get("case", []):
            case = _case(raw, path.name)
            if case.id in seen:
                raise CorpusError(f"{path.name}: duplicate id {case.id!r} (also in {seen[case.id]})")
            seen[case.id] = path.name
            cases.append(case)
    return cases


def _case(raw: Mapping[str, Any], source: str) -> Case:
    """Validate one raw [[case]] table and build its Case."""
    where = f"{source}: case {raw.get('id', '?')!r}"
    unknown = set(raw) - CASE_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown keys {sorted(unknown)}")
    missing = REQUIRED_KEYS - set(raw)
    if missing:
        raise CorpusError(f"{where}: missing keys {sorted(missing)}")
    for key in ("id", "lang", "style", "family", "spec", "expect"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise CorpusError(f"{where}: {key} must be a non-empty string")
    if not _ID.match(raw["id"]):
        raise CorpusError(f"{where}: id must be a lowercase slug")
    _choice(where, "lang", raw["lang"], LANGS)
    _choice(where, "style", raw["style"], STYLES)
    _choice(where, "family", raw["family"], FAMILIES)
    _choice(where, "expect", raw["expect"], EXPECTS)
    has_cjk = bool(_CJK.search(raw["spec"]))
    if (raw["lang"] == "en") == has_cjk:
        raise CorpusError(f"{where}: lang {raw['lang']!r} but the spec {'has' if has_cjk else 'has no'} Chinese")

    if raw["expect"] == "read":
        wrong = REFUSE_ONLY_KEYS & set(raw)
        if wrong:
            raise CorpusError(f"{where}: a read case has no {sorted(wrong)}")
        reference = _text(where, raw, "reference", "a read case")
        inputs = _inputs(where, raw.get("inputs"))
        params = _params(where, raw.get("params", {}), {i.name for i in inputs})
        if reference == CODE_REFERENCE and not _code_of(raw["spec"]):
            raise CorpusError(f"{where}: reference = 'code' but the spec holds no code")
        why, must_mention = None, []
    else:
        wrong = READ_ONLY_KEYS & set(raw)
        if wrong:
            raise CorpusError(f"{where}: a refusal has no {sorted(wrong)}")
        why = _text(where, raw, "why", "a refusal")
        must_mention = raw.get("must_mention", [])
        if not isinstance(must_mention, list) or not all(
            isinstance(w, str) and w and w == w.lower() for w in must_mention
        ):
            raise CorpusError(f"{where}: must_mention must be a list of lowercase words")
        reference, inputs, params = None, [], {}

    output = raw.get("output")
    if output is not None and (not isinstance(output, str) or not _IDENT.match(output)):
        raise CorpusError(f"{where}: output must be an identifier")
    device = raw.get("device")
    if device is not None:
        _choice(where, "device", device, DEVICES)
    speedup = raw.get("target_speedup")
    if speedup is not None and (isinstance(speedup, bool) or not isinstance(speedup, int | float) or speedup <= 0):
        raise CorpusError(f"{where}: target_speedup must be a positive number")
    rounds = raw.get("rounds")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds <= 0):
        raise CorpusError(f"{where}: rounds must be a positive integer")
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise CorpusError(f"{where}: note must be a string")
    return Case(
        id=raw["id"],
        lang=raw["lang"],
        style=raw["style"],
        family=raw["family"],
        spec=raw["spec"],
        expect=raw["expect"],
        source=source,
        reference=reference,
        inputs=inputs,
        params=params,
        output=output,
        device=device,
        target_speedup=float(speedup) if speedup is not None else None,
        rounds=rounds,
        note=note,
        why=why,
        must_mention=list(must_mention),
    )


def _text(where: str, raw: Mapping[str, Any], key: str, kind: str) -> str:
    """Return a required non-blank string field."""
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CorpusError(f"{where}: {kind} needs a {key}")
    return value


def _choice(where: str, key: str, value: object, allowed: Sequence[str]) -> None:
    """Reject a value outside the allowed ones."""
    if value not in allowed:
        raise CorpusError(f"{where}: {key} {value!r} is not one of {list(allowed)}")


def _inputs(where: str, raw: object) -> list[InputSpec]:
    """Validate and normalize the inputs of a read case."""
    if not isinstance(raw, list) or not raw:
        raise CorpusError(f"{where}: a read case needs a non-empty inputs list")
    inputs = [_input(where, item) for item in raw]
    names = [i.name for i in inputs]
    if len(set(names)) != len(names):
        raise CorpusError(f"{where}: duplicate input names {names}")
    for attribute in ("shapes", "dtypes"):
        counts = {len(getattr(i, attribute)) for i in inputs} - {1}
        if len(counts) > 1:
            raise CorpusError(f"{where}: inputs with several {attribute} must list the same number of them")
    return inputs


def _input(where: str, raw: object) -> InputSpec:
    """Validate and normalize one input table."""
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: each input must be a table")
    unknown = set(raw) - INPUT_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown input keys {sorted(unknown)}")
    name = raw.get("name")
    if not isinstance(name, str) or not _IDENT.match(name) or name in {"torch", "F", "math", "nn"}:
        raise CorpusError(f"{where}: bad input name {name!r}")
    where = f"{where}, input {name!r}"
    shapes = _one_or_many(where, raw, "shape", "shapes")
    for shape in shapes:
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
        ):
            raise CorpusError(f"{where}: a shape is a list of positive integers, got {shape!r}")
    dtypes = _one_or_many(where, raw, "dtype", "dtypes")
    for dtype in dtypes:
        _choice(where, "dtype", dtype, DTYPES)
    kinds = {"int" if d == "int64" else "bool" if d == "bool" else "float" for d in dtypes}
    if len(kinds) != 1:
        raise CorpusError(f"{where}: one input cannot mix float, int64 and bool dtypes")
    low, high, positive = raw.get("low"), raw.get("high"), raw.get("positive", False)
    if kinds == {"int"}:
        if not (isinstance(low, int) and isinstance(high, int)) or low >= high:
            raise CorpusError(f"{where}: an int64 input needs integers low < high")
    elif low is not None or high is not None:
        raise CorpusError(f"{where}: low/high are for int64 inputs")
    if not isinstance(positive, bool) or (positive and kinds != {"float"}):
        raise CorpusError(f"{where}: positive is a boolean for float inputs")
    return InputSpec(
        name=name,
        shapes=[list(s) for s in shapes],
        dtypes=list(dtypes),
        low=low,
        high=high,
        positive=positive,
    )


def _one_or_many(where: str, raw: Mapping[str, Any], one: str, many: str) -> list[Any]:
    """Return the list given by exactly one of the singular and plural keys."""
    if (one in raw) == (many in raw):
        raise CorpusError(f"{where}: give exactly one of {one!r} and {many!r}")
    if one in raw:
        return [raw[one]]
    values = raw[many]
    if not isinstance(values, list) or len(values) < 2:
        raise CorpusError(f"{where}: {many!r} lists at least two values (use {one!r} for one)")
    return list(values)


def _params(where: str, raw: object, input_names: set[str]) -> dict[str, float | int]:
    """Validate the named scalar parameters of a read case."""
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: params must be a table")
    for name, value in raw.items():
        if not _IDENT.match(name) or name in input_names:
            raise CorpusError(f"{where}: bad or clashing param name {name!r}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CorpusError(f"{where}: param {name!r} must be a number")
    return dict(raw)


def _two_adic(n: int) -> int:
    """Return how many times 2 divides n."""
    return (n & -n).bit_length() - 1


def shrink_map(case: Case, case_index: int = 0) -> dict[int, int]:
    """Map every distinct dim size above SMALL in one shape case to a distinct small size.

    Sizes are taken in increasing order and each gets the next free size above SMALL (and above the size
    given before it) that 2 divides exactly as often, counting up to 2**5: 37 -> 17, 1000 -> 24, 4096 -> 32.
    Equal sizes stay equal and different sizes stay different, so broadcasting, reductions and matmul
    contractions stay valid; divisibility by 2..32 survives, so chunk(2), group counts and head splits do.
    """
    sizes = sorted({d for i in case.inputs for d in _shape_at(i, case_index) if d > SMALL})
    mapping: dict[int, int] = {}
    last = SMALL
    for size in sizes:
        want = min(_two_adic(size), TWO_ADIC_CAP)
        candidate = last + 1
        while min(_two_adic(candidate), TWO_ADIC_CAP) != want:
            candidate += 1
        mapping[size] = candidate
        last = candidate
    return mapping


def _shape_at(spec: InputSpec, case_index: int) -> list[int]:
    """Return the input's shape in shape case case_index (its only shape when it has one)."""
    return spec.shapes[case_index] if len(spec.shapes) > 1 else spec.shapes[0]


def shrink_shapes(case: Case, case_index: int = 0) -> dict[str, list[int]]:
    """Return each input's shape in one shape case (the first by default) with its large dims shrunk."""
    mapping = shrink_map(case, case_index)
    return {i.name: [mapping.get(d, d) for d in _shape_at(i, case_index)] for i in case.inputs}


def _dim_map(case: Case, shapes: Mapping[str, Sequence[int]]) -> dict[int, int]:
    """Map the first shape case's dim sizes to the given shapes' sizes, dim by dim."""
    mapping: dict[int, int] = {}
    for spec in case.inputs:
        original = spec.shapes[0]
        given = list(shapes[spec.name])
        if len(given) == len(original):
            for old, new in zip(original, given, strict=True):
                mapping.setdefault(old, new)
    return mapping


_TORCH_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


def make_inputs(
    case: Case,
    shapes: Mapping[str, Sequence[int]],
    seed: int,
    dtype_override: str | None = "float64",
) -> dict[str, torch.Tensor]:
    """Draw random inputs of the given shapes (float ones in dtype_override, else their first dtype)."""
    generator = torch.Generator().manual_seed(seed)
    dims = _dim_map(case, shapes)
    tensors: dict[str, torch.Tensor] = {}
    for spec in case.inputs:
        shape = tuple(shapes[spec.name])
        dtype = spec.dtypes[0]
        if dtype == "int64":
            assert spec.low is not None and spec.high is not None
            high = dims.get(spec.high, spec.high)
            tensors[spec.name] = torch.randint(spec.low, high, shape, generator=generator, dtype=torch.int64)
        elif dtype == "bool":
            tensors[spec.name] = torch.rand(shape, generator=generator, dtype=torch.float64) < 0.5
        else:
            if spec.positive:
                values = torch.rand(shape, generator=generator, dtype=torch.float64) * 3.75 + 0.25
            else:
                values = torch.randn(shape, generator=generator, dtype=torch.float64)
            tensors[spec.name] = values.to(_TORCH_DTYPES[dtype_override or dtype])
    return tensors


def code_of(case: Case) -> str:
    """Return the Python source held by a code spec."""
    source = _code_of(case.spec)
    if not source:
        raise CorpusError(f"case {case.id!r} holds no code")
    return source


def _code_of(spec: str) -> str:
    """Return the fenced Python blocks of a spec, else its text from the first line that starts code."""
    blocks = _FENCE.findall(spec)
    if blocks:
        return "\n".join(blocks)
    lines = spec.splitlines()
    for index, line in enumerate(lines):
        if _CODE_START.match(line):
            return "\n".join(lines[index:]) + "\n"
    return ""


def reference_output(case: Case, inputs: Mapping[str, torch.Tensor], seed: int = 0) -> Any:
    """Evaluate the case's reference on the given inputs (seed fixes the weights a code module creates)."""
    if case.expect != "read" or case.reference is None:
        raise CorpusError(f"case {case.id!r} is a refusal and has no reference")
    with torch.no_grad():
        if case.is_code:
            return _run_code(case, inputs, seed)
        scope: dict[str, Any] = {"torch": torch, "F": F, "math": math, **case.params, **inputs}
        return eval(case.reference, scope)  # the corpus's own reference expression


def _run_code(case: Case, inputs: Mapping[str, torch.Tensor], seed: int) -> Any:
    """Execute a code spec in a fresh namespace and call its Model (or its one function) on the inputs."""
    filename = f"<corpus:{case.id}>"
    scope: dict[str, Any] = {"torch": torch, "nn": nn, "F": F, "math": math, "__name__": "corpus_case"}
    exec(compile(code_of(case), filename, "exec"), scope)  # the corpus's own code
    dims = _dim_map(case, {name: list(t.shape) for name, t in inputs.items()})
    for name, value in list(scope.items()):
        if type(value) is int and value in dims:
            scope[name] = dims[value]
    args = [inputs[spec.name] for spec in case.inputs]
    float_dtypes = [t.dtype for t in args if t.is_floating_point()]
    dtype = float_dtypes[0] if float_dtypes else torch.float64
    if "Model" in scope:
        init = scope["get_init_inputs"]() if "get_init_inputs" in scope else []
        torch.manual_seed(seed)
        model = scope["Model"](*init).to(dtype).eval()
        return model(*args)
    functions = [
        value
        for name, value in scope.items()
        if inspect.isfunction(value)
        and value.__code__.co_filename == filename
        and name not in {"get_inputs", "get_init_inputs"}
    ]
    if len(functions) != 1:
        raise CorpusError(f"case {case.id!r}: the code must define one Model or exactly one function")
    return functions[0](*args)
