"""A case's result records and their one serialisation: the round trip is the identity, and
every field a record reports has its entry in results.schema.json (issue 20)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pytest_elizon_eval.decide.results_data import (
    CaseResult,
    JudgeRecord,
    LabelRecord,
    LeakRecord,
    ProbeRecord,
    PromptRecord,
    RagRecord,
    RepeatRecord,
    RunRecord,
    SecurityRecord,
    SnapshotRecord,
    SuiteInfo,
    ToolCallRecord,
    ToolCountRecord,
    TurnRecord,
    data_fields,
    from_data,
    records,
    to_data,
)
from pytest_elizon_eval.reporting import results
from pytest_elizon_eval.run.assertions import AssertionResult
from pytest_elizon_eval.run.calls import ErrorInfo, Usage

CHECK = AssertionResult("contains", False, "every one of: 'a'", "missing: 'a'")
ERROR = ErrorInfo("ValueError", "boom", "Traceback ...")
USAGE = Usage(10, 5, 0.001, "m")
CALL = ToolCallRecord("search", "x" * 10, {"rows": [1, 2]}, "late", 70_000, None, 4)


def full() -> CaseResult:
    """A result with every field set to something other than its default."""
    turn = TurnRecord(2, {"q": "hi"}, "failed", "ans", 3, 1.5, (CHECK,), ERROR, (CALL,), USAGE,
                      0.25, 120)
    return CaseResult(
        nodeid="pkg/eval/s.yaml::c", case_id="c", line=4,
        suite=SuiteInfo("pkg/eval/s.yaml", "pkg", "advisory", True, {"pass_rate": 0.5}, "ab"),
        outcome="failed", assertions=(CHECK,), latency_ms=2.5, output="out", output_length=9,
        error=ERROR, timeout_s=3.0, timeout_source="--elizon-timeout=3", entry="app:main",
        judge_score=0.4, judge_reasoning="meh",
        runs=(RunRecord("passed", 1.0, (), "a", None, 0.9),
              RunRecord("failed", 2.0, (CHECK,), "b", ERROR, None)),
        passed_runs=1, min_pass_rate=0.75, replayed=True, input={"q": ["hi", 1]},
        tool_calls=(CALL,), usage=USAGE, judge_usage=Usage(1, 2, None, None),
        turns=(turn,), failed_turn=2, turn_count=3,
        security=SecurityRecord((LeakRecord("canary", "ab…yz", 2),),
                                ProbeRecord("jailbreak", "high", "pack", "elizon.yaml", 7)),
        attempts=3, retries=2, waited_s=0.5, rate_limited=True,
        snapshot=SnapshotRecord("changed", "pkg/eval/__snapshots__/s.snap.yaml", 5, True,
                                "the output differs from it", "--- a\n+++ b"),
        judges=(JudgeRecord("judge.tone", "j [prompt ab]", 0.7, 0.5, (0.4, 0.6), 0.1, 0.4, 0.6,
                            0.2, 0.1, False, 1, 1, "judge not aligned: κ 0.41 < 0.60", 1, 2),),
        alignment={"cohen_kappa": 0.41, "min_kappa": 0.6},
        repeat=RepeatRecord(2, 1, 0.5, 0.09, 0.91, 0.95, 0.75, True, True, "sequential", 2,
                            20, "SPRT", 0.1, "below", 2, False, 0.5, 0.5),
        label=LabelRecord("billing", "legal"), rag=RagRecord(0.5, 0.75, 1.0, 0.5, 3, 2),
        first_tool="search", controls=("CC6.1", "LLM01"),
        resumed=True, advisory="judge not aligned: κ 0.41 < 0.60", tool_calls_total=120,
        tool_counts=(ToolCountRecord("search", 119, 3), ToolCountRecord(None, 1, 1)),
        teardown_error=ErrorInfo("RuntimeError", "cleanup failed", "Traceback ..."),
        variant="small", prompts=(PromptRecord("support", "2", "ab" * 32),))


def test_a_fully_populated_result_survives_data_and_json_unchanged() -> None:
    result = full()
    for field in dataclasses.fields(CaseResult):  # "fully populated" is checked, not assumed
        default = (field.default_factory() if field.default_factory is not dataclasses.MISSING
                   else field.default)
        assert getattr(result, field.name) != default, field.name
    data = result.to_data()
    assert CaseResult.from_data(data) == result
    assert CaseResult.from_data(json.loads(json.dumps(data))) == result
    assert isinstance(data["runs"][1]["assertions"][0], dict)
    assert data["tool_calls"][0]["error_length"] == 4
    assert "result_length" not in data["tool_calls"][0]  # unset: absent, as results keep it


def test_reading_ignores_unknown_keys_and_defaults_missing_ones() -> None:
    assert from_data(RunRecord, {"outcome": "passed", "later": 1}) == RunRecord("passed")
    plain = CaseResult(nodeid="n", case_id="c", line=1, suite=full().suite, outcome="passed")
    assert "security" not in plain.to_data()  # only where checked
    assert "retryable" not in to_data(ERROR)  # runtime steering, never data
    assert "key" not in to_data(full().suite)


def _props(node: Any) -> set[str]:
    return set(node["properties"])


def test_every_record_field_is_in_the_results_schema() -> None:
    defs = results.schema()["$defs"]
    case = defs["case"]["properties"]
    where: dict[type, set[str]] = {
        CaseResult: _props(defs["case"]) | {"case_id", "suite"},  # renamed / lifted out
        SuiteInfo: _props(defs["suite"]),
        RunRecord: _props(case["runs"]["items"]),
        TurnRecord: _props(case["turns"]["items"]),
        ToolCallRecord: _props(case["tool_calls"]["items"]),
        SecurityRecord: _props(defs["case_security"]),
        ProbeRecord: _props(defs["case_security"]["properties"]["probe"]),
        LeakRecord: _props(defs["leaked"]["items"]),
        AssertionResult: _props(case["assertions"]["items"]),
        ErrorInfo: _props(case["error"]),
        Usage: _props(case["usage"]),
        JudgeRecord: _props(case["judges"]["items"]),
        RepeatRecord: _props(defs["repeat"]),
        LabelRecord: _props(case["label"]),
        RagRecord: _props(case["rag"]),
        ToolCountRecord: _props(case["tool_counts"]["items"]),
        PromptRecord: _props(case["prompts"]["items"]),
    }
    assert set(where) == set(records())
    for record, known in where.items():
        reported = set(data_fields(record))
        assert reported <= known, (record.__name__, reported - known)
