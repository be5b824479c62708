"""Products along long rows are checked on inputs whose products stay finite: the check compares numbers, not infs."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.generators.offline.dispatch import OfflineGenerator
from agent.reader import read_spec
from agent.reader.agreement import product_inputs
from agent.runtime.devices import DeviceInfo
from tests.agent.generators.kernels import run_accuracy_file

CPU = DeviceInfo(kind="cpu", name="cpu")

# Draw one case through the accuracy file's own make_inputs; report the float32 products of its rows.
_DRAW = """
import json, sys, torch
import {op}_accuracy as accuracy
shapes, dtypes = json.loads(sys.argv[1]), json.loads(sys.argv[2])
x = accuracy.make_inputs(shapes, dtypes, 3, "cpu")[0]
rows = x.float().reshape(-1, shapes["x"][-1]) if {along_rows} else x.float().reshape(1, -1)
products = rows.prod(-1) if {along_rows} else rows.cumprod(-1)[:, -1]
json.dump({{"finite": bool(torch.isfinite(products).all()), "smallest": float(products.abs().min()),
           "negative": int((x < 0).sum()), "positive": int((x > 0).sum()), "distinct": int(x.unique().numel())}},
          sys.stdout)
"""


def test_the_inputs_of_prod_and_cumprod_are_found_through_elementwise_ops() -> None:
    assert product_inputs(read_spec("torch.prod(x * 2.0 + y, dim=-1) x [4, 8] y [4, 8]").expr) == {"x", "y"}
    assert product_inputs(read_spec("cumprod of x [3, 50] along dim 1").expr) == {"x"}
    assert product_inputs(read_spec("row sum of x [6, 70]").expr) == set()


@pytest.mark.parametrize(("text", "dtype", "along_rows"), [
    ("torch.prod(x, dim=-1) x [64, 4000] fp32", "float32", True),
    ("torch.prod(x, dim=-1) x [64, 4000] bf16", "bfloat16", True),
    ("product of all elements of x [256, 1000] fp32", "float32", False),
])
def test_long_products_are_drawn_finite_with_both_signs_and_many_values(text: str, dtype: str, along_rows: bool,
                                                                         tmp_path: Path) -> None:
    spec = read_spec(text)
    generator = OfflineGenerator()
    files = generator.generate(spec, generator.default_config(spec, generator.schedules(spec)[0], CPU))
    for name, source in files.files.items():
        (tmp_path / name).write_text(source)
    shapes = spec.shape_cases()[0]
    done = subprocess.run([sys.executable, "-c", _DRAW.format(op=spec.name, along_rows=along_rows),
                           json.dumps(shapes), json.dumps({"x": dtype})],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    drawn = json.loads(done.stdout)
    # Drawn as randn * 2, most of these products overflow float32 (the kernel's order then decides inf or NaN).
    assert drawn["finite"] and drawn["smallest"] > 1e-30
    assert drawn["negative"] > 1000 and drawn["positive"] > 1000 and drawn["distinct"] > 10


def test_a_product_over_long_rows_passes_its_accuracy_file_and_a_wrong_kernel_fails_it(tmp_path: Path) -> None:
    spec = read_spec("torch.prod(x, dim=-1) x [3, 4001] fp32")
    generator = OfflineGenerator()
    files = generator.generate(spec, generator.default_config(spec, "looped_row", CPU))
    for name, source in files.files.items():
        (tmp_path / name).write_text(source)
    assert run_accuracy_file(tmp_path, spec.name)["status"] == "pass"
    kernel = tmp_path / f"{spec.name}_triton.py"
    wrong = kernel.read_text().replace("return a * b\n", "return a * b * 1.0001\n")  # off by 1e-4 per step
    assert wrong != kernel.read_text()
    kernel.write_text(wrong)
    assert run_accuracy_file(tmp_path, spec.name)["status"] == "fail"
