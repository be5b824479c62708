"""The operator catalogue: names and aliases (English and Chinese), IR definitions, parameters."""

from agent.catalogue.entries import Catalogue, Entry, ParamEntry, Role, alias_words, load_catalogue

__all__ = ["Catalogue", "Entry", "ParamEntry", "Role", "alias_words", "load_catalogue"]
