"""Read a follow-up message in a chat thread as a change to the previous spec, and derive the next spec."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.reader.followup_phrases import (
    CJK_CONTEXT_FILLERS,
    CJK_FILLERS,
    CONTEXT_FILLERS,
    COUNT_WORDS,
    DEVICE,
    DEVICE_NAMES,
    DTYPE,
    FILLERS,
    FLAGS,
    OLD_NEW,
    OTHER_DTYPE,
    ROUNDS,
    SHAPE,
    TARGETS,
    TOKEN,
    FollowUpError,
    dtype_of,
)
from agent.reader.followup_rewrite import Expected, apply_device, apply_dtype, apply_shape, check
from agent.reader.text import normalize
from agent.reader.vocabulary import UNSUPPORTED_DTYPE
from agent.reading import Reading
from agent.spec import MAX_ROUNDS, SUPPORTED_DTYPES, shape_problem

__all__ = ["MAX_CHARS", "FollowUp", "FollowUpError", "derive"]  # FollowUpError is re-exported for its callers


@dataclass(frozen=True)
class FollowUp:
    """A follow-up read against the previous spec: the derived spec to read, and option changes."""

    spec_text: str  # the derived spec text, which the reader will read again (and show to the user)
    rounds: int | None  # "try 3 more rounds" -> 3 (clamped to 1..5); None when not asked
    target_speedup: float | None  # "target 1.5x" -> 1.5; None when not asked
    changes: list[str]  # what changed, in words, e.g. ["dtype float16 -> bfloat16", "rounds 3"]


# Longer messages describe more than a change: they are read as specs of their own.
MAX_CHARS = 100


@dataclass
class _Asked:
    """The changes a follow-up message asks for."""

    dtype: str | None = None
    old_dtype: str | None = None
    shape: tuple[int, ...] | None = None
    old_shape: tuple[int, ...] | None = None
    shape_of: str | None = None  # the input named next to the new shape
    rounds: int | None = None
    rounds_asked: int | None = None
    target: float | None = None
    device: str | None = None
    device_word: str = ""  # the device as the message writes it (`H100`, `GPU`), written into the spec
    kinds: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)  # raised only once the message proves a follow-up

    @property
    def edits_text(self) -> bool:
        """Tell whether the change needs a new spec text (dtype, shape, device), not just new options."""
        return bool(self.kinds & {"dtype", "shape", "device"})


def derive(previous_spec: str, previous: Reading, message: str) -> FollowUp | None:
    """Read a message as a change to the previous spec; None when it is a new spec of its own."""
    asked = _parse(message, previous)
    if asked is None:
        return None
    text, changes = previous_spec, []
    if asked.edits_text and previous.source == "code":
        what = " and ".join(k for k in ("dtype", "shape") if k in asked.kinds)
        if what:
            raise FollowUpError(f"the previous spec is code, whose get_inputs() sets the inputs; can you edit the "
                                f"{what} in the code's get_inputs() and send the code again?")
        # Device words may sit in the code itself (`.cuda()`), which the follow-up must not edit.
        raise FollowUpError("a follow-up cannot change the device of a code spec; can you send the code again "
                            "with the device said in the text around it (e.g. 'on CPU')?")
    expected = Expected(dtypes={i.name: list(i.dtypes) for i in previous.inputs},
                        shapes={i.name: [list(s) for s in i.shapes] for i in previous.inputs})
    if asked.dtype is not None:
        text, change = apply_dtype(text, previous, asked.dtype, asked.old_dtype, expected)
        changes.append(change)
    if asked.shape is not None:
        text, shape_changes = apply_shape(text, previous, asked.shape, asked.old_shape, asked.shape_of, expected)
        changes += shape_changes
    if asked.device is not None:
        text, change = apply_device(text, previous, asked.device, asked.device_word)
        expected.device = asked.device
        changes.append(change)
    if asked.rounds is not None:
        clamped = "" if asked.rounds == asked.rounds_asked else f" (asked {asked.rounds_asked}; 1 to {MAX_ROUNDS})"
        changes.append(f"rounds {asked.rounds}{clamped}")
    if asked.target is not None:
        changes.append(f"target {asked.target:g}x")
    if text != previous_spec and previous.source == "text":
        check(text, previous, expected, changes)
    return FollowUp(spec_text=text, rounds=asked.rounds, target_speedup=asked.target, changes=changes)


# ---------------------------------------------------------------- reading the message


def _parse(message: str, previous: Reading) -> _Asked | None:
    """Return the changes the message asks for, or None when it is not made only of change phrases."""
    norm = normalize(message).strip()
    if not norm or len(norm) > MAX_CHARS or re.search(r"```|\bdef\s|\bclass\s|\breturn\b|=\s*torch\.", norm):
        return None
    asked = _Asked()
    rest = norm
    rest = _take_old_new(rest, DTYPE, lambda old, new: _dtype_pair(asked, old, new))
    rest = _take_old_new(rest, SHAPE, lambda old, new: _shape_pair(asked, old, new))
    for pattern in TARGETS:
        rest = _take(rest, pattern, lambda m: _target(asked, m))
    rest = _take(rest, re.compile(SHAPE, re.A), lambda m: _shape(asked, m.group(0)))
    for rounds in ROUNDS:
        rest = _take(rest, rounds, lambda m: _rounds(asked, m))
    rest = _take(rest, re.compile(DTYPE, FLAGS), lambda m: _dtype(asked, m.group(0)))
    rest = _take(rest, DEVICE, lambda m: _device(asked, m.lastgroup or "", m.group(0)))
    unsupported = UNSUPPORTED_DTYPE.search(rest) or OTHER_DTYPE.search(rest)
    if unsupported:
        asked.problems.append(f"dtype {unsupported.group(0)!r} is not one kernels are generated for; which of "
                              f"{', '.join(SUPPORTED_DTYPES)} should it be?")
        asked.kinds.add("dtype")
        rest = rest[:unsupported.start()] + " " * len(unsupported.group(0)) + rest[unsupported.end():]
    if not asked.kinds or not _only_changes(rest, asked, previous):
        return None
    if asked.problems:
        raise FollowUpError(asked.problems[0])
    if asked.shape is not None:
        names = {i.name for i in previous.inputs}
        named = [w for w in TOKEN.findall(rest) if w in names]
        if len(set(named)) > 1:
            return None
        asked.shape_of = named[0] if named else None
    if "rounds" in asked.kinds and asked.rounds is None:
        raise FollowUpError(f"how many more rounds should it try (1 to {MAX_ROUNDS})?")
    return asked


def _take(text: str, pattern: re.Pattern[str], use: Callable[[re.Match[str]], bool]) -> str:
    """Blank every match that `use` accepts, keeping offsets, and return the rest of the text."""
    for m in reversed(list(pattern.finditer(text))):
        if use(m):
            text = text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():]
    return text


def _take_old_new(text: str, what: str, use: Callable[[str, str], bool]) -> str:
    """Blank every `OLD -> NEW` / `NEW instead of OLD` phrase of `what`, giving `use` the two sides."""
    for template in OLD_NEW:
        pattern = re.compile(template.replace("{X}", what), FLAGS)
        text = _take(text, pattern, lambda m: use(m.group("old"), m.group("new")))
    return text


def _dtype(asked: _Asked, word: str) -> bool:
    """Note the dtype a message names; two different ones are a question."""
    name = dtype_of(word)
    if asked.dtype is not None and asked.dtype != name:
        asked.problems.append(f"the message names two dtypes ({asked.dtype}, {name}); which one should it be?")
    asked.dtype = name
    asked.kinds.add("dtype")
    return True


def _dtype_pair(asked: _Asked, old: str, new: str) -> bool:
    """Note a dtype change written with the dtype it replaces."""
    asked.old_dtype = dtype_of(old)
    return _dtype(asked, new)




def _shape(asked: _Asked, literal: str) -> bool:
    """Note the shape a message gives; two different ones are a question."""
    dims = _dims(literal)
    problem = shape_problem(dims)
    if problem:
        asked.problems.append(f"the shape {list(dims)} {problem}; what shape should it be?")
    if asked.shape is not None and asked.shape != dims:
        asked.problems.append(f"the message gives two shapes ({list(asked.shape)}, {list(dims)}); which input "
                              "should get which? Send one shape at a time, or the whole spec")
    asked.shape = dims
    asked.kinds.add("shape")
    return True


def _shape_pair(asked: _Asked, old: str, new: str) -> bool:
    """Note a shape change written with the shape it replaces."""
    asked.old_shape = _dims(old)
    return _shape(asked, new)


def _dims(literal: str) -> tuple[int, ...]:
    """Return the sizes of a shape literal (`[4096, 11008]`, `(4096, 11008)`, `4096x11008`)."""
    return tuple(int(d) for d in re.findall(r"\d+", literal))


def _target(asked: _Asked, m: re.Match[str]) -> bool:
    """Note the target speedup a message gives."""
    value = float(m.group("v"))
    if value <= 0:
        asked.problems.append(f"a target speedup of {value:g}x cannot be met; what speedup should it aim for?")
    asked.target = value
    asked.kinds.add("target")
    return True


def _rounds(asked: _Asked, m: re.Match[str]) -> bool:
    """Note the rounds a message asks for (clamped to 1..MAX_ROUNDS); `more rounds` alone has no count."""
    groups = m.groupdict()
    count = groups.get("n")
    if count is None and not (groups.get("another") or groups.get("more") or groups.get("after")):
        return False  # a bare `rounds` with no count and no `more`: not a rounds phrase
    if count is None and groups.get("another") and not groups.get("more"):
        count = "1"  # "another round"
    asked.kinds.add("rounds")
    if count is not None:
        value = int(count) if count.isdigit() else COUNT_WORDS[count.lower()]
        asked.rounds_asked = value
        asked.rounds = min(max(value, 1), MAX_ROUNDS)
    return True


def _device(asked: _Asked, kind: str, word: str) -> bool:
    """Note the device a message names; two different ones are a question."""
    if asked.device is not None and asked.device != kind:
        asked.problems.append(f"the message names two devices ({asked.device}, {kind}); which one should it run on?")
    asked.device = kind
    asked.device_word = word if word.isascii() else DEVICE_NAMES[kind]
    asked.kinds.add("device")
    return True


def _only_changes(rest: str, asked: _Asked, previous: Reading) -> bool:
    """Tell whether what is left of a message, once its change phrases are taken, is only fillers."""
    context = set().union(*(CONTEXT_FILLERS.get(k, set()) for k in asked.kinds))
    cjk_context = set().union(*(CJK_CONTEXT_FILLERS.get(k, set()) for k in asked.kinds))
    names = {i.name for i in previous.inputs} if asked.shape is not None else set()
    for token in TOKEN.findall(rest):
        low = token.lower()
        if re.match(r"[\u3400-\u9fff]", token):
            if not _cjk_fillers_only(token, CJK_FILLERS | cjk_context):
                return False
        elif re.match(r"[A-Za-z_]", token):
            if low.rstrip(".") not in FILLERS | context and token not in names:
                return False
        elif token[0].isdigit() or token in "[]{}=<*^$#@%|\\":
            return False
    return True


def _cjk_fillers_only(run: str, words: set[str]) -> bool:
    """Tell whether a run of CJK characters splits into the given words (longest match first)."""
    i, longest = 0, max(len(w) for w in words)
    while i < len(run):
        size = next((n for n in range(min(longest, len(run) - i), 0, -1) if run[i:i + n] in words), 0)
        if size == 0:
            return False
        i += size
    return True

