"""A failed run's cause in one line: the first case that raised, a compiler error's last line, a crash's message."""

from __future__ import annotations

import ast
from pathlib import Path

from triton.compiler.errors import CompilationError

from agent.runtime.results import clean_accuracy, clip, failure_cause, last_line
from agent.runtime.sandbox import run_file

KERNEL = '''def kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, 300)
'''
POWER = "ValueError(\"arange's range must be a power of 2\")"


def _compile_error() -> str:
    """Return what an accuracy file records for a kernel the compiler refuses (as on a GPU)."""
    node = ast.parse(KERNEL).body[0].body[0].value  # type: ignore[attr-defined]
    exc = CompilationError(KERNEL, node, POWER)
    return f"{type(exc).__name__}: {exc}"


def test_a_compiler_error_is_told_by_its_last_line_with_its_type() -> None:
    message = _compile_error()
    assert message.count("\n") >= 2 and message.splitlines()[-1] == POWER  # the source excerpt comes first
    assert last_line(message) == f"CompilationError: {POWER}"
    assert last_line("InterpreterError: " + POWER) == "InterpreterError: " + POWER
    assert last_line("Traceback ...\n  File x\nValueError: bad") == "ValueError: bad"


def test_the_first_case_that_raised_is_the_cause_and_a_numeric_failure_has_none() -> None:
    result = {"status": "error", "cases": [
        {"status": "fail", "max_abs_err": 0.5},
        {"status": "error", "message": _compile_error()},
        {"status": "error", "message": "RuntimeError: later"},
    ]}
    assert failure_cause(result) == f"CompilationError: {POWER}"
    assert failure_cause({"status": "fail", "cases": [{"status": "fail", "max_abs_err": 0.5}]}) is None
    assert failure_cause({"message": "x_accuracy.py ran past 60 s and was killed"}) == \
        "x_accuracy.py ran past 60 s and was killed"


def test_a_long_message_keeps_its_last_line() -> None:
    message = _compile_error().replace("offsets", "o" * 900)
    assert clip(message, 500).endswith(POWER) and len(clip(message, 500)) == 500


def test_a_model_test_whose_cases_all_raised_reports_no_error_figure() -> None:
    written = {"status": "error", "cases_run": 2, "cases_failed": 2, "max_abs_err": 0.0,
               "cases": [{"status": "error", "message": "E: x"}, {"status": "error", "message": "E: y"}]}
    assert clean_accuracy(written)["max_abs_err"] is None


def test_a_file_that_crashes_before_writing_its_result_says_its_exception(tmp_path: Path) -> None:
    crash = "raise ValueError(\"arange's range must be a power of 2\")\n"
    run = run_file({"x_performance.py": crash}, "x_performance.py", tmp_path / "w", device="cpu", timeout_s=60,
                   trusted=True)
    assert run.status == "crashed"
    assert failure_cause(run.result) == "no result file was written: ValueError: arange's range must be a power of 2"


def test_a_crash_whose_stderr_ends_in_another_processes_frame_still_names_the_error(tmp_path: Path) -> None:
    # A fork bomb's children share stderr: one child's error line, then another's traceback frame, come last.
    crash = ("import sys\n"
             "sys.stderr.write('Traceback (most recent call last):\\n'\n"
             "                 'BlockingIOError: [Errno 11] Resource temporarily unavailable\\n'\n"
             "                 '  File \"x_accuracy.py\", line 3, in <module>\\n')\n"
             "sys.exit(1)\n")
    run = run_file({"x_accuracy.py": crash}, "x_accuracy.py", tmp_path / "w", device="cpu", timeout_s=60, trusted=True)
    assert run.status == "crashed"
    assert failure_cause(run.result) == ("no result file was written: "
                                         "BlockingIOError: [Errno 11] Resource temporarily unavailable")
