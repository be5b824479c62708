"""Read a spec (free text in English or Chinese, a task book, or PyTorch code) into an OpSpec with its reading."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from agent.catalogue import load_catalogue
from agent.ir.types import IRError
from agent.reader import fields as fl
from agent.reader.accounting import account
from agent.reader.assemble import assemble
from agent.reader.clarifiers import axes_by_name, read_clarifiers
from agent.reader.code import CodeSource, find_code
from agent.reader.errors import ReaderBug, SpecQuestion
from agent.reader.scan import scan_text
from agent.reader.signature_docs import api_prose_left_out
from agent.reader.subscripts import drop_element_subscripts
from agent.reader.taskbook import task_headings
from agent.reader.text import normalize
from agent.reader.vocabulary import DECLARATION_LINE, UNSUPPORTED_DTYPE
from agent.reading import Reading
from agent.spec import OpSpec, SpecError

log = logging.getLogger(__name__)
EXAMPLE = "'ReLU on a float32 tensor x of shape [1024, 1024]' or 'softmax over the last dim of x [4096, 1024] fp16'"
MAX_SPEC_CHARS = 200_000


def read_spec(text: str, *, work_dir: Path | None = None) -> OpSpec:
    """Return the operator a spec describes, with its reading; raise SpecError (a question) otherwise."""
    try:
        return _read(text, work_dir)
    except SpecError:
        raise
    except (IRError, ValueError, RecursionError) as exc:
        raise SpecQuestion(f"the reader could not make sense of this spec ({exc}); can you restate it?",
                           example=EXAMPLE) from None
    except Exception as exc:  # a bug in the reader: the user still gets a question, and the log gets the trace
        log.exception("the reader failed on a spec")
        raise ReaderBug(f"the reader failed on this spec ({type(exc).__name__}: {exc}); please restate it, and "
                        "report the spec so the reader can be fixed", example=EXAMPLE) from None


def _read(text: str, work_dir: Path | None) -> OpSpec:
    if not isinstance(text, str) or not text.strip():
        raise SpecQuestion("the spec is empty; what operator do you want?", example=EXAMPLE)
    if len(text) > MAX_SPEC_CHARS:
        raise SpecQuestion(f"the spec has {len(text):,} characters; the reader takes at most {MAX_SPEC_CHARS:,}")
    norm = normalize(text)
    headings = task_headings(norm)
    if len(headings) > 1:
        titles = ", ".join(t or "?" for _, _, t in headings)
        raise SpecQuestion(f"the text holds {len(headings)} tasks ({titles}); send each task as its own spec, or run "
                           "the whole task book with `kernelgen run --file BOOK.md`")
    code = _find_code(text)
    if code is not None:
        from agent.reader.code_spec import read_code_spec

        return read_code_spec(code, work_dir)
    # The accounting pass reads every word; the reader reads what says the operator (argument docs left out).
    full, norm = norm, drop_element_subscripts(api_prose_left_out(norm))
    norm, clarified = read_clarifiers(norm)
    norm, by_name = axes_by_name(norm)
    clarified += by_name
    bad = _unsupported_dtype(norm)
    if bad:
        raise SpecQuestion(f"dtype {bad.group(0)!r} is not supported; kernels are generated for float32, float16, "
                           "bfloat16 (int64/bool only for indices, targets and masks); which dtype should it be?",
                           example="'x [1024, 1024] bf16'")
    catalogue = load_catalogue()
    found = scan_text(norm, catalogue)
    spec = assemble(found, norm, catalogue)
    if spec.reading is not None:
        _account(full, spec.reading)
    device = fl.find_device(norm, found.fields)
    extra: dict[str, object] = {}
    speedup = fl.find_speedup(norm, found.fields)
    rounds = fl.find_rounds(norm)
    if speedup is not None:
        extra["target_speedup"] = speedup
    if rounds is not None:
        extra["max_rounds"] = rounds
    tolerances, _ = fl.tolerance_spans(norm)
    if tolerances:
        extra["tolerances"] = tolerances
    description = next((f.value for f in found.fields if f.kind == "description" and f.value), "")
    description = description or next((ln.strip(" #-*") for ln in norm.split("\n") if ln.strip(" #-*")), "")[:300]
    update = {"device": device, "description": description} | extra
    reading = spec.reading.model_copy(update={"device": device, "target_speedup": speedup, "max_rounds": rounds,
                                              "notes": [*spec.reading.notes, *clarified]}) \
        if spec.reading else None
    return spec.model_validate(spec.model_dump() | update | {"reading": reading})


def _unsupported_dtype(text: str) -> re.Match[str] | None:
    """Find a dtype kernels are not generated for; where an `Inputs:` line gives the dtypes, only there."""
    lines = [(m.start(), m.end()) for m in DECLARATION_LINE.finditer(text)]
    for bad in UNSUPPORTED_DTYPE.finditer(text):
        # Prose such as "works with integer, float, and complex inputs" says what torch accepts, not the spec's
        # dtype, once a structured line states it.
        if not lines or any(s <= bad.start() < e for s, e in lines):
            return bad
    return None


def _account(text: str, reading: Reading) -> None:
    """Refuse a reading that leaves out words the text says (a parameter, an operation, a modifier)."""
    accounting = account(text, reading)
    if accounting.accounted:
        return
    lines = accounting.lines()
    listed = "\n".join(f"  - {line}" for line in lines)
    raise SpecQuestion(f"the reading does not account for every part of the spec:\n{listed}\nwhat should "
                       f"{'it' if len(lines) == 1 else 'they'} change?",
                       understood=f"{reading.pytorch.strip()} (what the kernel would compute without them)",
                       example="a formula that uses every part, e.g. 'out = softmax(x / 0.7, dim=-1)'",
                       unaccounted=lines)


def _find_code(text: str) -> CodeSource | None:
    """Return the code of a code spec (read from the raw text: normalizing would touch the code), or None."""
    if not re.search(r"```|\bdef\s+\w+\s*\(|\bclass\s+\w+\s*\(", text):
        return None
    return find_code(text)
