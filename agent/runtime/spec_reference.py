"""The service's own reference module for a spec read into the IR: its PyTorch rendering, nothing model-written."""

from __future__ import annotations

from agent.ir.printer import to_statements
from agent.spec import OpSpec

MODULE = "spec_reference"


def spec_reference_module(spec: OpSpec) -> str:
    """Return the source of `spec_reference.py`, defining `<op>(inputs..., params=...)` from the spec's IR."""
    arguments = [t.name for t in spec.inputs] + [f"{p.name}={p.value!r}" for p in spec.params]
    body = "\n".join(f"    {line}" for line in to_statements(spec.expr, spec.output))
    return (
        f'"""The reading of `{spec.name}` as PyTorch: the reference the service checks every kernel against."""\n\n'
        "import math  # noqa: F401\n\nimport torch\nimport torch.nn.functional as F  # noqa: F401\n\n\n"
        f"def {spec.name}({', '.join(arguments)}):\n"
        f'    """Compute what the spec asks for, in plain PyTorch."""\n{body}\n    return {spec.output}\n'
    )
