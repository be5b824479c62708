"""A parameter search checks and times each configuration in one sandboxed run; the fastest correct one wins."""

import math
from pathlib import Path

import pytest

from agent.generators.base import KernelFiles, LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.reader import read_spec
from agent.runtime.tuning import SEARCH_MIN_GAIN, SearchResult, Trial, pick_winner, search_cases, search_configs
from agent.spec import OpSpec

GENERATOR = ElementwiseGenerator()
TIMEOUT_S = 120.0
FLAT_GRID = "grid = (triton.cdiv(n_elements, BLOCK_SIZE),)"


def _spec(text: str = "fused bias-add + GELU, x [16, 300] fp32, bias [300]") -> OpSpec:
    return read_spec(text)


def _flat(block_size: int, num_warps: int = 4) -> LaunchConfig:
    return LaunchConfig(schedule="flat", block_size=block_size, num_warps=num_warps)


def _search(files: KernelFiles, spec: OpSpec, configs: list[LaunchConfig], workdir: Path) -> SearchResult:
    return search_configs(files, spec, configs, workdir, device="cpu", timeout_s=TIMEOUT_S)


def _assert_winner_is_fastest_ok(result: SearchResult) -> None:
    ok = [t for t in result.trials if t.status == "ok"]
    assert ok
    fastest = min(ok, key=lambda t: t.ms or math.inf)
    start = result.trials[0]
    if start.status == "ok" and start.ms is not None and fastest.ms is not None:
        # The start keeps its place unless the fastest beats it by more than timing noise.
        within_noise = fastest.ms * (1 + SEARCH_MIN_GAIN) > start.ms
        assert result.winner == (start.config if within_noise else fastest.config)
    else:
        assert result.winner == fastest.config
    assert all(t.ms is not None and t.ms > 0 for t in ok)


def test_search_measures_every_config_in_order_and_picks_the_fastest(tmp_path: Path) -> None:
    spec = _spec("fused bias-add + GELU, x [16, 300] fp32 and fp16, bias [300]")
    configs = [LaunchConfig(schedule="rows", block_size=n, block_m=m, num_warps=w)
               for n, m, w in [(64, 4, 2), (128, 2, 4), (512, 1, 4), (256, 8, 8)]]
    files = GENERATOR.generate(spec, configs[0])
    result = _search(files, spec, configs, tmp_path / "search")
    assert result.status == "pass", result.message
    assert [t.config for t in result.trials] == configs
    assert [t.status for t in result.trials] == ["ok"] * 4, [t.message for t in result.trials]
    _assert_winner_is_fastest_ok(result)
    # Both dtype cases of the largest shape are checked and timed; ms is their geometric mean.
    assert search_cases(spec) == [(0, 0), (0, 1)]
    assert [c["dtypes"]["x"] for c in result.cases] == ["float32", "float16"]
    for trial in result.trials:
        assert len(trial.case_ms) == 2
        assert trial.ms == pytest.approx(math.sqrt(trial.case_ms[0] * trial.case_ms[1]))
    assert "wall clock" in result.timer
    table = result.table()
    assert sorted(row["config"] for row in table) == sorted(c.label() for c in configs)
    assert [row["ms"] for row in table] == sorted(t.ms for t in result.trials if t.ms is not None)
    assert result.winner is not None
    assert table[0]["config"] == result.winner.label()


def test_a_config_that_computes_wrong_results_never_wins(tmp_path: Path) -> None:
    spec = _spec()
    files = GENERATOR.generate(spec, _flat(256))
    source = files.source("triton")
    assert source.count(FLAT_GRID) == 1
    # Hand-broken: at BLOCK_SIZE == 128 the grid is one program short, so the last tile is never written. The
    # order puts it after a correct configuration whose freed output memory the allocator may hand back: the
    # harness must poison torch.empty so stale correct values cannot pass the check.
    broken = source.replace(FLAT_GRID, "grid = (triton.cdiv(n_elements, BLOCK_SIZE) - (BLOCK_SIZE == 128),)")
    files = files.model_copy(update={"files": files.files | {files.name_of("triton"): broken}})
    configs = [_flat(256), _flat(1024), _flat(128, 1), _flat(512, 2)]
    result = _search(files, spec, configs, tmp_path / "search")
    assert result.status == "pass", result.message
    assert [t.status for t in result.trials] == ["ok", "ok", "wrong", "ok"], [t.message for t in result.trials]
    wrong = result.trials[2]
    assert wrong.ms is None and wrong.case_ms == []
    assert "mismatch" in wrong.message
    assert result.winner != _flat(128, 1)
    _assert_winner_is_fastest_ok(result)
    table = result.table()
    assert len(table) == 4
    assert table[-1] == {"config": "flat: BLOCK_SIZE=128, NUM_WARPS=1", "status": "wrong", "ms": None,
                         "message": wrong.message}


def test_a_config_that_fails_to_launch_is_an_error_and_the_rest_go_on(tmp_path: Path) -> None:
    spec = _spec()
    configs = [_flat(1000), _flat(256), _flat(1024)]  # tl.arange needs a power of two
    result = _search(GENERATOR.generate(spec, _flat(1024)), spec, configs, tmp_path / "search")
    assert result.status == "pass", result.message
    assert [t.status for t in result.trials] == ["error", "ok", "ok"]
    assert "power of 2" in result.trials[0].message
    assert result.trials[0].ms is None
    assert result.winner in configs[1:]
    _assert_winner_is_fastest_ok(result)


def test_no_config_passing_leaves_no_winner(tmp_path: Path) -> None:
    spec = _spec()
    result = _search(GENERATOR.generate(spec, _flat(1024)), spec, [_flat(1000), _flat(3000)], tmp_path / "search")
    assert result.status == "pass"
    assert [t.status for t in result.trials] == ["error", "error"]
    assert result.winner is None
    assert result.message == "no configuration passed the check"


def test_configs_of_another_schedule_are_refused(tmp_path: Path) -> None:
    spec = _spec()
    files = GENERATOR.generate(spec, _flat(1024))
    rows = LaunchConfig(schedule="rows", block_size=256, block_m=2)
    with pytest.raises(ValueError, match="own schedule"):
        _search(files, spec, [rows], tmp_path / "other")
    with pytest.raises(ValueError, match="own schedule"):
        _search(files, spec, [_flat(256), rows], tmp_path / "mixed")
    assert not (tmp_path / "other").exists() and not (tmp_path / "mixed").exists()  # nothing was run
    empty = _search(files, spec, [], tmp_path / "empty")
    assert empty.status == "error" and empty.winner is None


def test_a_winner_within_noise_of_the_start_does_not_replace_it() -> None:
    start, close, clear = _flat(1024), _flat(512, 2), _flat(256)
    trials = [Trial(config=start, status="ok", ms=1.00), Trial(config=close, status="ok", ms=0.99),
              Trial(config=clear, status="wrong", ms=None)]
    assert pick_winner(trials) == start
    trials[1] = Trial(config=close, status="ok", ms=0.95)
    assert pick_winner(trials) == close
    trials[0] = Trial(config=start, status="error", ms=None)
    assert pick_winner(trials) == close
    assert pick_winner([Trial(config=start, status="wrong")]) is None
