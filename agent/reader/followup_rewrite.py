"""Rewrite the previous spec text for a follow-up's dtype, shape and device, and check it reads back as asked."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from agent.reader.followup_phrases import DEVICE, DTYPE, FLAGS, SPEC_SHAPE, TOLERANCE_AFTER, FollowUpError, dtype_of
from agent.reader.read import read_spec
from agent.reading import InputReading, Reading
from agent.spec import SUPPORTED_DTYPES, SpecError


@dataclass
class Expected:
    """What the derived spec must read as: each input's dtypes and shapes, and the device."""

    dtypes: dict[str, list[str]]
    shapes: dict[str, list[list[int]]]
    device: str | None = None
    unknown_shapes: set[str] = field(default_factory=set)  # inputs whose new shape the size map cannot tell


def apply_dtype(text: str, previous: Reading, new: str, old_dtype: str | None, expected: Expected) -> tuple[str, str]:
    """Write the new dtype for every float dtype word of the text; append it where the text names none."""
    floats = [d for i in previous.inputs for d in i.dtypes if d in SUPPORTED_DTYPES]
    old = list(dict.fromkeys(floats))
    if old_dtype is not None and old_dtype not in old:
        raise FollowUpError(f"the previous spec has no {old_dtype} input (it has {', '.join(old) or 'none'});"
                            f" should every float input become {new}?")
    # An output cast the text asks for (`output in fp32`) stays; only the inputs' dtype changes.
    keep = previous.output_dtype if previous.output_dtype and previous.output_dtype not in old else None
    words = [m for m in re.finditer(DTYPE, text, FLAGS)
             if dtype_of(m.group(0)) != keep and not TOLERANCE_AFTER.match(text, m.end())]
    for m in reversed(words):
        text = text[:m.start()] + new + text[m.end():]
    if not words:
        text = _append(text, f"dtype {new}", f"数据类型 {new}")
    for item in previous.inputs:
        expected.dtypes[item.name] = list(dict.fromkeys(new if d in SUPPORTED_DTYPES else d for d in item.dtypes))
    was = ", ".join(old) if old else "float32"
    return text, f"dtype {was} -> {new}" if was != new else f"dtype {new} (unchanged)"


def apply_shape(text: str, previous: Reading, new: tuple[int, ...], old_shape: tuple[int, ...] | None,
                shape_of: str | None, expected: Expected) -> tuple[str, list[str]]:
    """Rewrite every shape literal of the text through the map from the chosen input's old sizes to the new."""
    target = _shape_target(previous, new, old_shape, shape_of)
    old = _old_shape(target, new, old_shape)
    if len(old) != len(new):
        _rank_error(previous, target, old, new)
    sizes: dict[int, set[int]] = {}
    for size, becomes in zip(old, new, strict=True):
        sizes.setdefault(size, set()).add(becomes)

    def mapped(items: Sequence[int | str]) -> list[int | str] | None:
        if tuple(items) == old:
            return list(new)
        if any(isinstance(d, int) and len(sizes.get(d, {d})) > 1 for d in items):
            # A size that maps two ways (`[1024, 1024]`): a trailing part of the old shape broadcasts like it.
            return list(new[len(new) - len(items):]) if 0 < len(items) < len(old) and tuple(
                items) == old[len(old) - len(items):] else None
        return [d if isinstance(d, str) else next(iter(sizes.get(d, {d}))) for d in items]

    pieces: list[tuple[int, int, str]] = []
    for m in SPEC_SHAPE.finditer(text):
        items = _items(m.group(0))
        after = mapped(items)
        if after is None:
            raise FollowUpError(f"the spec also has the shape {m.group(0)}, and the size map {_map_words(sizes)} "
                                f"does not say what it becomes; can you send the whole spec with the new shapes?")
        if after != items:
            pieces.append((m.start(), m.end(), _rewrite(m.group(0), after)))
    pieces += _symbol_bindings(text, sizes)
    if not pieces:
        raise FollowUpError(f"the spec does not write {target.name}'s shape {list(old)} as a literal the follow-up "
                            f"can change; can you send the whole spec with the shape {list(new)}?")
    for start, end, piece in sorted(pieces, reverse=True):
        text = text[:start] + piece + text[end:]
    changes = []
    for item in previous.inputs:
        shapes = [mapped(s) for s in item.shapes]
        if any(s is None for s in shapes):
            expected.unknown_shapes.add(item.name)
            continue
        after_shapes = [[int(d) for d in s] for s in shapes if s is not None]
        expected.shapes[item.name] = after_shapes
        if after_shapes != item.shapes:
            changes.append(f"shape {item.name} {_shapes_words(item.shapes)} -> {_shapes_words(after_shapes)}")
    return text, changes or [f"shape {target.name} {list(old)} (unchanged)"]


def _shape_target(previous: Reading, new: tuple[int, ...], old_shape: tuple[int, ...] | None,
                  shape_of: str | None) -> InputReading:
    """Return the input a new shape is for: the one named, the one with the old shape, else the main input."""
    inputs = previous.inputs
    if not inputs:
        raise FollowUpError("the previous spec has no inputs to reshape; can you send the whole spec?")
    if shape_of is not None:
        return next(i for i in inputs if i.name == shape_of)
    if old_shape is not None:
        found = [i for i in inputs if list(old_shape) in i.shapes]
        if not found:
            raise FollowUpError(f"no input of the previous spec has the shape {list(old_shape)}; which input "
                                f"should become {list(new)}?")
        return found[0]
    rank = max(len(s) for i in inputs for s in i.shapes) if any(i.shapes for i in inputs) else 0
    return next(i for i in inputs if any(len(s) == rank for s in i.shapes))


def _old_shape(target: InputReading, new: tuple[int, ...], old_shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """Return the shape of the input that changes; an input with several shape cases is a question."""
    if old_shape is not None and list(old_shape) in target.shapes:
        return old_shape
    if len(target.shapes) != 1:
        raise FollowUpError(f"{target.name} has {len(target.shapes)} shape cases ({_shapes_words(target.shapes)}); "
                            f"which should become {list(new)}? (e.g. "
                            f"'{target.shapes[0]} -> {list(new)}')")
    return tuple(target.shapes[0])


def _rank_error(previous: Reading, target: InputReading, old: tuple[int, ...],
                new: tuple[int, ...]) -> NoReturn:
    """Raise the question a shape of another rank than the input's raises."""
    fits = [i.name for i in previous.inputs if any(len(s) == len(new) for s in i.shapes)]
    hint = f" (e.g. '{fits[0]} {list(new)}')" if fits else ""
    raise FollowUpError(f"the new shape {list(new)} has {len(new)} dims but {target.name} is {list(old)}; "
                        f"which input should get it?{hint}")


def _items(literal: str) -> list[int | str]:
    """Return the sizes and symbols of a shape literal, in order."""
    return [int(i) if i.isdigit() else i for i in re.findall(_item_pattern(literal), literal)]


def _rewrite(literal: str, items: Sequence[int | str]) -> str:
    """Write new sizes into a shape literal, keeping how it was written (`[a, b]`, `(a, b)`, `a x b`)."""
    values = iter(items)
    return re.sub(_item_pattern(literal), lambda _: str(next(values)), literal)


def _item_pattern(literal: str) -> str:
    """Return the pattern of one item of a literal: in `4096x11008` the `x` is no symbol."""
    return r"\d+|[A-Za-z_]\w*" if literal[0] in "[(" else r"\d+"


def _symbol_bindings(text: str, sizes: dict[int, set[int]]) -> list[tuple[int, int, str]]:
    """Return the rewrites of `N = 1024` bindings of the symbols written in shapes (`x [B, N]`)."""
    symbols = {s for m in re.finditer(r"\[([^\]\n]*)\]", text) for s in re.findall(r"[A-Za-z_]\w*", m.group(1))}
    pieces = []
    for m in re.finditer(r"(?<![\w.])(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<size>\d+)(?![\w.])", text):
        after = sizes.get(int(m.group("size")))
        if m.group("name") in symbols and after:
            if len(after) > 1:
                raise FollowUpError(f"{m.group('name')} = {m.group('size')} could become any of {sorted(after)}; "
                                    "can you send the whole spec with the new shapes?")
            value = next(iter(after))
            pieces.append((m.start("size"), m.end("size"), str(value)))
    return [p for p in pieces if p[2] != text[p[0]:p[1]]]


def _map_words(sizes: dict[int, set[int]]) -> str:
    """Write a size map as `8192 -> 4096, 4096 -> 11008`."""
    return ", ".join(f"{k} -> {'/'.join(map(str, sorted(v)))}" for k, v in sizes.items())


def _shapes_words(shapes: Sequence[Sequence[int]]) -> str:
    """Write one or several shape cases."""
    return " | ".join(str(list(s)) for s in shapes)


def apply_device(text: str, previous: Reading, device: str, name: str) -> tuple[str, str]:
    """Write the new device for every device word of the text; append it where the text names none."""
    runs = _device_runs(text)
    for start, end in reversed(runs):
        text = text[:start] + name + text[end:]
    if not runs:
        text = _append(text, f"on {name}", f"在 {name} 上")
    was = previous.device
    return text, f"device {was} -> {device}" if was != device else f"device {device} (unchanged)"


def _device_runs(text: str) -> list[tuple[int, int]]:
    """Return the spans of device words, a run like `NVIDIA GPU (CUDA)` as one span."""
    runs: list[tuple[int, int]] = []
    for m in DEVICE.finditer(text):
        if runs and re.fullmatch(r"[\s(/,-]*", text[runs[-1][1]:m.start()]):
            runs[-1] = (runs[-1][0], m.end())
        else:
            runs.append((m.start(), m.end()))
    closed = []
    for start, end in runs:
        close = re.match(r"\s*\)", text[end:])
        if text.count("(", start, end) > text.count(")", start, end) and close:
            end += close.end()
        closed.append((start, end))
    return closed


def _append(text: str, english: str, chinese: str) -> str:
    """Append a phrase to the spec: a clause of a one-line spec, a line of a longer one."""
    body = text.rstrip()
    if "\n" in body:
        return f"{body}\n{english}" + text[len(body):]
    if re.search(r"[\u3400-\u9fff]", body):
        return f"{body.rstrip('。.')}，{chinese}"
    return f"{body.rstrip('.')}; {english}"


def check(text: str, previous: Reading, expected: Expected, changes: list[str]) -> None:
    """Read the derived spec and make sure it is the previous reading with only the asked changes."""
    asked = "; ".join(changes)
    try:
        reading = read_spec(text).reading
    except SpecError as exc:
        raise FollowUpError(f"after the change ({asked}) the spec no longer reads ({exc}); can you send the whole "
                            "spec with the change?") from None
    problems = []
    if reading is None or _uncast(reading.ir) != _uncast(previous.ir):
        problems.append(f"the operator reads as {reading.ir if reading else '?'!r}, not {previous.ir!r}")
    else:
        if [i.name for i in reading.inputs] != [i.name for i in previous.inputs]:
            problems.append(f"the inputs read as {', '.join(i.name for i in reading.inputs)}")
        for item in reading.inputs:
            want = expected.dtypes.get(item.name)
            if want is not None and list(dict.fromkeys(item.dtypes)) != want:
                problems.append(f"{item.name} reads as {'/'.join(item.dtypes)}, not {'/'.join(want)}")
            shapes = expected.shapes.get(item.name)
            if item.name not in expected.unknown_shapes and shapes is not None and item.shapes != shapes:
                problems.append(f"{item.name} reads as {_shapes_words(item.shapes)}, not {_shapes_words(shapes)}")
        if expected.device is not None and reading.device != expected.device:
            problems.append(f"the device reads as {reading.device}, not {expected.device}")
    if problems:
        raise FollowUpError(f"after the change ({asked}) {'; '.join(problems)}; can you send the whole spec with "
                            "the change?")


def _uncast(ir: str) -> str:
    """Drop an output cast from an IR text: a dtype change may make the text's cast a no-op."""
    m = re.fullmatch(r"cast\((?P<body>.*), dtype='\w+'\)", ir.strip())
    return m.group("body") if m else ir.strip()
