"""The static check refuses kernels that hand the work to torch or launch nothing."""

import pytest

from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.runtime.static_check import StaticCheckError, check_triton_file
from agent.spec import OpSpec, TensorSpec

SPEC = OpSpec(name="axpy", formula="residual + alpha * y", inputs=[
    TensorSpec(name="residual", shapes=[[33, 65]], dtypes=["float32"]),
    TensorSpec(name="y", shapes=[[33, 65]], dtypes=["float32"]),
], params=[{"name": "alpha", "value": 0.5}])
GOOD = ElementwiseGenerator().generate(SPEC, LaunchConfig()).source("triton")


def test_generated_kernel_passes() -> None:
    check_triton_file(GOOD, "axpy")


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        (("    return out\n", "    return residual + alpha * y\n"), "arithmetic on the tensor"),
        (("    return out\n", "    return torch.add(residual, y)\n"), "torch.add"),
        (("    return out\n", "    return F.gelu(out)\n"), "F.gelu"),
        (("    return out\n", "    return out.mul(2.0)\n"), ".mul()"),
        (("axpy_kernel[grid](", "print("), "never launches"),
        (("@triton.jit\ndef axpy_kernel", "def axpy_kernel"), "no @triton.jit kernel"),
        (("def axpy(", "def axpy_entry("), "entry point axpy() is not defined"),
    ],
)
def test_cheating_or_broken_kernels_are_refused(mutation: tuple[str, str], message: str) -> None:
    bad = GOOD.replace(*mutation)
    assert bad != GOOD
    with pytest.raises(StaticCheckError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        check_triton_file(bad, "axpy")
