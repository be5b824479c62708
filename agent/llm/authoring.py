"""Have the model write, regenerate, repair and edit the four files; every answer is checked against the contract."""

from __future__ import annotations

import ast
import json
from typing import Any

from agent.diagnosis import PatternHint
from agent.generators.base import KernelFiles, LaunchConfig
from agent.llm.client import LlmClient
from agent.llm.contract import ROLES, check_role
from agent.llm.failure import Failure
from agent.llm.prompts import render_prompt
from agent.llm.replies import DefinitionReply, DiagnosisReply, SpecReply
from agent.llm.structured import ask_files, ask_json
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec

# What each file's prompt shows the model besides the spec.
_GIVEN = {"baseline": ("triton",), "accuracy": ("triton", "baseline"), "performance": ("triton", "baseline")}


def prompt_context(spec: OpSpec, device: DeviceInfo, definition: str = "", **extra: Any) -> dict[str, Any]:
    """Return what every prompt template may use (`definition`: the job's whole definition document)."""
    inputs = [t.name for t in spec.inputs]
    signature = ", ".join([*inputs, *(f"{p.name}={p.value!r}" for p in spec.params)])
    out_shapes = ", ".join(dict.fromkeys(str(spec.output_shape(c)) for c in spec.shape_cases()))
    return {
        "op": spec.name, "spec": spec, "device": device, "signature": signature, "out_shapes": out_shapes,
        "edge_cases": json.dumps(spec.edge_cases), "spec_cases": json.dumps(spec.shape_cases()),
        "dtype_cases": json.dumps(spec.dtype_cases()), "definition": definition.strip(), **extra,
    }


def hints_of(patterns: list[PatternHint]) -> list[str]:
    """Say what earlier jobs learned on this device and category, as prompt lines (helped first)."""
    ordered = sorted(patterns, key=lambda p: (-p.times_helped, -(p.best_speedup or 0.0)))
    return [f"`{p.change}` (ending at {p.params_after}) helped {p.times_helped} of {p.times_applied} times"
            + (f", best x{p.best_speedup:.2f}" if p.best_speedup else "")
            + (f", mean gain {100 * p.mean_gain:+.1f}%" if p.mean_gain is not None else "") for p in ordered[:8]]


def read_spec(client: LlmClient, request_text: str, offline_note: str) -> SpecReply:
    """Ask the model for its structured reading of a request (the IR where it can), beside the offline one."""
    messages = render_prompt("requirements", request_text=request_text, offline_note=offline_note,
                             device=DeviceInfo(kind="cpu", name="not detected yet"), ir_ops=ir_signatures())
    return ask_json(client, "requirements", messages, SpecReply)


def ir_signatures() -> list[str]:
    """List the IR's ops with their arguments, one line each, for the requirements prompt."""
    from agent.ir import registry
    from agent.ir.registry import REQUIRED

    lines = []
    for op in registry.all_ops():
        if op.infix and len(op.operands) <= 2 and op.name not in ("matmul",):
            continue
        args = [p.name if p.default == REQUIRED or p.operand else f"{p.name}={p.default!r}" for p in op.signature]
        lines.append(f"- `{op.name}({', '.join(args)})`")
    return lines


def write_definition(client: LlmClient, spec: OpSpec, device: DeviceInfo, figures: str) -> DefinitionReply:
    """Ask for the analysis part of the definition document."""
    return ask_json(client, "definition", render_prompt("definition", **prompt_context(spec, device, figures=figures)),
                    DefinitionReply)


def write_files(client: LlmClient, spec: OpSpec, device: DeviceInfo, definition: str, hints: list[str]) -> KernelFiles:
    """Write the four files, the kernel first, then the baseline and the two tests that use it."""
    name = f"{spec.name}_triton.py"
    context = prompt_context(spec, device, definition, hints=hints)
    files = ask_files(client, "triton", render_prompt("triton", **context), [name],
                      check=lambda answer: check_role("triton", answer, spec.name))
    files = regenerate(client, spec, device, files, ("baseline", "accuracy", "performance"))
    return KernelFiles(op=spec.name, files=files, config=config_of(files[name]), origin="llm")


def regenerate(
    client: LlmClient, spec: OpSpec, device: DeviceInfo, files: dict[str, str], roles: tuple[str, ...],
) -> dict[str, str]:
    """Write the given roles' files again for the current kernel (after an interface edit, all three)."""
    files = dict(files)
    for role in roles:
        name = f"{spec.name}_{role}.py"
        given = {f"{spec.name}_{r}.py": files[f"{spec.name}_{r}.py"] for r in _GIVEN[role]}
        answer = ask_files(client, role, render_prompt(role, **prompt_context(spec, device, given=given)), [name],
                           check=lambda a, r=role: check_role(r, files | a, spec.name))  # type: ignore[misc]
        files[name] = answer[name]
    return files


def repair(
    client: LlmClient, spec: OpSpec, device: DeviceInfo, failed: KernelFiles, failure: Failure, *,
    failed_index: int, attempt: int, max_attempts: int, earlier: list[str], definition: str = "",
) -> dict[str, str]:
    """Ask for the files that fix a failed version; returns only the files the model changed."""
    names = [failed.name_of(r) for r in ROLES]
    context = prompt_context(spec, device, definition, failure=failure, given=failed.files, failed_index=failed_index,
                             attempt=attempt, max_attempts=max_attempts, earlier=earlier)
    return ask_files(client, "repair", render_prompt("repair", **context), names, required=[],
                     check=lambda answer: _changed_problem(answer, failed.files, spec.name))


def propose(
    client: LlmClient, spec: OpSpec, device: DeviceInfo, best: KernelFiles, *, best_index: int, speedup: float,
    figures: dict[str, Any], rule_diagnosis: str, hints: list[str], tried: list[str], definition: str = "",
) -> DiagnosisReply:
    """Ask for the bottleneck and the next change of the best version."""
    context = prompt_context(spec, device, definition, given={best.name_of("triton"): best.source("triton")},
                             best_index=best_index, speedup=f"{speedup:.3f}", figures=figures,
                             rule_diagnosis=rule_diagnosis, hints=hints, tried=tried)
    return ask_json(client, "diagnosis", render_prompt("diagnosis", **context), DiagnosisReply)


def edit(
    client: LlmClient, spec: OpSpec, device: DeviceInfo, best: KernelFiles, proposal: DiagnosisReply,
    definition: str = "",
) -> dict[str, str]:
    """Ask for the files that carry out a proposed change; returns only the files the model changed."""
    names = [best.name_of(r) for r in ROLES]
    context = prompt_context(spec, device, definition, proposal=proposal, given=best.files)
    return ask_files(client, "edit", render_prompt("edit", **context), names, required=[],
                     check=lambda answer: _changed_problem(answer, best.files, spec.name))


def config_of(triton_source: str) -> LaunchConfig:
    """Read the launch constants a model-written kernel declares (BLOCK_SIZE, NUM_WARPS, ...)."""
    constants: dict[str, int] = {}
    for node in ast.parse(triton_source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and type(node.value.value) is int):
            constants[node.targets[0].id] = node.value.value
    if "BLOCK_SIZE" not in constants and "BLOCK_N" in constants:
        return LaunchConfig.from_constants("rows", constants)
    return LaunchConfig.from_constants("flat", constants)


def _changed_problem(answer: dict[str, str], old: dict[str, str], op: str) -> str | None:
    changed = {n: c for n, c in answer.items() if old.get(n) != c}
    if not changed:
        return "the answer changes no file; return the files you change, whole"
    if f"{op}_triton.py" in changed:
        return check_role("triton", changed, op)
    return None
