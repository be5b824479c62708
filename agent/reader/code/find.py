"""Find PyTorch code in a spec: a fenced block, or text that is itself Python with a def, a Module or a return."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

from agent.ir.parse import parse_python

CodeKind = Literal["module", "function"]

_FENCE = re.compile(r"^[ \t]*(?P<fence>```|~~~)[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
                    re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = {"", "python", "py", "python3", "pytorch", "torch", "ipython"}
_DEFINES = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+\w", re.MULTILINE)
# Lines that may start pasted code: imports, definitions, decorators and plain assignments (`batch_size = 16`).
_START = re.compile(r"^(?:import |from [\w.]+ import |def |class |async def |@|[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*"
                    r"\s*=(?!=))")
_HELPERS = {"get_inputs", "get_init_inputs"}
_MAX_LINES = 400
# Characters the search for bare code may parse in all (about a second): trying every start and end line is
# cubic in the worst case (minutes for 400 lines of unclosed calls sent to POST /read); past this it is prose.
_PARSE_BUDGET_CHARS = 2_000_000


@dataclass(frozen=True)
class CodeSource:
    """Code found in a spec: the code itself, the prose around it, and whether it defines a module or a function."""

    source: str
    prose: str
    kind: CodeKind


def find_code(text: str) -> CodeSource | None:
    """Return the code of a spec, or None when the spec is prose or a one-line formula."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    fenced = _fenced(text)
    if fenced is not None:
        return fenced
    return _bare(text)


def _fenced(text: str) -> CodeSource | None:
    """Read the fenced Python blocks that define something; the rest of the text is the prose."""
    blocks, prose, last = [], [], 0
    for m in _FENCE.finditer(text):
        body = m.group("body")
        if m.group("lang").lower() not in _PYTHON_TAGS or not _is_code(body, fenced=True):
            continue
        blocks.append(body)
        prose.append(text[last:m.start()])
        last = m.end()
    if not blocks:
        return None
    source = "\n".join(b.rstrip("\n") + "\n" for b in blocks)
    return CodeSource(source, _tidy("".join(prose) + text[last:]), _kind(source))


def _bare(text: str) -> CodeSource | None:
    """Find the longest run of lines that parses as Python and defines something (or returns, when it is all)."""
    lines = text.split("\n")
    if len(lines) > _MAX_LINES:
        return None
    whole = text.strip()
    if whole and _parses(whole) and _is_code(whole, fenced=True):
        return CodeSource(whole + "\n", "", _kind(whole))
    starts = [i for i, line in enumerate(lines) if _START.match(line)]
    budget = _PARSE_BUDGET_CHARS
    for start in starts:
        # Code ends on a non-blank line, never in the middle of an indented block.
        ends = [e for e in range(len(lines), start, -1)
                if lines[e - 1].strip() and (e == len(lines) or not lines[e].strip() or not lines[e][:1].isspace())]
        for end in ends:
            chunk = "\n".join(lines[start:end])
            budget -= len(chunk)
            if budget < 0:
                return None
            error = _syntax_error_line(chunk)
            if error is None:
                if _is_code(chunk, fenced=False):
                    prose = "\n".join(lines[:start] + lines[end:])
                    return CodeSource(chunk.strip("\n") + "\n", _tidy(prose), _kind(chunk))
            elif error == 1 and _closed(lines[start]):
                break  # a prose line that looks like an assignment: no chunk starting here parses
    return None


def _syntax_error_line(source: str) -> int | None:
    """Return the line of the first syntax error (1 for the first line), or None when source parses."""
    try:
        parse_python(source)
    except SyntaxError as exc:
        return exc.lineno or 0
    except ValueError:
        return 0
    return None


def _closed(line: str) -> bool:
    """Tell whether a line stands alone: brackets balanced, no continuation, no block opener."""
    stripped = line.rstrip()
    counts = [stripped.count(c) for c in "([{)]}"]
    return (counts[0] + counts[1] + counts[2] == counts[3] + counts[4] + counts[5]
            and not stripped.endswith(("\\", ":", ",")) and '"""' not in stripped and "'''" not in stripped)


def _parses(source: str) -> bool:
    try:
        parse_python(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _is_code(source: str, *, fenced: bool) -> bool:
    """Tell whether source defines a function or module (or, fenced or alone, returns a value at top level)."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return fenced and bool(_DEFINES.search(source))  # the sandbox will report the syntax error with its line
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in _HELPERS:
            return True
        if isinstance(node, ast.ClassDef):
            return True
    return fenced and any(isinstance(node, ast.Return) for node in tree.body)


def _kind(source: str) -> CodeKind:
    """Tell a module (a class deriving from something named Module) from a function."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return "module" if re.search(r"^class\s+\w+\s*\([^)]*Module\s*\)", source, re.MULTILINE) else "function"
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            if any(b.split(".")[-1] == "Module" for b in bases):
                return "module"
    return "function"


def _tidy(prose: str) -> str:
    """Collapse the blank lines left where code was taken out."""
    return re.sub(r"\n{3,}", "\n\n", prose).strip()
