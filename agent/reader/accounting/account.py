"""Account for a spec's words against a proposed reading: 'accounted', or what the reading did not use."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.reader.accounting import phrase_checks, shape_checks, value_checks
from agent.reader.accounting.ir_view import view_of
from agent.reader.accounting.words import Unaccounted
from agent.reading import Reading


@dataclass(frozen=True)
class Accounting:
    """The pass's verdict: every word used (or filler), or the words the reading left out."""

    unaccounted: list[Unaccounted] = field(default_factory=list)

    @property
    def accounted(self) -> bool:
        """Tell whether nothing the text says was left out of the reading."""
        return not self.unaccounted

    def lines(self) -> list[str]:
        """Return one line per unaccounted stretch, as a question lists them."""
        return [u.render() for u in self.unaccounted]


def account(text: str, reading: Reading) -> Accounting:
    """Check the text against the reading with the pass's own lexicon; it knows nothing of how the reading was made."""
    facts = view_of(reading)
    found = [
        *value_checks.assignment_checks(text, reading, facts),
        *value_checks.quantity_checks(text, facts),
        *phrase_checks.phrase_checks(text, facts),
        *shape_checks.dim_name_checks(text, reading),
        *shape_checks.output_shape_checks(text, reading),
        *shape_checks.output_count_checks(text),
        *shape_checks.repeat_checks(text, facts),
        *shape_checks.unit_norm_checks(text, reading),
    ]
    kept: list[Unaccounted] = []
    for item in found:  # one line per stretch: `temperature=0.7` covers the word `temperature`
        if not any(item.quote.lower() in k.quote.lower() for k in kept):
            kept.append(item)
    return Accounting(kept)
