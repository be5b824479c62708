"""The built-in benchmark suites read whole: every task becomes a spec, none a question."""

from pathlib import Path

import pytest

from kernelgen.bench import SUITES, suite_names
from kernelgen.settings import Settings
from server.batch_input import jsonl_tasks
from server.chat import read_spec


# The conformance suite's prose is read in tests/kernelgen/test_conformance.py; its references are checked outside
# the jobs (read with them appended, 69 code readings in the sandbox, it would add minutes to CI).
@pytest.mark.bubblewrap
@pytest.mark.parametrize("name", [name for name in suite_names() if name != "conformance"])
def test_every_task_of_a_built_in_suite_is_read(name: str, tmp_path: Path) -> None:
    tasks = jsonl_tasks((SUITES / f"{name}.jsonl").read_text(encoding="utf-8"))
    settings = Settings(work_dir=tmp_path / "work")
    questions = {title: outcome.question for title, spec in tasks
                 for outcome in read_spec(spec, settings) if outcome.status != "read"}
    assert not questions
    assert len({title for title, _ in tasks}) == len(tasks)  # the report names each task once
