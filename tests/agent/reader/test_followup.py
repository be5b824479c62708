"""Follow-up messages read against the previous spec: the derived spec reads back with only the asked change."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from agent.reader.followup import FollowUp, FollowUpError, derive
from agent.reader.outcome import read_outcomes
from agent.reading import Reading

pytestmark = pytest.mark.bubblewrap  # the previous readings include code specs, traced in the sandbox

CORPUS = Path(__file__).resolve().parent / "corpus" / "followups" / "followups.toml"
DOCUMENT = tomllib.loads(CORPUS.read_text(encoding="utf-8"))
PREVIOUS: dict[str, str] = DOCUMENT["previous"]
CASES: list[dict[str, Any]] = DOCUMENT["case"]
CASE_KEYS = {"id", "previous", "message", "expect", "inputs", "rounds", "target_speedup", "device", "changes_has",
             "error_has"}


def _read(text: str, work_dir: Path) -> Reading:
    """Read one spec and return its reading; a question fails the test."""
    (outcome,) = read_outcomes(text, work_dir)
    assert outcome.status == "read" and outcome.reading is not None, outcome.question
    return outcome.reading


@pytest.fixture(scope="module")
def previous_readings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Reading]:
    """Read every previous spec once (a code spec runs in a sandbox: seconds)."""
    work = tmp_path_factory.mktemp("previous")
    return {name: _read(text, work / name) for name, text in PREVIOUS.items()}


@pytest.mark.bubblewrap(needed=False)  # reads the corpus file only
def test_corpus_is_well_formed() -> None:
    """Every case names a known previous spec, a known outcome, and only known keys."""
    assert len(CASES) >= 30
    assert len({c["id"] for c in CASES}) == len(CASES)
    for case in CASES:
        assert set(case) <= CASE_KEYS, case["id"]
        assert case["previous"] in PREVIOUS, case["id"]
        assert case["expect"] in ("followup", "new", "error"), case["id"]
        assert (case["expect"] == "error") == ("error_has" in case), case["id"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_followup(case: dict[str, Any], previous_readings: dict[str, Reading], tmp_path: Path) -> None:
    """Derive the next spec from the message, and read it back when it is a follow-up."""
    text, previous = PREVIOUS[case["previous"]], previous_readings[case["previous"]]
    if case["expect"] == "error":
        with pytest.raises(FollowUpError, match=case["error_has"]) as raised:
            derive(text, previous, case["message"])
        assert "?" in str(raised.value)  # a FollowUpError asks the user something
        return
    follow = derive(text, previous, case["message"])
    if case["expect"] == "new":
        assert follow is None
        return
    assert isinstance(follow, FollowUp)
    assert follow.rounds == case.get("rounds")
    assert follow.target_speedup == case.get("target_speedup")
    assert follow.changes
    if "changes_has" in case:
        assert any(case["changes_has"] in change for change in follow.changes), follow.changes
    if "inputs" not in case:
        assert follow.spec_text == text
    reading = _read(follow.spec_text, tmp_path)
    assert reading.ir == previous.ir
    expected = case.get("inputs") or [
        {"name": i.name, "shapes": i.shapes, "dtype": "/".join(i.dtypes)} for i in previous.inputs]
    got = [{"name": i.name, "shapes": i.shapes, "dtype": "/".join(i.dtypes)} for i in reading.inputs]
    want = [{"name": i["name"], "shapes": i.get("shapes") or [i["shape"]], "dtype": i["dtype"]} for i in expected]
    assert got == want
    assert reading.device == case.get("device", previous.device)
