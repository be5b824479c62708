"""Turn the files a model changed into a complete version: classify the edit and enforce its rule."""

from __future__ import annotations

import difflib

from agent.edit_rules import check_edit_rule
from agent.edit_types import EditType, classify_edit
from agent.generators.base import KernelFiles
from agent.llm.authoring import config_of, regenerate
from agent.llm.client import LlmClient
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec

_OTHERS = ("baseline", "accuracy", "performance")


class Change:
    """A candidate version built from a model's answer, with its edit type and what was done to it."""

    def __init__(self, files: KernelFiles, edit_type: EditType, notes: list[str], problem: str | None) -> None:
        self.files, self.edit_type, self.notes, self.problem = files, edit_type, notes, problem

    def diff(self, old: KernelFiles, old_label: str, new_label: str) -> str:
        """Return the unified diff of every changed file."""
        parts = []
        for name in sorted(self.files.files):
            before, after = old.files.get(name, ""), self.files.files[name]
            if before != after:
                parts.append("".join(difflib.unified_diff(
                    before.splitlines(keepends=True), after.splitlines(keepends=True),
                    fromfile=f"{old_label}/{name}", tofile=f"{new_label}/{name}")))
        return "".join(parts)


def apply_changes(
    client: LlmClient, spec: OpSpec, device: DeviceInfo, old: KernelFiles, changed: dict[str, str],
) -> Change:
    """Merge the changed files into the old version; an interface edit gets the other three files rewritten."""
    op, notes = old.op, []
    triton = old.name_of("triton")
    files = dict(old.files)
    files[triton] = changed.get(triton, files[triton])
    # Only other files changed: the tests were fixed, which checks all four together like a logic edit.
    edit_type: EditType = classify_edit(old.source("triton"), files[triton], op) if triton in changed else "logic"
    if edit_type == "interface":
        files |= {n: c for n, c in changed.items() if n in files}
        missing = tuple(r for r in _OTHERS if old.name_of(r) not in changed)
        if missing:
            notes.append(f"the entry point's signature changed: {', '.join(old.name_of(r) for r in missing)} "
                         f"rewritten for it")
            files = regenerate(client, spec, device, files, missing)
    else:
        for role in _OTHERS:
            name = old.name_of(role)
            if name not in changed or changed[name] == old.files[name]:
                continue
            if edit_type == "parameter":
                notes.append(f"{name} kept: a parameter edit may change only {triton}")
            elif role == "baseline":
                notes.append(f"{name} kept: the reference defines what is right and is not edited to match a kernel")
            else:
                files[name] = changed[name]
    problem = check_edit_rule(edit_type, old.files, files, op)
    version = KernelFiles(op=op, files=files, config=config_of(files[triton]), origin="llm")
    return Change(version, edit_type, notes, problem)
