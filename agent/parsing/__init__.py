"""Offline requirements parser: task-book or free text (English or Chinese) -> validated OpSpec."""

from agent.parsing.build import parse_requirements
from agent.parsing.taskbook import split_tasks

__all__ = ["parse_requirements", "split_tasks"]
