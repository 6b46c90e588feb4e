"""Issue 19, "no case lost, no false green", for Python checks and long conversations: a check
that changes the answer, returns a score out of range, runs past the case's time limit, exits at
import or cannot be printed; a check module that is not there; a conversation of hundreds of
turns. Each runs real suites with real check modules, as a user's run does."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.load.runtime import Case
from pytest_elizon_eval.run.answers import conversation
from pytest_elizon_eval.run.calls import EntryCall, ToolCall
from pytest_elizon_eval.run.running import CasePlan, run_case

from .conftest import Packages

ROUTED_APP = '''
def answer(q):
    return {"route": "billing", "reply": "about " + q}
'''


def _cases(path: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {c["id"]: c for s in data["suites"] for c in s["cases"]}


def test_a_check_that_changes_the_answer_changes_nothing_else(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # the change must reach neither the next check, nor the cassette (a replay would then
    # fail where the live run passed), nor the input the cassette keeps the digest of
    packages.package(app=ROUTED_APP, suite='''
        cases:
          - id: changed-then-read
            input: {q: refunds}
            expect:
              route: billing
              checks: ["meddling:changes_everything", "meddling:sees_the_answer"]
          - id: changed-then-replayed
            input: {q: invoices}
            expect:
              route: billing
              checks: ["meddling:changes_everything"]
    ''')
    packages.write("pkg/meddling.py", '''
        def changes_everything(value, input, answer, case):
            value["route"] = "hacked"
            answer.value["route"] = "hacked too"
            input["q"] = "changed"
            case.input["q"] = "changed as well"
            return True

        def sees_the_answer(value, input, answer, case):
            assert value["route"] == "billing", value
            assert answer.value["route"] == "billing", answer.value
            assert input["q"] == "refunds", input
            return True
    ''')
    recorded = pytester.runpytest("-p", "no:cacheprovider", "--elizon-record=cassette.json",
                                  "--elizon-results=live.json")
    recorded.assert_outcomes(passed=2)
    kept = json.loads((pytester.path / "cassette.json").read_text(encoding="utf-8"))
    assert [run["value"]["route"] for entry in kept["cases"].values()
            for run in entry["runs"]] == ["billing", "billing"]
    assert {c["output"] for c in _cases(pytester.path / "live.json").values()} == {
        '{"route": "billing", "reply": "about refunds"}',
        '{"route": "billing", "reply": "about invoices"}'}
    replayed = pytester.runpytest("-p", "no:cacheprovider", "--elizon-replay=cassette.json")
    replayed.assert_outcomes(passed=2)


SCORES = '''
import math

def infinite(output):
    return float("inf")

def not_a_number(output):
    return math.nan, "a NaN is no score"

def negative(output):
    return -0.5

def above_one(output):
    return 1.5

def beyond_any_float(output):
    return 10 ** 400

def fine(output):
    return 0.75
'''


def test_a_score_outside_0_to_1_fails_with_a_clear_message(
        packages: Packages, pytester: pytest.Pytester) -> None:
    names = ["infinite", "not-a-number", "negative", "above-one", "beyond-any-float", "fine"]
    packages.package(app=ROUTED_APP, suite="cases:\n" + "".join(
        f"  - id: {name}\n    input: {{q: x}}\n    expect: {{checks: "
        f"[{{check: 'scores:{name.replace('-', '_')}', threshold: 0.5}}]}}\n"
        for name in names))
    packages.write("pkg/scores.py", SCORES)
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=r.json")
    result.assert_outcomes(passed=1, failed=5)
    found = {i: c["assertions"][0]["found"] for i, c in _cases(pytester.path / "r.json").items()
             if c["outcome"] == "failed"}
    said = "; a score is a number from 0 to 1"
    assert found == {
        "infinite": "returned the score inf" + said,
        "not-a-number": "returned the score nan — a NaN is no score" + said,
        "negative": "returned the score -0.5" + said,
        "above-one": "returned the score 1.5" + said,
        "beyond-any-float": "returned the score a whole number of more than 308 digits" + said,
    }


HANGING_CHECKS = '''
import os
import threading

NEVER = threading.Event()  # nobody sets it: the check cannot finish, however fast the machine


def hangs(output):
    with open(os.environ["CHECK_STARTED"], "a") as log:
        log.write(output + "\\n")
    NEVER.wait()
    return True


def after(output):
    return True
'''


def test_a_check_past_the_time_limit_makes_the_case_a_timeout(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    started = pytester.path / "started.log"
    monkeypatch.setenv("CHECK_STARTED", str(started))
    packages.package(app=ROUTED_APP, suite='''
        cases:
          - id: single
            input: {q: one}
            expect: {contains: [billing], checks: ["slow:hangs", "slow:after"]}
          - id: in-a-conversation
            turns:
              - input: {q: first}
                expect: {checks: ["slow:after"]}
              - input: {q: second}
                expect: {checks: ["slow:hangs"]}
              - input: {q: never sent}
          - id: unaffected
            input: {q: three}
            expect: {checks: ["slow:after"]}
    ''')
    packages.write("pkg/slow.py", HANGING_CHECKS)
    # a process of its own, so the abandoned check threads end with it; the limit leaves the
    # instant entry points (and the instant checks) room on a loaded machine, the hanging
    # checks never finish whatever it is
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--elizon-timeout=1",
                                           "--elizon-concurrency=3", "--elizon-results=r.json",
                                           timeout=120)
    assert result.parseoutcomes() == {"passed": 1, "timeout": 2}
    # the evidence that the entry point answered and the checks were the ones running
    assert sorted(started.read_text().splitlines()) == [
        '{"route": "billing", "reply": "about one"}',
        '{"route": "billing", "reply": "about second"}']
    cases = _cases(pytester.path / "r.json")
    single, talk = cases["single"], cases["in-a-conversation"]
    assert single["outcome"] == talk["outcome"] == "timeout"
    assert [(a["name"], a["passed"]) for a in single["assertions"]] == [
        ("contains", True), ("checks.slow:hangs", False), ("checks.slow:after", None)]
    hung, after = single["assertions"][1:]
    assert hung["found"].startswith("gave no result within the ")
    assert after["found"] == "not checked: the case's time limit was reached"
    assert talk["failed_turn"] == 2
    assert len(talk["turns"]) == 2
    result.stdout.fnmatch_lines([
        "timed out:",
        "  pkg/eval/suite.yaml::single — no answer within 1 s (--elizon-timeout=1)",
        "  pkg/eval/suite.yaml::in-a-conversation — turn 2 of 3: no answer within 1 s "
        "(--elizon-timeout=1)",
    ])


def test_what_the_entry_point_answered_is_kept_apart_from_the_timeout() -> None:
    # a cassette records the answer (Attempt.entry_calls), not the timeout a check made of it;
    # answered from a replay, so no entry point races the short limit: only the check waits
    never = threading.Event()
    answered = EntryCall(value="hello", text="hello", latency_ms=1.0)
    for case in (Case.model_validate({"id": "one", "input": "hi",
                                      "expect": {"checks": ["hangs"]}}),
                 Case.model_validate({"id": "talk", "turns": [
                     {"input": "hi"}, {"input": "again", "expect": {"checks": ["hangs"]}}]})):
        recorded = (answered,) * len(case.inputs)
        plan = CasePlan(case=case, entry=None, judge=None, entry_description="cassette",
                        timeout_s=0.1, timeout_source="test", replay=(recorded,),
                        checks={"hangs": lambda output: never.wait()})
        [attempt] = run_case(plan).attempts
        assert attempt.call.timed_out
        assert attempt.call.text == "hello"
        assert attempt.entry_calls == recorded
    never.set()


def test_a_check_module_that_exits_at_import_is_an_error_of_its_cases(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ROUTED_APP, suite='''
        cases:
          - id: names-the-exiting-check
            input: {q: x}
            expect: {checks: ["exits:fine"]}
          - id: names-a-stopping-check
            turns:
              - input: {q: x}
                expect: {checks: ["stops:fine"]}
          - id: runs-anyway
            input: {q: x}
            expect: {contains: [billing]}
    ''')
    # a script's argument parsing at import exits like this, with SystemExit
    packages.write("pkg/exits.py", "import sys\nsys.exit(3)\n\ndef fine(output):\n"
                                   "    return True\n")
    packages.write("pkg/stops.py", "class Stop(BaseException):\n    pass\n\nraise Stop()\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=r.json")
    result.assert_outcomes(passed=1, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:4: cases[[]0[]].expect.checks[[]0[]]: "
        "check 'exits:fine' cannot be used: importing 'exits' from */pkg ended with "
        "SystemExit: 3 (at */pkg/exits.py:2: sys.exit(3))",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:8: cases[[]1[]].turns[[]0[]].expect."
        "checks[[]0[]]: check 'stops:fine' cannot be used: importing 'stops' from */pkg ended "
        "with Stop (at */pkg/stops.py:4: raise Stop())",
    ])
    cases = _cases(pytester.path / "r.json")
    assert [cases[i]["outcome"] for i in ("names-the-exiting-check", "names-a-stopping-check",
                                          "runs-anyway")] == ["error", "error", "passed"]


def test_a_check_module_that_is_not_there_is_named_at_its_suite_line_only(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ROUTED_APP, suite='''
        cases:
          - id: one
            input: {q: x}
            expect: {checks: ["nosuchmod:fn"]}
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:4: cases[[]0[]].expect.checks[[]0[]]: "
        "check 'nosuchmod:fn' cannot be used: cannot import 'nosuchmod': ModuleNotFoundError: "
        "No module named 'nosuchmod'"])
    assert "pytest_elizon_eval" not in result.stdout.str()  # never a plugin file as the place


UNPRINTABLE = '''
class Shy:
    def __repr__(self):
        raise ValueError("no repr")

    __str__ = __repr__


class Loud(ValueError):
    def __str__(self):
        raise RuntimeError("no str")


class Mumbled(str):
    def __str__(self):
        raise RuntimeError("no str")


def returns_shy(output):
    return Shy()


def raises_loud(output):
    raise Loud()


def asserts_shy(output):
    raise AssertionError(Shy())


def mumbles_its_reason(output):
    return False, Mumbled("why")
'''


def test_a_check_that_cannot_be_printed_still_fails_with_a_reason(
        packages: Packages, pytester: pytest.Pytester) -> None:
    names = ["returns-shy", "raises-loud", "asserts-shy", "mumbles-its-reason"]
    packages.package(app=ROUTED_APP, suite="cases:\n" + "".join(
        f"  - id: {name}\n    input: {{q: x}}\n    expect: {{checks: "
        f"['unprintable:{name.replace('-', '_')}']}}\n" for name in names))
    packages.write("pkg/unprintable.py", UNPRINTABLE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=r.json")
    result.assert_outcomes(failed=4)
    found = {i: c["assertions"][0]["found"] for i, c in _cases(pytester.path / "r.json").items()}
    assert found["returns-shy"] == ("returned Shy <unprintable Shy>; a check returns True, "
                                    "False, (False, 'reason') or a score, or raises "
                                    "AssertionError")
    assert found["raises-loud"].startswith("the check raised Loud: <unprintable Loud> (at ")
    assert found["asserts-shy"].startswith("AssertionError: <unprintable AssertionError> (at ")
    assert found["mumbles-its-reason"] == "returned False — why"


LONG_TALK_APP = '''
import json
import os

from pytest_elizon_eval import Answer, ToolCall

SEEN = {}  # every message mapping the entry point was given, kept so no id is reused


def answer(q, messages):
    for message in messages:
        SEEN[id(message)] = message
    if q == "last":
        with open(os.environ["TALK_LOG"], "w") as log:
            log.write(f"{len(SEEN)}\\n")
            log.write(json.dumps(messages))
    return Answer(text="noted " + q, tool_calls=[ToolCall("note", {"q": q}, result={"ok": 1})])
'''


def test_a_long_conversation_builds_each_message_once(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # Linear, proven by counting: with the conversation rebuilt at every turn, the entry point
    # is given about 1.5 * turns**2 distinct message mappings (135,000 here), built once it
    # is given at most 4 per turn: user, assistant and tool of the past, and the new question.
    log = pytester.path / "talk.log"
    monkeypatch.setenv("TALK_LOG", str(log))
    turns = 300
    inputs = [f"turn {n}" for n in range(turns - 1)] + ["last"]
    packages.package(app=LONG_TALK_APP, suite="cases:\n  - id: long\n    turns:\n" + "".join(
        f"      - input: {{q: {q}}}\n        expect: {{contains: [noted]}}\n" for q in inputs))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    count, last = log.read_text(encoding="utf-8").split("\n", 1)
    assert int(count) <= 4 * turns
    # and the conversation is the one a rebuild gives, tool-call ids included
    history = [({"q": q}, EntryCall(text="noted " + q, tool_calls=(
        ToolCall("note", {"q": q}, result={"ok": 1}),))) for q in inputs[:-1]]
    expected = conversation(history, {"q": "last"})
    assert json.loads(last) == expected
    assert expected[-2]["tool_call_id"] == f"call_{turns - 2}_0"
