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


FINAL_RETURN = "    return out\n\n\nif __name__"
WRAPPER = "def axpy("


def _hidden(helper: str, returned: str) -> str:
    """Put `helper` above the wrapper and make the wrapper's last line `return <returned>` after its launch."""
    text = GOOD.replace(WRAPPER, f"{helper}\n\n\n{WRAPPER}", 1)
    assert FINAL_RETURN in text
    return text.replace(FINAL_RETURN, f"    return {returned}\n\n\nif __name__", 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_hidden("class _Finisher:\n    def run(self, a, b):\n        return torch.add(a, b)",
                 "_Finisher().run(residual, y)"), "_Finisher.run() calls torch.add"),
        (_hidden("class _Finisher:\n    @staticmethod\n    def run(a):\n        return a.cumsum(-1)",
                 "_Finisher.run(out)"), "_Finisher.run() computes with .cumsum()"),
        (_hidden("_finish = lambda a: a.mul(2.0)", "_finish(out)"), "_finish computes with .mul()"),
        (_hidden("def _outer(a):\n    def inner(b):\n        return torch.exp(b)\n    return inner(a)", "_outer(out)"),
         "_outer() calls torch.exp"),
        (_hidden("def _finish(a):\n    return a.__add__(1.0)", "_finish(out)"), "computes with .__add__()"),
        (_hidden("from axpy_baseline import axpy as _reference", "_reference(residual, y, alpha)"),
         "imports axpy_baseline"),
        (_hidden("import spec_reference", "spec_reference.axpy(residual, y, alpha)"), "imports spec_reference"),
        (_hidden("import numpy as np", "out"), "imports numpy"),
        (_hidden("import operator", "operator.add(residual, y)"), "imports operator"),
        (_hidden("_ref = sys.modules.get('axpy_baseline')", "_ref.axpy(residual, y, alpha)"), "sys.modules"),
        (_hidden("class _Mode:\n    def __torch_function__(self, *a):\n        return None", "out"),
         "__torch_function__"),
        (_hidden("def _finish(a):\n    return a.apply_(lambda v: v * 2)", "_finish(out)"), "computes with .apply_()"),
        (GOOD.replace("@triton.jit\ndef axpy_kernel",
                      "@triton.autotune(configs=[triton.Config({}, pre_hook=lambda a: a['out_ptr'].copy_(a['y']))],"
                      " key=[])\n@triton.jit\ndef axpy_kernel"),
         "the decorator of axpy_kernel() computes with .copy_()"),
        (_hidden("class _T:\n    jit = staticmethod(lambda f: f)\n\n\n@_T.jit\ndef _finish(a):\n"
                 "    return torch.exp(a)", "_finish(out)"), "_finish() calls torch.exp"),
        (GOOD.replace("BLOCK_SIZE = ", "_STASH = []\nBLOCK_SIZE = ", 1).replace(
            "    pid = tl.program_id(axis=0)", "    pid = tl.program_id(axis=0)\n    _STASH.append(pid)", 1),
         "reads _STASH"),
        (_hidden("def _python(v):\n    return v", "out").replace(
            "    pid = tl.program_id(axis=0)", "    pid = _python(tl.program_id(axis=0))", 1), "reads _python"),
        (_hidden("", "torch.cuda.torch.cumulative_trapezoid(residual)"), "uses torch.cuda.torch"),
        (_hidden("def _hook(n):\n    n['out_ptr'].exp_()", "_hook({'out_ptr': out}) or out"),
         "computes with .exp_()"),
        (_hidden("_f = eval('len')", "out"), "uses eval"),
        (_hidden("_ns = vars(torch)", "out"), "uses vars"),
    ],
    ids=["class-method", "static-method", "module-lambda", "nested-function", "dunder", "imported-baseline",
         "imported-spec-reference", "numpy", "operator", "sys-modules", "torch-function", "apply_", "autotune-hook",
         "fake-jit", "kernel-global", "kernel-calls-python", "torch-through-cuda", "in-place", "eval", "vars"],
)
def test_torch_compute_reached_any_way_from_the_entry_is_refused(text: str, message: str) -> None:
    assert text != GOOD
    with pytest.raises(StaticCheckError) as refused:
        check_triton_file(text, "axpy")
    assert message in str(refused.value)


def test_a_launcher_class_and_a_self_check_that_imports_the_reference_stay_allowed() -> None:
    launcher = ("class _Launcher:\n    def __init__(self, warps: int) -> None:\n        self.warps = warps\n\n"
                "    def __call__(self, grid, *args, **meta):\n        axpy_kernel[grid](*args, **meta)\n")
    text = GOOD.replace(WRAPPER, f"{launcher}\n\n{WRAPPER}", 1).replace("    axpy_kernel[grid](\n",
                                                                          "    _Launcher(NUM_WARPS)(grid,\n", 1)
    assert "_Launcher(NUM_WARPS)(grid," in text and "from axpy_baseline import" in text  # the self-check's import
    check_triton_file(text, "axpy")


HONEST = '''
EPS = 1e-6
_SEEN = set()


@torch.no_grad()
def axpy(residual: torch.Tensor, y: torch.Tensor, alpha: float = 0.5, eps=EPS, dim=-1) -> torch.Tensor:
    """Compute out = residual + alpha * y, bookkeeping beside the launch as tutorials do."""
    if residual.dtype not in (torch.float32, torch.bool) or torch.finfo(residual.dtype).eps > 1.0:
        raise TypeError(re.sub("x", "y", "dtype"))
    _SEEN.add((tuple(residual.shape), dim % residual.dim(), 1.0 / (eps + 1.0)))
    names = sorted(["b", "a"])
    names.sort()
    out = torch.empty_like(residual)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    kernel = axpy_kernel
    kernel[grid](residual, y, out, float(alpha), *launch_plan((tuple(residual.shape), tuple(y.shape)),
                 (residual.dtype, y.dtype))[2], n_elements, BLOCK_SIZE=BLOCK_SIZE, INDEX_64=False, num_warps=4)
    return out
'''


def test_tutorial_style_bookkeeping_beside_the_launch_stays_allowed() -> None:
    start, end = GOOD.index(WRAPPER), GOOD.index("\n\nif __name__")
    text = GOOD[:start].replace("import functools\n", "import functools\nimport re\n", 1) + HONEST.lstrip() + \
        GOOD[end:]
    check_triton_file(text, "axpy")


def test_a_kernel_handed_to_a_helper_counts_as_launched_only_where_the_helper_launches_that_argument() -> None:
    handed = _hidden("def _launch(kernel, grid, *args, **constants):\n    kernel[grid](*args, **constants)", "out")
    check_triton_file(handed.replace("axpy_kernel[grid](", "_launch(axpy_kernel, grid, "), "axpy")
    decoy = _hidden("def _launch(unused, kernel, grid, *args, **constants):\n    kernel[grid](*args, **constants)",
                    "out")
    with pytest.raises(StaticCheckError, match="never launches"):
        check_triton_file(decoy.replace("axpy_kernel[grid](", "_launch(axpy_kernel, print, grid, "), "axpy")
    # A helper that launches nothing, beside a subscript call of anything else under the parameter's name.
    idle = _hidden("def _launch(ops, *args, **constants):\n    return None", "out")
    with pytest.raises(StaticCheckError, match="never launches"):
        bait = "ops = [print]\n    ops[0]('x')\n    _launch(axpy_kernel, "
        check_triton_file(idle.replace("axpy_kernel[grid](", bait), "axpy")
    rebinding = _hidden("def _launch(kernel, *args, **constants):\n    kernel = [print]\n    kernel[0]('x')", "out")
    with pytest.raises(StaticCheckError, match="never launches"):
        check_triton_file(rebinding.replace("axpy_kernel[grid](", "_launch(axpy_kernel, "), "axpy")
