"""A model-written accuracy test is held to the contract: it shows every spec case, and it fails a wrong kernel."""

from pathlib import Path

import pytest

from agent.generators.base import KernelFiles, LaunchConfig
from agent.llm.replies import SpecReply
from agent.runtime.accuracy_audit import missing_cases, passes_a_wrong_kernel
from tests.agent.llm.answers import SPEC, source

PREFIX_SUM = SpecReply.model_validate(SPEC).to_spec()  # x [8, 1000] and [3, 4096], float32 and float16
TIMEOUT_S = 180.0


def _case(shape: list[object], dtype: str, status: str = "pass", **extra: object) -> dict[str, object]:
    return {"shapes": {"x": shape} | extra, "dtypes": {"x": dtype}, "status": status}


def test_every_spec_case_reported_in_any_common_spelling_is_enough() -> None:
    cases = [_case([8.0, 1000], "torch.float32", out=[8, 1000]), _case([8, 1000], "float16"),
             _case([3, 4096], "float32", status="fail"), _case([3, 4096], "torch.float16", status="error")]
    assert missing_cases({"cases": cases}, PREFIX_SUM, "cpu") is None


def test_a_missing_or_skipped_case_is_named() -> None:
    cases = [_case([8, 1000], "float32"), _case([8, 1000], "float16"), _case([3, 4096], "float32"),
             _case([3, 4096], "float16", status="skipped"), {"shapes": "all of them", "dtypes": None, "status": "pass"}]
    message = missing_cases({"cases": cases}, PREFIX_SUM, "cpu")
    assert message is not None and "ran 3 of the 4 cases" in message and "x [3, 4096] float16" in message


def _files(accuracy: str) -> KernelFiles:
    roles = {"triton": source("triton"), "baseline": source("baseline"), "accuracy": accuracy,
             "performance": source("performance")}
    return KernelFiles(op="prefix_sum", files={f"prefix_sum_{r}.py": text for r, text in roles.items()},
                       config=LaunchConfig(), origin="llm")


@pytest.mark.parametrize(("accuracy", "words"), [
    (source("accuracy"), None),  # an honest test fails the wrong kernel
    (source("accuracy").replace('"status": "fail" if bool(bad.any()) else "pass"', '"status": "pass"'),
     "passed a deliberately wrong kernel"),
    # A test that crashes when the kernel is not the one it expects reports nothing: that is not a failure it found.
    (source("accuracy").replace("def main():\n", "def main():\n    assert prefix_sum.__module__ == 'prefix_sum_triton' "
                                "and '_reference' not in prefix_sum.__code__.co_names\n"),
     "did not report a deliberately wrong kernel's failure"),
], ids=["honest", "compares-nothing", "crashes-on-the-wrong-kernel"])
def test_the_accuracy_test_must_fail_a_deliberately_wrong_kernel(accuracy: str, words: str | None,
                                                                 tmp_path: Path) -> None:
    said = passes_a_wrong_kernel(_files(accuracy), tmp_path, device="cpu", timeout_s=TIMEOUT_S)
    assert said is None if words is None else (said is not None and words in said), said
