"""The catalogue, reviewed like code: every entry builds, every textbook definition agrees, no alias is shared."""

from __future__ import annotations

import pytest
import torch

from agent.catalogue import load_catalogue
from agent.catalogue.entries import Catalogue, _entry
from agent.ir.evaluate import evaluate
from agent.ir.expr import Ref, names
from agent.ir.infer import infer
from agent.ir.parse import parse_text
from agent.ir.types import TensorType

CATALOGUE = load_catalogue()
# Sizes that make every entry's operands fit: rows of 6 features, 4 channels for the per-channel norms.
_REQUIRED = {"group_norm": {"num_groups": 2}, "permute": {"dims": (1, 0)}, "gather": {"dim": 1}, "pow": {"exponent": 3},
             "cast": {"dtype": "float16"}, "softmax_temperature": {"temperature": 0.5}}
_POSITIVE = {"log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal"}


def _operands(entry_name: str) -> dict[str, object]:
    entry = CATALOGUE.by_name[entry_name]
    return {r.name: [Ref("a"), Ref("b")] if r.many else Ref(r.name) for r in entry.roles if not r.optional}


@pytest.mark.parametrize("name", sorted(CATALOGUE.by_name))
def test_every_entry_builds_into_the_ir(name: str) -> None:
    entry = CATALOGUE.by_name[name]
    expr = entry.build(_operands(name), _REQUIRED.get(name, {}))  # type: ignore[arg-type]
    assert names(expr)


@pytest.mark.parametrize("name", sorted(n for n, e in CATALOGUE.by_name.items() if e.check))
def test_the_textbook_definition_computes_the_same_values(name: str) -> None:
    entry = CATALOGUE.by_name[name]
    roles = [r.name for r in entry.roles if not r.optional]
    built = entry.build({r: Ref(r) for r in roles}, _REQUIRED.get(name, {}))
    check = parse_text(entry.check or "")
    generator = torch.Generator().manual_seed(0)
    values = [torch.randn(5, 6, generator=generator, dtype=torch.float64) for _ in roles]
    if name in _POSITIVE:
        values = [v.abs() + 0.25 for v in values]
    env = dict(zip(roles, values, strict=True)) | {"x": values[0]} | ({"y": values[1]} if len(values) > 1 else {})
    torch.testing.assert_close(evaluate(built, env), evaluate(check, env), rtol=1e-9, atol=1e-9)


def test_every_alias_names_one_entry_and_chinese_names_are_there() -> None:
    assert len(CATALOGUE.by_alias) > 500
    for alias in ("swish", "quickgelu", "squared relu", "归一化指数", "层归一化", "均方根归一化", "前缀和", "矩阵乘"):
        assert any(alias.lower() in (a.lower() for a in e.aliases) for e in CATALOGUE.entries), alias
    with pytest.raises(ValueError, match="names both"):
        Catalogue([_entry({"name": "a", "family": "elementwise", "op": "relu", "en": ["same"]}),
                   _entry({"name": "b", "family": "elementwise", "op": "sigmoid", "en": ["same"]})])


def test_parameters_have_defaults_and_the_names_people_use() -> None:
    leaky = CATALOGUE.by_name["leaky_relu"].param("negative_slope")
    assert leaky is not None and leaky.default == 0.01 and {"slope", "斜率"} <= set(leaky.say)
    assert CATALOGUE.by_name["hardtanh"].range == ("min_val", "max_val")
    assert CATALOGUE.by_name["softmax"].dim == "last" and CATALOGUE.by_name["sum"].dim == "required"


def test_a_bad_entry_is_refused_when_the_catalogue_loads() -> None:
    with pytest.raises(ValueError, match="exactly one of op and formula"):
        _entry({"name": "x", "family": "elementwise", "en": ["x"]})
    with pytest.raises(KeyError):
        _entry({"name": "x", "family": "elementwise", "op": "no_such_op"})


def test_macros_expand_catalogue_names_in_formulas() -> None:
    expr = parse_text("swiglu(g, u) + quick_gelu(g)", macros=CATALOGUE.macro)
    types = {"g": TensorType("float32", (4, 8)), "u": TensorType("float32", (4, 8))}
    assert infer(expr, types) == TensorType("float32", (4, 8))
