"""Tasks whose benchmark function computes something other than its own text says, each with the evidence.

A reading of such a task is judged against the benchmark like any other; only when it is "wrong" there AND its IR is
exactly the one the text states does the outcome become "reference fault" (its own count in the summary, never
"right"). Any other reading of these tasks stays "wrong", so the table cannot hide a misreading.
"""

from __future__ import annotations

from dataclasses import dataclass

# TritonBench-T's exact GELU in three references: `input * torch.erf(input / torch.sqrt(torch.tensor(2.0))) / 2.0`,
# which is x·erf(x/√2)/2, not x·(1 + erf(x/√2))/2 = x·Φ(x) (F.gelu, and the task's own "GELU(x) = x * Φ(x)").
_GELU_WITHOUT_ONE = ("the benchmark's function writes the exact GELU as x * erf(x / sqrt(2)) / 2, without the 1 + "
                     "of x * (1 + erf(x / sqrt(2))) / 2 = x * Phi(x), which its own text and F.gelu compute")


@dataclass(frozen=True)
class Fault:
    """What the task's text states (as the reader's IR text) and how the benchmark's function departs from it."""

    stated_ir: str
    why: str


REFERENCE_FAULTS: dict[str, Fault] = {
    "sub_gelu": Fault("gelu(input - alpha * other)", _GELU_WITHOUT_ONE),
    "gelu_min": Fault("amin(gelu(input))", _GELU_WITHOUT_ONE),
    "min_gelu": Fault("amin(gelu(input))", _GELU_WITHOUT_ONE),
}


def reference_fault(task: str, ir: str, outcome: str) -> Fault | None:
    """Return the task's fault when a wrong outcome is a reading of exactly what the text states, else None."""
    fault = REFERENCE_FAULTS.get(task)
    return fault if fault is not None and outcome == "wrong" and ir == fault.stated_ir else None
