"""PyTorch code as a spec: find it in the text, trace it in the sandbox, read it into the IR, check the reading."""

from agent.reader.code.find import CodeSource, find_code
from agent.reader.code.read_code import CodeInput, CodeReading, read_code

__all__ = ["CodeInput", "CodeReading", "CodeSource", "find_code", "read_code"]
