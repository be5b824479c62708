"""A model's changed files become a version whose edit type the code decides and whose rule holds."""

from collections.abc import Iterator

import pytest

from agent.generators.base import KernelFiles, LaunchConfig
from agent.llm.changes import apply_changes
from agent.llm.client import LlmClient
from agent.llm.config import LlmConfig
from agent.llm.replies import SpecReply
from agent.runtime.devices import DeviceInfo
from tests.agent.llm.answers import SPEC, source
from tests.scripted_llm import MODEL, scripted_llm

CPU = DeviceInfo(kind="cpu", name="CPU, Triton interpreter")
OLD = KernelFiles(op="prefix_sum", config=LaunchConfig(), origin="llm",
                  files={f"prefix_sum_{r}.py": source(r) for r in ("triton", "baseline", "accuracy", "performance")})
SPEC_MODEL = SpecReply.model_validate(SPEC).to_spec()


@pytest.fixture
def client() -> Iterator[LlmClient]:
    with scripted_llm() as llm:  # no replies scripted: any call the change does not need would fail the test
        yield LlmClient(LlmConfig(base_url=llm.url, model=MODEL, max_retries=0))


def test_a_parameter_edit_keeps_every_other_file(client: LlmClient) -> None:
    triton = source("triton").replace("NUM_WARPS = 4", "NUM_WARPS = 8")
    weaker = source("accuracy").replace("SEEDS = [0, 1, 2]", "SEEDS = [0]")
    change = apply_changes(client, SPEC_MODEL, CPU, OLD, {"prefix_sum_triton.py": triton,
                                                          "prefix_sum_accuracy.py": weaker})
    assert change.edit_type == "parameter" and change.problem is None
    assert change.files.files["prefix_sum_accuracy.py"] == OLD.files["prefix_sum_accuracy.py"]
    assert change.notes == ["prefix_sum_accuracy.py kept: a parameter edit may change only prefix_sum_triton.py"]
    assert change.files.config.num_warps == 8


def test_a_logic_fix_may_not_rewrite_the_reference(client: LlmClient) -> None:
    triton = source("triton_masking_bug")
    wrong_reference = source("baseline").replace("torch.cumsum(x, dim=-1)", "torch.cumsum(x, dim=-1) * 0")
    change = apply_changes(client, SPEC_MODEL, CPU, OLD, {"prefix_sum_triton.py": triton,
                                                          "prefix_sum_baseline.py": wrong_reference})
    assert change.edit_type == "logic" and change.problem is None
    assert change.files.files["prefix_sum_baseline.py"] == OLD.files["prefix_sum_baseline.py"]
    assert "the reference defines what is right" in change.notes[0]
    assert "-        mask = cols < n_cols\n+        mask = cols < n_cols - 1" in change.diff(OLD, "v0", "v1")


def test_an_interface_edit_with_all_four_files_needs_no_rewrite(client: LlmClient) -> None:
    answer = {"prefix_sum_triton.py": source("triton_dim"), "prefix_sum_baseline.py": source("baseline_dim"),
              "prefix_sum_accuracy.py": source("accuracy") + "# dim\n",
              "prefix_sum_performance.py": source("performance") + "# dim\n"}
    change = apply_changes(client, SPEC_MODEL, CPU, OLD, answer)
    assert change.edit_type == "interface" and change.problem is None and change.files.files == answer


def test_an_interface_edit_that_leaves_the_reference_behind_breaks_its_rule(client: LlmClient) -> None:
    answer = {"prefix_sum_triton.py": source("triton_dim"), "prefix_sum_baseline.py": source("baseline"),
              "prefix_sum_accuracy.py": source("accuracy"), "prefix_sum_performance.py": source("performance")}
    change = apply_changes(client, SPEC_MODEL, CPU, OLD, answer)
    assert change.edit_type == "interface"
    assert change.problem == ("the entry point prefix_sum() takes different parameters in prefix_sum_triton.py and "
                              "prefix_sum_baseline.py")
