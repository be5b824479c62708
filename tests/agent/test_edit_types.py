"""Edit types decided from the code, and the rule of what each type may touch."""

from types import SimpleNamespace

from agent.edit_rules import check_edit_rule
from agent.edit_types import EditType, classify_edit, signature_of
from agent.generators.base import KernelFiles, LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.nodes.classify import classify
from agent.spec import OpSpec, TensorSpec
from agent.state import RoundRecord

SIGNATURE = "x: torch.Tensor, bias: torch.Tensor"


def _flat(
    *,
    block_size: int = 1024,
    num_warps: int = 4,
    signature: str = SIGNATURE,
    returns: str = "torch.Tensor",
    doc: str = "Compute out = gelu(x + bias) in one fused pass.",
    mask: str = "offsets < n_elements",
    x_load: str = "tl.load(x_ptr + offsets, mask=mask)",
    erf_scale: str = "0.7071067811865476",
) -> str:
    """Build a 1-D elementwise `op_triton.py` (gelu of x plus a row-broadcast bias)."""
    return f'''"""Fused Triton kernel for `op`: out = gelu(x + bias)."""

import torch
import triton
import triton.language as tl

# Launch configuration: a parameter edit changes only these values.
BLOCK_SIZE = {block_size}
NUM_WARPS = {num_warps}


@triton.jit
def op_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    """Each program computes one contiguous tile of BLOCK_SIZE elements."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = {mask}
    x = {x_load}.to(tl.float32)
    bias = tl.load(bias_ptr + offsets % n_cols, mask=mask).to(tl.float32)
    t = x + bias
    out = 0.5 * t * (1.0 + tl.erf(t * {erf_scale}))
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def op({signature}) -> {returns}:
    """{doc}"""
    x = x.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    op_kernel[grid](x, bias, out, n_elements, x.shape[-1], BLOCK_SIZE=BLOCK_SIZE, num_warps=NUM_WARPS)
    return out
'''


def _persistent(*, grid: str = "(triton.cdiv(n_elements, BLOCK_SIZE),)", num_stages: int = 2) -> str:
    """Build a grid-stride `op_triton.py` whose grid and pipelining depth are set at the launch."""
    return f'''"""Persistent Triton kernel for `op`: out = x * scale."""

import functools

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 1024


@functools.lru_cache(maxsize=None)
def multiprocessor_count(device: torch.device) -> int:
    """Count the device's SMs."""
    return torch.cuda.get_device_properties(device).multi_processor_count


@triton.jit
def op_kernel(x_ptr, out_ptr, scale, n_elements, BLOCK_SIZE: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(axis=0)
    n_tiles = tl.cdiv(n_elements, BLOCK_SIZE)
    for tile in tl.range(pid, n_tiles, tl.num_programs(axis=0), num_stages=NUM_STAGES):
        offsets = tile * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x * scale, mask=mask)


def op(x: torch.Tensor, scale: float) -> torch.Tensor:
    """Compute out = x * scale."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    sms = multiprocessor_count(x.device)
    grid = {grid}
    op_kernel[grid](x, out, scale, n_elements, BLOCK_SIZE=BLOCK_SIZE, NUM_STAGES={num_stages})
    return out
'''


def _autotuned(configs: str) -> str:
    """Build an autotuned `op_triton.py` from the source of its list of triton.Config."""
    return f'''"""Autotuned Triton kernel for `op`: out = relu(x)."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs={configs}, key=["n_elements"])
@triton.jit
def op_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


def op(x: torch.Tensor) -> torch.Tensor:
    """Compute out = relu(x)."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    op_kernel[lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)](x, out, n_elements)
    return out
'''


def _rmsnorm(*, eps: str = "1e-5", block_n: int = 1024) -> str:
    """Build a row-wise `op_triton.py` (RMS norm) with a numerical constant beside its tunable."""
    return f'''"""Triton kernel for `op`: out = x / sqrt(mean(x**2) + EPS) * weight, one row per program."""

import torch
import triton
import triton.language as tl

EPS = {eps}
BLOCK_N = {block_n}


@triton.jit
def op_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, (x / rms * w).to(out_ptr.dtype.element_ty), mask=mask)


def op(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Normalize each row of x by its root mean square and scale by weight."""
    out = torch.empty_like(x)
    op_kernel[(x.shape[0],)](x, weight, out, x.shape[-1], EPS, BLOCK_N=BLOCK_N, num_warps=4)
    return out
'''


TILED_2D = '''"""Fused Triton kernel for `op`: out = gelu(x + bias), on [BLOCK_M, BLOCK_N] tiles."""

import torch
import triton
import triton.language as tl

BLOCK_M = 4
BLOCK_N = 256
NUM_WARPS = 4


@triton.jit
def op_kernel(x_ptr, bias_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    bias = tl.load(bias_ptr + cols, mask=cols < n_cols, eviction_policy="evict_last").to(tl.float32)
    t = x + bias[None, :]
    out = 0.5 * t * (1.0 + tl.erf(t * 0.7071067811865476))
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def op(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Compute out = gelu(x + bias) in one fused pass."""
    x = x.contiguous()
    out = torch.empty_like(x)
    n_cols = x.shape[-1]
    n_rows = out.numel() // n_cols
    grid = (triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))
    op_kernel[grid](x, bias, out, n_rows, n_cols, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=NUM_WARPS)
    return out
'''


# --- parameter edits -----------------------------------------------------------------------------------------------


def test_block_size_change_is_a_parameter_edit() -> None:
    assert classify_edit(_flat(block_size=1024), _flat(block_size=256), "op") == "parameter"


def test_num_warps_change_is_a_parameter_edit() -> None:
    assert classify_edit(_flat(num_warps=4), _flat(num_warps=8), "op") == "parameter"


def test_tunable_constexpr_keyword_at_the_launch_is_a_parameter_edit() -> None:
    assert classify_edit(_persistent(num_stages=2), _persistent(num_stages=4), "op") == "parameter"


def test_autotune_config_list_change_is_a_parameter_edit() -> None:
    old = _autotuned('[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)]')
    new = _autotuned(
        '[\n    triton.Config({"BLOCK_SIZE": 512}, num_warps=4, num_stages=2),\n'
        '    triton.Config({"BLOCK_SIZE": 2048}, num_warps=8),\n]'
    )
    assert classify_edit(old, new, "op") == "parameter"


def test_autotune_config_that_sets_a_non_tunable_or_runs_a_hook_is_a_logic_edit() -> None:
    old = _autotuned('[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)]')
    flag = _autotuned('[triton.Config({"BLOCK_SIZE": 1024, "FAST_MATH": 1}, num_warps=4)]')
    hook = _autotuned('[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4, pre_hook=lambda args: None)]')
    assert classify_edit(old, flag, "op") == "logic"
    assert classify_edit(old, hook, "op") == "logic"


def test_capping_the_grid_at_programs_per_sm_is_a_parameter_edit() -> None:
    old = _persistent(grid="(triton.cdiv(n_elements, BLOCK_SIZE),)")
    new = _persistent(grid="(min(triton.cdiv(n_elements, BLOCK_SIZE), 4 * sms),)")
    assert classify_edit(old, new, "op") == "parameter"


def test_a_grid_that_calls_something_new_is_a_logic_edit() -> None:
    old = _persistent(grid="(triton.cdiv(n_elements, BLOCK_SIZE),)")
    new = _persistent(grid="(min(triton.cdiv(n_elements, BLOCK_SIZE), 4 * multiprocessor_count(x.device)),)")
    assert classify_edit(old, new, "op") == "logic"
    # A call the old grid already made may stay while the numbers around it change.
    assert classify_edit(new, new.replace("4 * multiprocessor", "8 * multiprocessor"), "op") == "parameter"


def test_docstring_only_change_counts_as_no_semantic_change() -> None:
    old = _flat()
    new = _flat(doc="Add the bias, then apply GELU (erf form), all in float32.").replace(
        "Each program computes one contiguous tile", "One program per tile"
    )
    assert old != new
    assert classify_edit(old, new, "op") == "parameter"


def test_generated_launch_configs_are_parameter_edits_and_a_new_schedule_is_logic() -> None:
    spec = OpSpec(name="op", formula="gelu(x + bias)", inputs=[
        TensorSpec(name="x", shapes=[[64, 96]], dtypes=["float16"]),
        TensorSpec(name="bias", shapes=[[96]], dtypes=["float16"]),
    ])
    generator = ElementwiseGenerator()
    old = generator.generate(spec, LaunchConfig(schedule="flat", block_size=1024, num_warps=4))
    new = generator.generate(spec, LaunchConfig(schedule="flat", block_size=256, num_warps=8))
    assert old.source("triton") != new.source("triton")
    assert classify_edit(old.source("triton"), new.source("triton"), "op") == "parameter"
    assert check_edit_rule("parameter", old.files, new.files, "op") is None


# --- interface edits -----------------------------------------------------------------------------------------------


def test_renamed_argument_is_an_interface_edit() -> None:
    assert classify_edit(_flat(), _flat(signature="x: torch.Tensor, b: torch.Tensor"), "op") == "interface"


def test_added_parameter_with_default_is_an_interface_edit() -> None:
    new = _flat(signature=f"{SIGNATURE}, approximate: str = 'none'")
    assert classify_edit(_flat(), new, "op") == "interface"


def test_return_annotation_change_is_an_interface_edit() -> None:
    assert classify_edit(_flat(), _flat(returns="tuple[torch.Tensor, torch.Tensor]"), "op") == "interface"


def test_missing_entry_point_is_an_interface_edit() -> None:
    new = _flat().replace("def op(", "def op_forward(")
    assert signature_of(new, "op") is None
    assert classify_edit(_flat(), new, "op") == "interface"
    assert classify_edit(new, new, "op") == "interface"  # still missing: nothing for the other files to match


# --- logic edits ---------------------------------------------------------------------------------------------------


def test_changed_math_constant_in_the_kernel_is_a_logic_edit() -> None:
    assert classify_edit(_flat(), _flat(erf_scale="0.7"), "op") == "logic"


def test_changed_mask_is_a_logic_edit() -> None:
    assert classify_edit(_flat(), _flat(mask="offsets < n_elements - 1"), "op") == "logic"


def test_non_tunable_constant_is_a_logic_edit_beside_a_tunable_one() -> None:
    assert classify_edit(_rmsnorm(eps="1e-5"), _rmsnorm(eps="1e-6"), "op") == "logic"
    assert classify_edit(_rmsnorm(block_n=1024), _rmsnorm(block_n=2048), "op") == "parameter"


def test_1d_kernel_to_2d_tiles_is_a_logic_edit() -> None:
    assert "tl.program_id(1)" in TILED_2D
    assert classify_edit(_flat(), TILED_2D, "op") == "logic"


def test_eviction_policy_on_a_load_is_a_logic_edit() -> None:
    new = _flat(x_load='tl.load(x_ptr + offsets, mask=mask, eviction_policy="evict_first")')
    assert classify_edit(_flat(), new, "op") == "logic"


def test_warps_from_a_new_helper_call_is_a_logic_edit() -> None:
    new = _flat().replace("num_warps=NUM_WARPS", "num_warps=pick_warps(n_elements)")
    assert classify_edit(_flat(), new, "op") == "logic"


def test_unparsable_source_is_a_logic_edit_that_the_rule_refuses() -> None:
    broken = _flat().replace("mask = offsets < n_elements", "mask = offsets <")
    assert classify_edit(_flat(), broken, "op") == "logic"
    problem = check_edit_rule("logic", _files(), _files(triton=broken), "op")
    assert problem is not None and "op_triton.py does not parse" in problem


# --- the rule of each edit type ------------------------------------------------------------------------------------


def _baseline(signature: str = SIGNATURE) -> str:
    return f'''"""PyTorch reference for `op`."""

import torch


def op({signature}) -> torch.Tensor:
    """Compute out = gelu(x + bias) with eager PyTorch ops."""
    return torch.nn.functional.gelu((x + bias).float()).to(x.dtype)
'''


def _accuracy(imports: str = "from op_triton import op\nfrom op_baseline import op as reference") -> str:
    return f'''"""Compare op against its reference."""

import torch

{imports}


def main() -> None:
    """Check one shape."""
    x, bias = torch.randn(64, 96), torch.randn(96)
    torch.testing.assert_close(op(x, bias), reference(x, bias), atol=1e-3, rtol=1e-3)
'''


PERFORMANCE = '''"""Time op against its reference."""

import triton.testing

import op_triton as kernel_module
from op_baseline import op as reference


def main() -> None:
    """Time one shape."""
    print(triton.testing.do_bench(lambda: kernel_module.op(*ARGS)), triton.testing.do_bench(lambda: reference(*ARGS)))
'''


def _files(
    triton: str | None = None, baseline: str | None = None, accuracy: str | None = None,
    performance: str | None = PERFORMANCE,
) -> dict[str, str]:
    """Return the four files of a version, by name; None leaves a file out."""
    files = {
        "op_triton.py": triton if triton is not None else _flat(),
        "op_baseline.py": baseline if baseline is not None else _baseline(),
        "op_accuracy.py": accuracy if accuracy is not None else _accuracy(),
        "op_performance.py": performance,
    }
    return {name: source for name, source in files.items() if source is not None}


def _rule(edit_type: EditType, old: dict[str, str], new: dict[str, str]) -> str | None:
    """Check the rule after confirming the classifier agrees on the edit type."""
    assert classify_edit(old["op_triton.py"], new["op_triton.py"], "op") == edit_type
    return check_edit_rule(edit_type, old, new, "op")


def test_parameter_edit_that_also_changed_the_baseline_is_refused() -> None:
    baseline = _baseline().replace(".float())", ".float(), approximate='tanh')")
    new = _files(triton=_flat(block_size=256), baseline=baseline)
    assert baseline != _baseline()
    problem = _rule("parameter", _files(), new)
    assert problem is not None
    assert "op_baseline.py" in problem and "op_accuracy.py" not in problem


def test_parameter_edit_of_only_the_kernel_file_is_accepted() -> None:
    assert _rule("parameter", _files(), _files(triton=_flat(block_size=256, num_warps=8))) is None


def test_parameter_edit_that_dropped_a_file_is_refused() -> None:
    problem = _rule("parameter", _files(), _files(triton=_flat(block_size=256), performance=None))
    assert problem is not None and "op_performance.py" in problem


def test_logic_edit_whose_baseline_signature_differs_is_refused() -> None:
    new = _files(triton=_flat(mask="offsets < n_elements - 1"), baseline=_baseline("x: torch.Tensor, b: torch.Tensor"))
    problem = _rule("logic", _files(), new)
    assert problem is not None and "different parameters" in problem


def test_logic_edit_whose_accuracy_no_longer_imports_the_baseline_is_refused() -> None:
    new = _files(triton=TILED_2D, accuracy=_accuracy("from op_triton import op\nreference = torch.add"))
    problem = _rule("logic", _files(), new)
    assert problem is not None
    assert "op_accuracy.py" in problem and "op_baseline" in problem


def test_consistent_logic_edit_of_all_four_files_is_accepted() -> None:
    new = _files(
        triton=TILED_2D,
        baseline=_baseline().replace("(x + bias).float()", "x.float() + bias.float()"),
        accuracy=_accuracy("import op_triton\nfrom op_baseline import op as reference\nop = op_triton.op"),
        performance=PERFORMANCE.replace("do_bench(", "do_bench(warmup=5, fn="),
    )
    assert _rule("logic", _files(), new) is None


def test_interface_edit_with_the_new_signature_in_kernel_and_baseline_is_accepted() -> None:
    signature = f"{SIGNATURE}, approximate: str = 'none'"
    new = _files(triton=_flat(signature=signature), baseline=_baseline(signature))
    assert _rule("interface", _files(), new) is None


def test_interface_edit_that_left_the_baseline_behind_is_refused() -> None:
    new = _files(triton=_flat(signature=f"{SIGNATURE}, approximate: str = 'none'"))
    problem = _rule("interface", _files(), new)
    assert problem is not None and "op_baseline.py" in problem


def test_interface_edit_missing_a_file_is_refused() -> None:
    signature = f"{SIGNATURE}, approximate: str = 'none'"
    new = _files(triton=_flat(signature=signature), baseline=_baseline(signature), performance=None)
    problem = _rule("interface", _files(), new)
    assert problem is not None and "op_performance.py" in problem


# --- the classify node ---------------------------------------------------------------------------------------------


def _run_classify(old: dict[str, str], new: dict[str, str]) -> tuple[dict, list[str]]:
    """Run the node on a candidate version against the best one; return its update and its reports."""
    reports: list[str] = []
    runtime = SimpleNamespace(context=SimpleNamespace(report=lambda stage, message: reports.append(message)))
    config = LaunchConfig()
    best = KernelFiles(op="op", files=old, config=config)
    files = KernelFiles(op="op", files=new, config=config)
    pending = RoundRecord(index=3, edit_type="parameter", config=config, reason="test", accuracy_status="not run")
    state = {"files": files, "best_files": best, "pending": pending, "refusals": ["earlier"]}
    return classify(state, runtime), reports  # type: ignore[arg-type]


def test_classify_node_sets_the_edit_type_of_an_accepted_edit() -> None:
    update, reports = _run_classify(_files(), _files(triton=TILED_2D))
    assert update["pending"].edit_type == "logic"
    assert "files" not in update and "refusals" not in update
    assert reports == ["round 3: logic edit"]


def test_classify_node_refuses_a_broken_rule_and_falls_back_to_the_best_files() -> None:
    old = _files()
    update, reports = _run_classify(old, _files(triton=_flat(block_size=256), baseline=_baseline() + "\n"))
    assert update["pending"] is None
    assert update["files"].files == old
    assert update["refusals"][0] == "earlier"
    assert update["refusals"][1].startswith("round 3 refused (parameter edit): ")
    assert "op_baseline.py" in update["refusals"][1]
    assert reports == [update["refusals"][1]]
