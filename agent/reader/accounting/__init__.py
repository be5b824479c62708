"""The accounting pass: every word of a spec is used by the reading, is filler, or becomes a question."""

from agent.reader.accounting.account import Accounting, account
from agent.reader.accounting.words import Unaccounted

__all__ = ["Accounting", "Unaccounted", "account"]
