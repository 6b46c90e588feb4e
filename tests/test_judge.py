"""The ``judge`` (docs/contract.md#judge): callable judges, the chat-completions judge on loopback,
binding errors."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from pytest_elizon_eval.bind.judging import GRADING_SYSTEM_PROMPT, parse_grade

from .chat_server import ChatServer
from .conftest import ECHO_APP, Packages

JUDGED = """
cases:
  - id: tone-matter-summary
    input: Summarize this matter
    expect:
      contains: [summarize]
      judge:
        rubric: Professional, concise, no legal advice.
        threshold: 0.8
"""


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer().running() as server:
        yield server


def endpoint_package(packages: Packages, chat: ChatServer, model: str,
                     key_env: str | None = None, name: str = "pkg") -> None:
    key = f", apiKeyEnv: {key_env}" if key_env else ""
    packages.package(name, app=ECHO_APP, suite=JUDGED)
    manifest = packages.root / f"{name}/elizon.yaml"
    judge = f"judge: {{url: '{chat.url}', model: {model}{key}}}\n"
    manifest.write_text(manifest.read_text() + judge)


def test_callable_judges_sync_and_async(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite=JUDGED + """
  - id: graded-low
    input: Summarize briefly
    expect:
      judge: {rubric: Mentions the deadline., threshold: 0.5}
""")
    pytester.makeconftest("""
        import pytest

        async def strict_judge(rubric, case_input, output):
            if "deadline" in rubric:
                return 0.2, "the deadline is not mentioned"
            return 0.95

        @pytest.fixture(scope="session")
        def elizon_judge():
            return strict_judge
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "  ✗ judge",
        "      expected: a score of at least 0.5 for the rubric 'Mentions the deadline.'",
        "      found:    score 0.20 — the deadline is not mentioned",
    ])


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ("'high'", "*judge *bad_judge failed: the judge returned 'high'; expected a score from 0 "
                   "to 1 or a (score, reasoning) pair"),
        ("1.5", "*failed: the judge returned 1.5; expected a score from 0 to 1*"),
        ("True", "*failed: the judge returned True; expected a score*"),
        ("(0.9, 42)", "*failed: the judge's reasoning is a int, not text"),
    ],
)
def test_a_bad_grade_fails_the_case_naming_the_judge(
    packages: Packages, pytester: pytest.Pytester, returned: str, message: str
) -> None:
    packages.package(app=ECHO_APP, suite=JUDGED)
    pytester.makeconftest(f"""
        import pytest

        def bad_judge(rubric, case_input, output):
            return {returned}

        @pytest.fixture
        def elizon_judge():
            return bad_judge
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"      found:    {message.lstrip('*')}"
                                 if not message.startswith("*") else message])


def test_endpoint_judge_passes_and_sends_the_documented_prompt(
    packages: Packages, pytester: pytest.Pytester, chat: ChatServer
) -> None:
    endpoint_package(packages, chat, "good")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    [request] = chat.requests
    assert request["model"] == "good"
    assert request["messages"][0] == {"role": "system", "content": GRADING_SYSTEM_PROMPT}
    user = request["messages"][1]["content"]
    assert "Professional, concise, no legal advice." in user
    assert "Summarize this matter" in user


#: (model, the case's outcome, what the judge check found, requests the judge was sent)
ANSWERS = [
    ("low", "failed", "score 0.30 — rude tone", 1),
    ("fenced", "passed", None, 1),
    ("flaky", "passed", None, 2),
    ("garbage", "failed", "judge chat-completions judge 'garbage' at *: malformed "
                          "answer twice: no JSON object with a score in the reply: "
                          "'no idea, sorry'", 2),
    ("error500", "failed", "judge chat-completions judge 'error500' at * failed: HTTP 500: "
                           "'{\"error\": \"overloaded\"}'", 1),
    ("badbody", "failed", "*malformed answer twice: the reply is not a chat completion: "
                          "'<html>gateway</html>'", 2),
    ("deep", "failed", "*malformed answer twice: the reply is not a chat completion: "
                       "'{\"choices\": [[[[*", 2),
    # the grade stands; token counts no usage can keep are unknown, not a crash
    ("huge-usage", "passed", None, 1),
    # too large is an HTTP failure, not a malformed answer: it is not asked again
    ("endless", "failed", "judge chat-completions judge 'endless' at * failed: the response "
                          "body from http://127.0.0.1:*/v1/chat/completions is larger than "
                          "1,048,576 bytes", 1),
]


def test_endpoint_judge_answers(packages: Packages, pytester: pytest.Pytester,
                                chat: ChatServer) -> None:
    """One package per model of the chat server, all in one run."""
    for model, *_ in ANSWERS:
        endpoint_package(packages, chat, model, name=f"judged-{model}")
    result = pytester.runpytest("-v", "--elizon-results=r.json")
    outcomes = [outcome for _, outcome, *_ in ANSWERS]
    result.assert_outcomes(passed=outcomes.count("passed"), failed=outcomes.count("failed"))
    # each failed case's section: from its first line to the next case's
    lines = result.outlines
    starts = [i for i, line in enumerate(lines) if line.startswith("case 'tone-matter-summary'")]
    sections = {lines[start].split(" suite ", 1)[1].split("/", 1)[0]:
                pytest.LineMatcher(lines[start:end])
                for start, end in zip(starts, [*starts[1:], len(lines)], strict=True)}
    for model, outcome, found, requests in ANSWERS:
        result.stdout.fnmatch_lines([
            f"judged-{model}/eval/suite.yaml::tone-matter-summary {outcome.upper()}*"])
        assert chat.count(model) == requests, model
        if found:
            sections[f"judged-{model}"].fnmatch_lines([f"      found:    {found}"])
    cases = {s["package"]: s["cases"][0]
             for s in json.loads((pytester.path / "r.json").read_text())["suites"]}
    assert cases["judged-huge-usage"]["judge_usage"]["input_tokens"] is None
    assert cases["judged-huge-usage"]["judge_usage"]["output_tokens"] == 5


def test_a_slow_judge_is_a_failure_within_the_case_limit(
    packages: Packages, pytester: pytest.Pytester, chat: ChatServer
) -> None:
    endpoint_package(packages, chat, "slow")
    result = pytester.runpytest("--elizon-timeout=0.25")
    result.assert_outcomes(failed=1)  # a failure naming the judge, never a timeout or a pass
    result.stdout.fnmatch_lines(["      found:    judge chat-completions judge 'slow' at * "
                                 "gave no grade within the * s left of the case's time limit"])


def test_the_api_key_comes_from_the_environment_only(
    packages: Packages, pytester: pytest.Pytester, chat: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    endpoint_package(packages, chat, "needs-key", key_env="TEST_JUDGE_KEY")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*failed: the environment variable TEST_JUDGE_KEY (apiKeyEnv) "
                                 "is not set"])
    monkeypatch.setenv("TEST_JUDGE_KEY", "sk-test-123")
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=1)
    assert chat.headers[-1]["Authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in result.stdout.str()


def test_connection_refused_fails_the_case(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite=JUDGED)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    result = pytester.runpytest(f"--elizon-judge={{url: '{url}', model: any}}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"      found:    judge chat-completions judge 'any' at "
                                 f"{url}/chat/completions failed: connection refused by "
                                 f"{url}/chat/completions (is the service running?)"])


def test_judge_from_the_command_line_beats_the_fixture(
    packages: Packages, pytester: pytest.Pytester, chat: ChatServer
) -> None:
    packages.package(app=ECHO_APP, suite=JUDGED)
    pytester.makeconftest("import pytest\n\n@pytest.fixture\ndef elizon_judge():\n"
                          "    return lambda r, i, o: 0.0\n")
    pytester.runpytest().assert_outcomes(failed=1)
    pytester.runpytest(f"--elizon-judge={{url: '{chat.url}', model: good}}").assert_outcomes(
        passed=1)


def test_unbound_judge_is_a_setup_error(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite=JUDGED + "  - id: no-judge-needed\n    input: x\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["ELIZON_JUDGE_UNBOUND: no judge is bound for this case "
                                 "(looked at: --elizon-judge, the elizon_judge fixture, judge: in "
                                 "pkg/elizon.yaml (not set), ini option elizon_judge*"])
    assert ":None" not in result.stdout.str()


def test_invalid_judge_says_where_it_came_from(packages: Packages, pytester: pytest.Pytester
                                              ) -> None:
    packages.package(app=ECHO_APP, suite=JUDGED)
    manifest = packages.root / "pkg/elizon.yaml"
    manifest.write_text(manifest.read_text() + "judge: judges:grade\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["ELIZON_JUDGE_INVALID: 'judges:grade' (judge: in "
                                 "pkg/elizon.yaml:6): cannot import 'judges'*"])


def test_a_bad_judge_option_is_one_usage_error(packages: Packages, pytester: pytest.Pytester
                                               ) -> None:
    packages.package(app=ECHO_APP, suite=JUDGED + JUDGED.replace("cases:\n", "").replace(
        "tone-matter-summary", "another"))
    result = pytester.runpytest("--elizon-judge={url: 'ftp://x', model: m}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # checked at start-up, not per case
    result.stderr.fnmatch_lines(["ERROR: --elizon-judge={url: 'ftp://x', model: m}: not a judge "
                                 "endpoint {url, model, apiKeyEnv}: url: String should match "
                                 "pattern*"])
    assert "ELIZON_JUDGE_INVALID" not in result.stdout.str()


def test_judge_score_rides_on_the_report(packages: Packages, pytester: pytest.Pytester,
                                         chat: ChatServer) -> None:
    endpoint_package(packages, chat, "good")
    reprec = pytester.inline_run()
    [report] = [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"]
    data = report.elizon
    assert data["judge_score"] == 0.9
    assert data["judge_reasoning"] == "clear and polite"


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ('{"score": 1, "reasoning": "ok"}', (1.0, "ok")),
        ('Reasoning first. {"score": "0.25"} trailing', (0.25, "")),
        ("```\n{\"reasoning\": \"fine\", \"score\": 0.5}\n```", (0.5, "fine")),
    ],
)
def test_parse_grade_is_robust(reply: str, grade: tuple[float, str]) -> None:
    assert parse_grade(reply) == grade


@pytest.mark.parametrize("reply", ["", "score: 0.9", '{"score": 2}', '{"grade": 0.5}', "{" * 5000,
                                   '{"score": 1' + "0" * 400 + "}"])
def test_parse_grade_rejects_what_is_not_a_grade(reply: str) -> None:
    with pytest.raises(ValueError, match="score"):
        parse_grade(reply)
