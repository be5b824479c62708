"""Property: whatever text arrives, the reader returns a reading or a question, never a traceback.

Three sources of text: random printable text, random unicode (CJK, symbols, control characters), and the corpus's
prose specs mutated (spans cut, copied, swapped, characters inserted). `KERNELGEN_FUZZ_EXAMPLES` sets how many
examples each property draws (the acceptance run used 10,000 per property; CI draws fewer to stay within budget).
"""

from __future__ import annotations

import os

from corpus_loader import load_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.reader import read_spec
from agent.reader.errors import ReaderBug
from agent.spec import OpSpec, SpecError

EXAMPLES = int(os.environ.get("KERNELGEN_FUZZ_EXAMPLES", "600"))
PROSE = [c.spec for c in load_corpus() if not c.is_code and "```" not in c.spec and "def " not in c.spec]
PIECES = ["[", "]", "(", ")", ",", "x", "[4, 8]", "fp16", "over the last dim", "然后", "先", "=", "*", "**", "^",
          "softmax", "relu", "关于", "一", "-1", "0", "1e-5", "then", "and", " ", "\n", "：", "，", "—", "`", "|"]
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _read_quietly(text: str) -> None:
    """Read; a spec error is an answer, a ReaderBug or any other exception fails the property."""
    try:
        result = read_spec(text)
    except ReaderBug as exc:  # the reader's own failure, turned into a question: still a defect
        raise AssertionError(f"the reader failed on {text!r}: {exc}") from exc
    except SpecError:
        return
    assert isinstance(result, OpSpec)
    assert result.reading is not None and result.reading.pytorch


@SETTINGS
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=120))
def test_random_printable_text(text: str) -> None:
    _read_quietly(text)


@SETTINGS
@given(st.text(max_size=80))
def test_random_unicode(text: str) -> None:
    _read_quietly(text)


@st.composite
def mutated_specs(draw: st.DrawFn) -> str:
    """A corpus spec with random edits: spans cut, repeated or swapped, and reader-significant pieces inserted."""
    text = draw(st.sampled_from(PROSE))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        if not text:
            break
        i = draw(st.integers(min_value=0, max_value=len(text) - 1))
        j = draw(st.integers(min_value=i, max_value=min(len(text), i + 12)))
        action = draw(st.sampled_from(["cut", "repeat", "insert", "swap"]))
        if action == "cut":
            text = text[:i] + text[j:]
        elif action == "repeat":
            text = text[:j] + text[i:j] + text[j:]
        elif action == "insert":
            text = text[:i] + draw(st.sampled_from(PIECES)) + text[i:]
        else:
            text = text[:i] + text[j:] + text[i:j]
    return text


@SETTINGS
@given(mutated_specs())
def test_mutated_corpus_specs(text: str) -> None:
    _read_quietly(text)
