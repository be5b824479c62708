"""The requirements node: the options a person passes override the spec, and the reading shows them."""

from __future__ import annotations

from agent.nodes.requirements import _with_overrides
from agent.reader import read_spec


def test_rounds_and_target_given_as_options_show_in_the_reading() -> None:
    spec = read_spec("relu of x [64, 64] fp32, target speedup 2x, at most 3 rounds")
    assert (spec.reading.target_speedup, spec.reading.max_rounds) == (2.0, 3)  # type: ignore[union-attr]
    overridden = _with_overrides(spec, rounds=1, target=5.0)
    assert (overridden.target_speedup, overridden.max_rounds) == (5.0, 1)
    assert overridden.reading is not None and "target x5, at most 1 rounds" in overridden.reading.render()
    assert _with_overrides(spec, rounds=None, target=None) is spec
