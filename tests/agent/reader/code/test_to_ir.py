"""graph_to_ir reads traced graphs into the IR: traced here, in-process, on trusted test code (no sandbox)."""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import trace_here

from agent.ir.evaluate import evaluate
from agent.ir.expr import ops
from agent.ir.printer import to_text
from agent.reader.code.to_ir import Mapped, graph_to_ir
from agent.reader.errors import SpecQuestion

X = {"x": {"shape": [4, 6], "dtype": "float32"}}


def read(source: str, folder: Path, declared: dict[str, Any] | None = None) -> Mapped:
    """Trace the code here and read it into the IR."""
    trace = trace_here(source, folder, declared)
    assert trace["status"] == "pass", trace.get("message")
    return graph_to_ir(trace)


def agrees(source: str, mapped: Mapped, seed: int = 5) -> None:
    """Check the IR computes what the code computes on fresh inputs (the module's own tensors fed as inputs)."""
    scope: dict[str, Any] = {"torch": torch, "nn": nn, "F": F, "math": math}
    exec(source, scope)  # trusted test code
    torch.manual_seed(seed)
    model = scope["Model"]().eval() if "Model" in scope else None
    env: dict[str, Any] = {}
    for item in mapped.inputs:
        if item.role == "parameter":
            env[item.name] = functools.reduce(getattr, item.origin.split("."), model)
        elif item.dtype == "int64":
            env[item.name] = torch.randint(0, 5, item.shape)
        elif item.dtype == "bool":
            env[item.name] = torch.rand(item.shape) < 0.5
        else:
            env[item.name] = torch.randn(item.shape).to(getattr(torch, item.dtype))
    arguments = [env[i.name].clone() for i in mapped.inputs if i.role == "argument"]
    function = model or next(v for k, v in scope.items() if callable(v) and getattr(v, "__module__", "") is None
                             and k not in ("get_inputs", "get_init_inputs") or k == "f")
    with torch.no_grad():
        expected = function(*arguments)
        got = evaluate(mapped.expr, env)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


CASES = {
    "methods": ("def f(x, y):\n"
                "    a = x.transpose(0, 1).contiguous().t()\n"
                "    b = x[:, None].squeeze(1) + y.T.T\n"
                "    c = x.var(-1, unbiased=False, keepdim=True) + x.std(dim=-1, keepdim=True)\n"
                "    d = x.masked_fill(x > 0, 0.5).where(x < 1, y)\n"
                "    return (a + b + c + d).type_as(y).softmax(-1, dtype=torch.float64).clamp_min(0.1)\n",
                {**X, "y": {"shape": [4, 6], "dtype": "float16"}},
                ["transpose", "unsqueeze", "squeeze", "var", "std", "where", "cast", "softmax", "clamp"]),
    "extreme": ("def f(x):\n"
                "    v, i = torch.max(x, dim=1)\n"
                "    m = x.min(dim=-1, keepdim=True)[0]\n"
                "    return v + i + m.squeeze(-1) + torch.max(x) + torch.maximum(x, x).sum(1) + x.amax(1)\n",
                X, ["amax", "argmax", "amin", "maximum"]),
    "inplace": ("def f(x):\n"
                "    y = x * 2\n"
                "    y.mul_(3)\n"
                "    y.add_(1)\n"
                "    return F.relu(y, inplace=True) + torch.zeros_like(y) + torch.full_like(y, 2.5)\n",
                X, ["mul", "add", "relu"]),
    "functional": ("def f(x, w, b):\n"
                   "    h = F.layer_norm(x, (6,), w, b, eps=1e-6)\n"
                   "    h = F.dropout(h, 0.3, training=False)\n"
                   "    h = torch.sum(h, dim=-1, dtype=torch.float64)\n"
                   "    return h.float() * torch.tensor(2.0) + x.size(-1) ** 0.5\n",
                   {**X, "w": {"shape": [6], "dtype": "float32"}, "b": {"shape": [6], "dtype": "float32"}},
                   ["layer_norm", "cast", "sum"]),
    "casts": ("def f(x, y):\n    return x.float() + x.to(x.dtype) + y.to(torch.float32) + y.half().type_as(x)\n",
              {**X, "y": {"shape": [4, 6], "dtype": "float16"}}, ["cast"]),
    "views": ("def f(x):\n"
              "    b = x.shape[0]\n"
              "    y = x.view(b, 2, -1).permute(0, 2, 1).reshape(x.size(0), -1)\n"
              "    return torch.flatten(y.unsqueeze(0), 1) * 2\n", X, ["reshape", "permute", "unsqueeze", "flatten"]),
    "snippet": ("h = x * torch.sigmoid(x)\nreturn h * y\n", {**X, "y": {"shape": [6], "dtype": "float32"}},
                ["sigmoid", "mul"]),
    "losses": ("def f(logits, target):\n"
               "    return F.cross_entropy(logits, target, label_smoothing=0.1) + F.embedding(target, logits).sum()\n",
               {"logits": {"shape": [8, 5], "dtype": "float32"}, "target": {"shape": [8], "dtype": "int64"}},
               ["cross_entropy", "embedding", "sum"]),
}

ZOO = '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1, groups=2, bias=False)
        self.gn = nn.GroupNorm(4, 8)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.LeakyReLU(0.2)
        self.flat = nn.Flatten(1)
        self.fc = nn.Linear(8 * 6 * 6, 32)
        self.ln = nn.LayerNorm(32, eps=1e-6)
        self.gelu = nn.GELU(approximate="tanh")
        self.sm = nn.Softmax(dim=-1)
        self.scale = nn.Parameter(torch.randn(32))
        self.drop = nn.Dropout(0.1)
        self.emb = nn.Embedding(10, 32)
    def forward(self, x, ids):
        h = self.act(self.bn(self.gn(self.conv(x))))
        h = self.drop(self.gelu(self.ln(self.fc(self.flat(h))))) * self.scale
        h = h + self.emb(ids)
        return self.sm(h - torch.max(h, dim=-1, keepdim=True).values)
def get_inputs():
    return [torch.randn(2, 4, 6, 6), torch.randint(0, 10, (2,))]
'''


@pytest.mark.parametrize("name", list(CASES))
def test_reads_and_agrees(name: str, tmp_path: Path) -> None:
    """Check functions, methods and operators read into the expected ops and compute the code's values."""
    source, declared, expected_ops = CASES[name]
    mapped = read(source, tmp_path, declared)
    assert set(expected_ops) <= set(ops(mapped.expr)), to_text(mapped.expr)
    assert [i.name for i in mapped.inputs] == list(declared)
    if name == "casts":  # casts to the dtype a tensor has are no nodes
        assert to_text(mapped.expr) == "x + x + cast(y, dtype='float32') + cast(y, dtype='float32')"
    if name == "snippet":  # the harness made it `def snippet(x, y)`; the same function, written out here
        source = "def f(x, y):\n" + "".join(f"    {line}\n" for line in source.splitlines())
    agrees(source, mapped)


def test_modules_become_ops_with_their_tensors_as_inputs(tmp_path: Path) -> None:
    """Check nn modules read into IR ops whose weights are parameter inputs named after the module path."""
    mapped = read(ZOO, tmp_path)
    text = to_text(mapped.expr)
    for piece in ("conv2d(x, conv_weight, stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=2)",
                  "group_norm(", "num_groups=4", "batch_norm(", "bn_running_mean, bn_running_var, bn_weight, bn_bias",
                  "leaky_relu(", "negative_slope=0.2", "flatten(", "start_dim=1", "linear(", "fc_weight, fc_bias",
                  "layer_norm(", "eps=1e-06", "approximate='tanh'", "* scale", "embedding(ids, emb_weight)",
                  "amax(", "softmax("):
        assert piece in text
    assert "drop" not in text  # dropout is the identity in eval mode
    roles = {i.name: (i.role, i.origin) for i in mapped.inputs}
    assert [i.name for i in mapped.inputs][:2] == ["x", "ids"]
    assert roles["fc_weight"] == ("parameter", "fc.weight") and roles["scale"] == ("parameter", "scale")
    assert roles["bn_running_var"] == ("parameter", "bn.running_var")
    assert "conv_bias" not in roles  # bias=False
    agrees(ZOO, mapped)


def test_unmapped_ops_are_all_named(tmp_path: Path) -> None:
    """Check one question names every op the IR lacks."""
    source = ("def f(x):\n    s = torch.fft.fft(x).abs()\n    i = torch.nonzero(x > 0)\n"
              "    return s.sum() + i.sum() + (x // 2).sum() + x[:, 1:].sum()\n")
    with pytest.raises(SpecQuestion) as caught:
        read(source, tmp_path, X)
    message = caught.value.question
    for name in ("torch.fft.fft", "torch.nonzero", "floor division", "indexing"):
        assert name in message
    assert "which the IR does not have" in message


@pytest.mark.parametrize(("source", "words"), [
    ("def f(x):\n    return x.relu(), x.exp()\n", ["2 values", "relu", "exp"]),
    ("def f(x):\n    return x * x.sum().item()\n", ["Tensor.item"]),
    ("def f(x):\n    a, b = x.chunk(2, dim=-1)\n    return F.silu(a) * b\n", ["Tensor.chunk"]),
    ("def f(x):\n    return x.contiguous()\n", ["unchanged"]),
    ("class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.c = nn.Conv3d(2, 2, 1)\n    def forward(self, x):\n        return self.c(x)\n"
     "def get_inputs():\n    return [torch.randn(1, 2, 2, 2, 2)]\n", ["nn.Conv3d"]),
    ("def f(x):\n    return torch.var(x, 1, True, True) + F.hardtanh(x, -2.0, 2.0)\n", ["var"]),
    ("def f(x):\n    return torch.add(x, x, alpha=2)\n", ["alpha"]),
])
def test_questions(source: str, words: list[str], tmp_path: Path) -> None:
    """Check several outputs, data read into Python, missing ops and no computation are questions."""
    with pytest.raises(SpecQuestion) as caught:
        read(source, tmp_path, None if "get_inputs" in source else X)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(("source", "declared", "words"), [
    ("def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n", X,
     ["torch.fx cannot trace", "control flow", "line 2: if x.sum() > 0:"]),
    ("def f(x)\n    return x\n", X, ["does not parse", "SyntaxError", "(line 1)"]),
    ("def f(x):\n    return x.relu()\n", None, ["no shape for x", "get_inputs()"]),
    ("def f(x, y):\n    return x @ y\n", {**X, "y": {"shape": [5, 2], "dtype": "float32"}},
     ["the code raised RuntimeError", "line 2: return x @ y", "x [4, 6] float32, y [5, 2] float32"]),
    ("def f(*xs):\n    return xs[0]\n", X, ["*args"]),
    ("def f(x):\n    return x\ndef g(x):\n    return x\n", X, ["several functions (f, g)"]),
    ("class Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
     "    def forward(self, x):\n        return x\n", X, ["Model(*get_init_inputs()) failed", "TypeError"]),
    ("def helper(x):\n    return x * 2\ndef op(x):\n    return helper(x).exp()\n", X, []),
])
def test_harness_refusals_are_one_line(source: str, declared: dict[str, Any] | None, words: list[str],
                                       tmp_path: Path) -> None:
    """Check untraceable, broken or ambiguous code is refused in one line that names the line of the code."""
    trace = trace_here(source, tmp_path, declared)
    if not words:  # a helper called by the operator is not a candidate entry
        assert trace["status"] == "pass" and trace["entry"] == "op"
        return
    assert trace["status"] == "error" and "\n" not in trace["message"]
    for word in words:
        assert word in trace["message"]


def test_every_graph_node_is_described(tmp_path: Path) -> None:
    """Check the trace names targets as qualified names, methods and module classes with their attributes."""
    trace = trace_here(ZOO, tmp_path)
    targets = {n["target"] for n in trace["nodes"]}
    assert {"torch.max", "builtins.getattr", "operator.add", "operator.mul", "operator.sub"} <= targets
    modules = {n["module"]["class"]: n["module"] for n in trace["nodes"] if n["op"] == "call_module"}
    assert modules["nn.Linear"]["attrs"] == {"in_features": 288, "out_features": 32}
    assert modules["nn.LayerNorm"]["attrs"] == {"normalized_shape": [32], "eps": 1e-6, "elementwise_affine": True}
    assert modules["nn.Conv2d"]["attrs"]["groups"] == 2 and modules["nn.Conv2d"]["tensors"] == {"weight": "conv.weight"}
    assert modules["nn.Softmax"]["attrs"] == {"dim": -1} and modules["nn.GELU"]["attrs"] == {"approximate": "tanh"}
    assert [a["name"] for a in trace["arguments"]] == ["x", "ids"]
    assert trace["tensors"]["bn.running_mean"]["kind"] == "buffer"
    assert trace["tensors"]["fc.weight"] == {"shape": [32, 288], "dtype": "float32", "kind": "parameter"}
    assert any("eval mode" in note for note in trace["notes"])


def test_a_loop_of_many_steps_reads_in_time_linear_in_its_length(tmp_path: Path) -> None:
    # Each traced node's check typed the whole expression again: 100 steps took 30 s, 150 over a minute.
    source = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        for _ in range(150):
            x = x * 1.0001 + 0.5
        return x

def get_inputs():
    return [torch.randn(4, 8)]
'''
    trace = trace_here(source, tmp_path)
    assert trace["status"] == "pass", trace.get("message")
    started = time.perf_counter()
    mapped = graph_to_ir(trace)
    assert time.perf_counter() - started < 20
    assert to_text(mapped.expr).count("1.0001") == 150
    agrees(source, mapped)
