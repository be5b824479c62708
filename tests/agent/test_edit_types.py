"""Edit types decided from the code: what a round may touch depends on this."""

from agent.edit_types import classify_edit
from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.spec import OpSpec, TensorSpec


def _spec(formula: str = "gelu(x + bias)") -> OpSpec:
    return OpSpec(name="op", formula=formula, inputs=[
        TensorSpec(name="x", shapes=[[64, 96]], dtypes=["float16"]),
        TensorSpec(name="bias", shapes=[[96]], dtypes=["float16"]),
    ])


def _triton(spec: OpSpec, config: LaunchConfig) -> str:
    return ElementwiseGenerator().generate(spec, config).source("triton")


def test_new_block_size_and_warps_is_a_parameter_edit() -> None:
    old = _triton(_spec(), LaunchConfig(block_size=1024, num_warps=4))
    new = _triton(_spec(), LaunchConfig(block_size=4096, num_warps=8))
    assert old != new
    assert classify_edit(old, new, "op") == "parameter"


def test_changed_math_is_a_logic_edit() -> None:
    old = _triton(_spec(), LaunchConfig())
    new = _triton(_spec("silu(x + bias)"), LaunchConfig())
    assert classify_edit(old, new, "op") == "logic"


def test_changed_entry_signature_is_an_interface_edit() -> None:
    old = _triton(_spec(), LaunchConfig())
    new = old.replace("def op(x: torch.Tensor, bias: torch.Tensor)", "def op(x: torch.Tensor, b: torch.Tensor)")
    assert classify_edit(old, new, "op") == "interface"


def test_a_number_inside_the_kernel_is_logic_not_parameter() -> None:
    old = _triton(_spec(), LaunchConfig())
    new = old.replace("0.7071067811865476", "0.7")
    assert classify_edit(old, new, "op") == "logic"


def test_a_changed_mask_is_logic() -> None:
    old = _triton(_spec(), LaunchConfig())
    new = old.replace("mask = offsets < n_elements", "mask = offsets < n_elements - 1")
    assert classify_edit(old, new, "op") == "logic"
