"""The spec reader: free text (English, Chinese), task books and PyTorch code into an OpSpec with its reading."""

from agent.reader.errors import SpecQuestion
from agent.reader.read import read_spec
from agent.reader.taskbook import split_tasks

__all__ = ["SpecQuestion", "read_spec", "split_tasks"]
