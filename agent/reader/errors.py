"""A reading that ends as a question: what was understood, what to answer, and an example."""

from __future__ import annotations

from agent.spec import SpecError


class SpecQuestion(SpecError):
    """A spec the reader will not turn into a kernel without an answer from the person who wrote it."""

    def __init__(self, question: str, *, understood: str = "", example: str = "",
                 unaccounted: list[str] | None = None) -> None:
        self.question = question.strip()
        self.unaccounted = list(unaccounted or [])  # the accounting pass's lines, when it raised the question
        self.understood = understood.strip()
        self.example = example.strip()
        parts = [self.question]
        if self.understood:
            parts.append(f"Understood so far: {self.understood}")
        if self.example:
            parts.append(f"For example: {self.example}")
        super().__init__("\n".join(parts))


class ReaderBug(SpecQuestion):
    """The reader itself failed: the user is asked to restate the spec; tests treat this as a defect."""
