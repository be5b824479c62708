"""Load the operator catalogue and build IR from an entry, its operands and its parameters."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from agent.ir import registry
from agent.ir.bind import Value, bind
from agent.ir.expr import Const, Expr, Node, Ref, names, substitute
from agent.ir.parse import parse_text
from agent.ir.registry import Family
from agent.ir.types import IRError

CATALOGUE = Path(__file__).with_name("operators.toml")
_NONE, _REQUIRED = "none", "required"
_ENTRY_KEYS = {"name", "family", "op", "formula", "check", "en", "zh", "roles", "params", "range", "dim", "variant_of"}
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True)
class Role:
    """An operand slot of an entry and the input names that usually fill it."""

    name: str
    optional: bool = False
    hints: tuple[str, ...] = ()
    integer: bool = False  # filled by an int64 tensor (class targets, indices)
    positive: bool = False  # values must be positive (running variance)
    many: bool = False  # takes every remaining input (concat)


@dataclass(frozen=True)
class ParamEntry:
    """A parameter of an entry: its default and the ways people name or set it."""

    name: str
    default: Any
    kind: str = "scalar"  # scalar | int | ints | dim | bool | str
    say: tuple[str, ...] = ()
    flags: tuple[tuple[Any, tuple[str, ...]], ...] = ()  # (value, phrases that set it)

    @property
    def required(self) -> bool:
        """Tell whether the text must give a value."""
        return bool(self.default == _REQUIRED)


@dataclass(frozen=True)
class Entry:
    """One catalogue operator."""

    name: str
    family: Family
    op: str | None
    formula: str | None
    check: str | None
    aliases: tuple[str, ...]
    roles: tuple[Role, ...]
    params: tuple[ParamEntry, ...]
    range: tuple[str, str] | None
    dim: str | None  # "required": the text must say the axis; "last": the last dim unless it says otherwise
    variant_of: str | None = None  # the entry this one extends: named by its aliases, taken when a new param is set

    @property
    def operand_count(self) -> int:
        """Count the roles that must be filled."""
        return sum(1 for r in self.roles if not r.optional)

    def param(self, name: str) -> ParamEntry | None:
        """Return the parameter of that name."""
        return next((p for p in self.params if p.name == name), None)

    def build(self, operands: dict[str, Expr | list[Expr]], values: dict[str, Any]) -> Expr:
        """Return the IR for this entry over operands by role and parameter values by name."""
        given = {p.name: p.default for p in self.params if p.default != _REQUIRED} | values
        kinds = {p.name: p.kind for p in self.params}
        given = {k: (None if v == _NONE and kinds.get(k) != "str" else v) for k, v in given.items()}
        missing = [p.name for p in self.params if p.required and p.name not in values]
        if missing:
            raise IRError(f"{self.name} needs {', '.join(missing)}")
        if self.op is not None:
            return self._bind_op(operands, given)
        assert self.formula is not None
        statics = {k: v for k, v in given.items() if not isinstance(v, (Ref, Const, Node))}
        template = parse_text(fill(self.formula, statics))
        mapping: dict[str, Expr] = {}
        for role in self.roles:
            operand = operands.get(role.name)
            if isinstance(operand, list):
                raise IRError(f"{self.name}: {role.name} takes one tensor")
            if operand is None:
                raise IRError(f"{self.name} needs {role.name}")
            mapping[role.name] = operand
        for key, value in given.items():
            if isinstance(value, (Ref, Const, Node)):
                mapping[key] = value
        return substitute(template, mapping)

    def _bind_op(self, operands: dict[str, Expr | list[Expr]], given: dict[str, Any]) -> Expr:
        assert self.op is not None
        op = registry.get(self.op)
        keywords: dict[str, Value] = {}
        for role in self.roles:
            operand = operands.get(role.name)
            if role.many:
                if not isinstance(operand, list) or not operand:
                    raise IRError(f"{self.name} needs the tensors to join")
                keywords[role.name] = tuple(operand)
            elif operand is None:
                if not role.optional:
                    raise IRError(f"{self.name} needs {role.name}")
            else:
                assert not isinstance(operand, list)
                keywords[role.name] = operand
        if self.dim == "last" and "dim" not in given and op.param("dim") is not None:
            given = given | {"dim": -1}
        for key, value in given.items():
            if op.param(key) is None:
                raise IRError(f"catalogue entry {self.name}: {self.op} has no parameter {key}")
            keywords[key] = _value(value)
        return bind(op, [], keywords, self.name)


def fill(formula: str, values: dict[str, Any]) -> str:
    """Write parameter values into a formula as literals (`cumsum(x, dim=dim)` with dim=-1)."""
    for key, value in values.items():
        literal = repr(tuple(value)) if isinstance(value, (list, tuple)) else repr(value)
        formula = re.sub(rf"(?<![\w.]){re.escape(key)}(?![\w])(?!\s*=(?!=))", literal, formula)
    return formula


def _value(value: Any) -> Value:
    if isinstance(value, (Ref, Const, Node, str)):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(Const(v) for v in value)
    return Const(value)


@dataclass
class Catalogue:
    """Every entry, and the index from alias words to entries."""

    entries: list[Entry]
    by_name: dict[str, Entry] = field(default_factory=dict)
    by_alias: dict[tuple[str, ...], Entry] = field(default_factory=dict)
    variants: dict[str, list[Entry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for entry in self.entries:
            if entry.name in self.by_name:
                raise ValueError(f"catalogue entry {entry.name} is defined twice")
            self.by_name[entry.name] = entry
        for entry in self.entries:
            for alias in (entry.name, *entry.aliases):
                key = alias_words(alias)
                other = self.by_alias.get(key)
                if other is not None and other is not entry:
                    raise ValueError(f"catalogue alias {alias!r} names both {other.name} and {entry.name}")
                self.by_alias[key] = entry
        for entry in self.entries:
            if entry.variant_of is not None:
                base = self.by_name.get(entry.variant_of)
                if base is None or base.family != entry.family:
                    raise ValueError(f"catalogue entry {entry.name}: variant_of {entry.variant_of!r} is not an "
                                     f"entry of family {entry.family}")
                self.variants.setdefault(base.name, []).append(entry)

    @property
    def longest_alias(self) -> int:
        """Return the most words an alias has."""
        return max(len(k) for k in self.by_alias)

    def macro(self, name: str, args: list[Value], keywords: dict[str, Value], call: str) -> Expr | None:
        """Expand a call to an entry that is not an IR op (`quick_gelu(x)`, `swiglu(gate, up)`)."""
        entry = self.by_name.get(name.lower()) or self.by_alias.get(alias_words(name))
        if entry is None:
            return None
        roles = [r for r in entry.roles if not r.many]
        if len(args) > len(roles) or not all(isinstance(a, (Ref, Const, Node)) for a in args):
            raise IRError(f"{call}: {entry.name} takes {len(roles)} tensor arguments")
        operands: dict[str, Expr | list[Expr]] = {r.name: a for r, a in zip(roles, args, strict=False)}  # type: ignore[misc]
        values = {k: (v.value if isinstance(v, Const) else v) for k, v in keywords.items()}
        return entry.build(operands, values)


def alias_words(text: str) -> tuple[str, ...]:
    """Split an alias or a stretch of text into match words: ASCII words, numbers, single CJK characters."""
    low = text.lower().replace("_", " ").replace("-", " ")
    return tuple(re.findall(r"[a-z0-9]+(?:\.[0-9]+)?|[\u3400-\u9fff]|[αβγδεϵλμσ²]", low))


@cache
def load_catalogue(path: Path = CATALOGUE) -> Catalogue:
    """Read and check the catalogue file (cached)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return Catalogue([_entry(raw) for raw in data["op"]])


def _entry(raw: dict[str, Any]) -> Entry:
    unknown = set(raw) - _ENTRY_KEYS
    name = raw.get("name", "?")
    if unknown:
        raise ValueError(f"catalogue entry {name}: unknown keys {sorted(unknown)}")
    if ("op" in raw) == ("formula" in raw):
        raise ValueError(f"catalogue entry {name}: give exactly one of op and formula")
    if "op" in raw:
        registry.get(raw["op"])  # KeyError for an op the IR does not have
    params = tuple(
        ParamEntry(p["name"], p.get("default"), p.get("kind", "scalar"), tuple(p.get("say", ())),
                   tuple((_flag_value(v, p.get("kind", "scalar")), tuple(phrases))
                         for v, phrases in p.get("flags", {}).items()))
        for p in raw.get("params", ())
    )
    roles = tuple(Role(r["name"], r.get("optional", False), tuple(r.get("hints", ())), r.get("integer", False),
                       r.get("positive", False), r.get("many", False)) for r in raw.get("roles", ()))
    if not roles:
        roles = _default_roles(raw, {p.name for p in params})
    rng = raw.get("range")
    return Entry(
        name=name, family=raw["family"], op=raw.get("op"), formula=raw.get("formula"), check=raw.get("check"),
        aliases=tuple(raw.get("en", ())) + tuple(raw.get("zh", ())), roles=roles, params=params,
        range=(rng[0], rng[1]) if rng else None, dim=raw.get("dim"), variant_of=raw.get("variant_of"),
    )


def _default_roles(raw: dict[str, Any], params: set[str]) -> tuple[Role, ...]:
    if "formula" in raw:
        defaults = {p["name"]: 2 if p.get("default") == _REQUIRED else p.get("default")
                    for p in raw.get("params", ())}
        return tuple(Role(n) for n in names(parse_text(fill(raw["formula"], defaults))) if n not in params)
    op = registry.get(raw["op"])
    return tuple(Role(p.name, optional=p.kind == "tensor?") for p in op.operands)


def _flag_value(raw: str, kind: str) -> Any:
    """Turn a flag table key (TOML keys are strings) into the parameter's value."""
    if kind == "bool":
        return raw == "true"
    if kind == "int":
        return int(raw)
    if kind == "str" or kind == "ints" and not raw.lstrip("-").isdigit():
        return raw
    return int(raw) if kind == "ints" else float(raw)
