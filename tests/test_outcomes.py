"""Outcomes, the Elizon assertions and time limits (docs/contract.md): assertions, failure
messages, errors, timeouts, gates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from . import github_runner
from .conftest import ECHO_APP, PYTEST_WITH_CTRL_C, Packages, interrupt_when


def test_contains_and_not_contains_ignore_case(packages: Packages, pytester: pytest.Pytester
                                                ) -> None:
    packages.package(app=ECHO_APP, suite="""
        cases:
          - id: contains-any-case
            input: Straße is IMMEDIATE
            expect:
              contains: [immediate, STRASSE]
          - id: not-contains-any-case
            input: all routine here
            expect:
              notContains: [Immediate]
          - id: not-contains-catches-upper-case
            input: this is URGENT
            expect:
              notContains: [urgent]
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "  ✗ notContains",
        "      expected: none of: 'urgent'",
        "      found:    'urgent' at character 8: this is [[]URGENT[]]",
    ])


def test_equals_compares_the_trimmed_output_exactly(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=ECHO_APP, suite="""
        cases:
          - id: trimmed
            input: "  routine \\n"
            expect: {equals: routine}
          - id: case-matters
            input: Routine
            expect: {equals: routine}
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["      expected: 'routine'",
                                 "      found:    [[]R[]]outine (trimmed output, 7 chars; "
                                 "first difference at character 0)"])


SLOW_APP = """
import time
def answer(text):
    time.sleep(float(text))
    return "done"
"""


def test_max_latency_is_a_failure_not_a_timeout(packages: Packages, pytester: pytest.Pytester
                                                ) -> None:
    packages.package(app=SLOW_APP, suite="""
        cases:
          - id: too-slow
            input: "0.2"
            expect: {maxLatencyMs: 50}
          - id: fast-enough
            input: "0"
            expect: {maxLatencyMs: 5000}
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    assert "timeout" not in result.parseoutcomes()
    result.stdout.fnmatch_lines(["  ✗ maxLatencyMs", "      expected: at most 50 ms",
                                 "      found:    took *.* ms"])
    [took] = [line for line in result.outlines if line.startswith("      found:    took ")]
    assert float(took.split()[2]) >= 200  # at least the entry's own 0.2 s sleep


def test_a_case_without_expect_checks_the_run_end_to_end(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    app = "def answer(text):\n    if text == 'boom':\n        raise RuntimeError('x')\n"
    packages.package(app=app + "    return 'ok'\n", suite="""
        cases:
          - id: runs
            input: fine
          - id: raises
            input: boom
    """)
    pytester.runpytest().assert_outcomes(passed=1, failed=1)


def test_failure_message_lists_every_assertion_latency_and_truncated_output(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app="def answer(text):\n    return 'routine ' + 'x' * 5000\n", suite="""
        cases:
          - id: mixed
            input: q
            expect:
              contains: [routine, urgent]
              notContains: [immediate]
              maxLatencyMs: 60000
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "case 'mixed' failed (must-pass suite pkg/eval/suite.yaml:2)",
        "input: 'q'",
        "  ✗ contains",
        "      expected: every one of: 'routine', 'urgent'",
        "      found:    missing: 'urgent'",
        "  ✓ notContains: none of: 'immediate' — none found",
        "  ✓ maxLatencyMs: at most 60000 ms — took *ms",
        "latency: * ms",
        "output (5,008 chars, first 2,000 shown):",
        "  | routine xxx*",
    ], consecutive=True)


def test_output_is_shown_with_control_characters_escaped(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app="def answer(text):\n    return 'red \\x1b[31m bell \\x07 nul \\x00'\n",
                     suite="cases:\n  - id: esc\n    input: x\n    expect: {contains: [blue]}\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  | red \\x1b[[]31m bell \\x07 nul \\x00"])
    assert "\x1b[31m" not in result.stdout.str()


MISBEHAVING_APP = '''
import sys

def raises(text):
    raise ValueError("the model said no")

def exits(text):
    sys.exit(3)

def interrupts(text):
    raise KeyboardInterrupt

def returns_none(text):
    return None

def returns_bytes(text):
    return b"raw"

def returns_object(text):
    return object()

def streams_numbers(text):
    yield "a"
    yield 2

def prints_garbage(text):
    print("\\x00\\x1b[2J::error::injected \\udcff")
    sys.stderr.write("\\xff\\xfe garbage\\n")
    return "fine"
'''


MISBEHAVIOURS = [
    ("raises", "*the entry point raised ValueError: the model said no"),
    ("exits", "*the entry point raised SystemExit: the entry point called sys.exit(3)"),
    ("interrupts", "*the entry point raised KeyboardInterrupt: the entry point raised "
                   "KeyboardInterrupt itself"),
    ("returns_none", "*OutputError: the entry point returned None; return a string*"),
    ("returns_bytes", "*OutputError: the entry point returned bytes; decode them*"),
    ("returns_object", "*OutputError: the entry point returned a object; return a string*"),
    ("streams_numbers", "*OutputError: the entry point streamed a int as chunk 1*"),
]


def test_a_misbehaving_entry_point_fails_its_case_and_the_session_goes_on(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    """One package per misbehaviour (attribute) and its failure message, all in one run,
    then a package whose case comes after all of theirs."""
    for attribute, _ in MISBEHAVIOURS:
        packages.package(f"misbehaves-{attribute}", app=MISBEHAVING_APP,
                         entry=f"app:{attribute}", suite="""
            cases:
              - id: misbehaves
                input: x
                expect: {contains: [anything]}
        """)
    packages.write("other/elizon.yaml", "entry: app:ok\nevaluation:\n  suite: s.yaml\n")
    packages.write("other/app.py", "def ok(text):\n    return 'later case ran'\n")
    packages.write("other/s.yaml", "cases:\n  - id: later\n    input: x\n")
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, failed=len(MISBEHAVIOURS))
    ids = [f"misbehaves-{attribute}/eval/suite.yaml::misbehaves FAILED*"
           for attribute, _ in sorted(MISBEHAVIOURS)]
    result.stdout.fnmatch_lines([*ids, "other/s.yaml::later PASSED*"])  # in this order
    # each case's failure section: from its first line to the next case's
    lines = result.outlines
    starts = [i for i, line in enumerate(lines) if line.startswith("case 'misbehaves' failed (")]
    sections = {lines[start].split(" suite ", 1)[1].split("/", 1)[0]:
                pytest.LineMatcher(lines[start:end])
                for start, end in zip(starts, [*starts[1:], len(lines)], strict=True)}
    assert sorted(sections) == [f"misbehaves-{attribute}"
                                for attribute, _ in sorted(MISBEHAVIOURS)]
    for attribute, message in MISBEHAVIOURS:
        sections[f"misbehaves-{attribute}"].fnmatch_lines([
            message, "  · contains: *not checked: there is no output"])
    assert "INTERNALERROR" not in result.stdout.str()


def test_printing_garbage_breaks_nothing(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=MISBEHAVING_APP, entry="app:prints_garbage",
                     suite="cases:\n  - id: noisy\n    input: x\n    expect: {equals: fine}\n")
    result = pytester.runpytest_subprocess("-rA", "--elizon-annotations=on",
                                           "--elizon-junit=j.xml", "--elizon-results=r.json")
    result.assert_outcomes(passed=1)
    output = result.stdout.str()
    assert "::error::injected" in output  # pytest replays what the entry printed (-rA) ...
    # ... where it cannot run a workflow command: only elizon's two fences are commands
    assert [c.name for c in github_runner.parse(output)] == ["stop-commands", "stop-commands"]
    assert "INTERNALERROR" not in output + result.stderr.str()
    [case] = json.loads((pytester.path / "r.json").read_text())["suites"][0]["cases"]
    assert (case["outcome"], case["output"]) == ("passed", "fine")
    [junit_case] = ET.parse(pytester.path / "j.xml").getroot().iter("testcase")
    assert junit_case.findtext("system-out") == "fine"  # what it printed is not the output


HANG_APP = """
import asyncio, time

def hang(text):
    time.sleep(3600)

async def async_hang(text):
    await asyncio.sleep(3600)

async def blocks_the_loop(text):
    time.sleep(0.4)

def quick(text):
    return "quick"

async def async_quick(text):
    return "async quick"
"""


def test_timeouts_are_their_own_outcome_and_later_cases_run(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.write("pkg/elizon.yaml", """
        evaluation:
          suite: ./suite.yaml
    """)
    packages.write("pkg/suite.yaml", """
        cases:
          - id: sync-hang
            input: x
          - id: async-hang
            input: x
          - id: blocked-loop
            input: x
          - id: after-sync
            input: x
          - id: after-async
            input: x
    """)
    packages.write("pkg/app.py", HANG_APP)
    packages.write("conftest.py", """
        import pytest
        from pkg import app

        ENTRIES = {"sync-hang": app.hang, "async-hang": app.async_hang,
                   "blocked-loop": app.blocks_the_loop, "after-sync": app.quick,
                   "after-async": app.async_quick}

        @pytest.fixture
        def elizon_entry(request):
            return ENTRIES[request.node.name]
    """)
    packages.write("pkg/__init__.py", "")
    # abandoned threads must not hold the session's exit (60 s is a safety bound only)
    result = pytester.runpytest_subprocess("--elizon-timeout=0.2", "-v", timeout=60)
    outcomes = result.parseoutcomes()
    assert outcomes["timeout"] == 3
    assert outcomes["passed"] == 2
    assert "failed" not in outcomes
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "pkg/suite.yaml::sync-hang TIMEOUT*",
        "pkg/suite.yaml::async-hang TIMEOUT*",
        "pkg/suite.yaml::blocked-loop TIMEOUT*",
        "pkg/suite.yaml::after-sync PASSED*",
        "pkg/suite.yaml::after-async PASSED*",
    ])
    result.stdout.fnmatch_lines([
        "timed out:",
        "  pkg/suite.yaml::sync-hang — no answer within 0.2 s (--elizon-timeout=0.2)",
    ])


def test_timeout_letter_in_quiet_mode(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=HANG_APP, entry="app:hang", suite="cases:\n  - id: a\n    input: x\n")
    result = pytester.runpytest("--elizon-timeout=0.05")  # its one case never answers
    result.stdout.fnmatch_lines(["pkg/eval/suite.yaml T*"])
    assert result.parseoutcomes() == {"timeout": 1}


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--elizon-timeout=120"], "", "*--elizon-timeout=120: the time limit must be more than "
                                       "0 and at most 90 seconds*"),
        (["--elizon-timeout=0"], "", "*--elizon-timeout=0: the time limit must be more than*"),
        (["--elizon-timeout=soon"], "", "*--elizon-timeout=soon: not a number of seconds"),
        ([], "elizon_timeout = 91", "*ini option elizon_timeout in *tox.ini ('91'): the time "
                                    "limit must be more than 0 and at most 90 seconds*"),
    ],
)
def test_the_time_limit_can_only_be_lowered(
    packages: Packages, pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    packages.package(app=ECHO_APP, suite="cases:\n  - id: a\n    input: x\n")
    if ini:
        pytester.makefile(".ini", tox=f"[pytest]\n{ini}\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message.lstrip('*')}"])


ADVISORY_SUITE = """
cases:
  - id: passes
    input: fine
    expect: {contains: [fine]}
  - id: fails
    input: fine
    expect: {contains: [missing]}
"""


def test_advisory_failures_are_reported_but_do_not_fail_the_run(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=ECHO_APP, suite=ADVISORY_SUITE, gate="advisory")
    result = pytester.runpytest("-v")
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"passed": 1, "advisory_failed": 1}
    result.stdout.fnmatch_lines([
        "pkg/eval/suite.yaml::fails ADVISORY FAILED*",
        "pkg/eval/suite.yaml [[]pkg, advisory[]]: 1 passed, 1 failed, 0 timeout, pass rate "
        "0.500 [[]0.095, 0.905[]] — ADVISORY: not passed (does not fail the run)",
        "advisory, not passed:",
        "  pkg/eval/suite.yaml::fails — ✗ contains: missing: 'missing'",
    ])


def test_advisory_failures_show_their_message_with_ra(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=ECHO_APP, suite=ADVISORY_SUITE, gate="advisory")
    result = pytester.runpytest("-rA")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "_* pkg/eval/suite.yaml::fails _*",
        "case 'fails' failed (advisory suite pkg/eval/suite.yaml:5)",
        "  ✗ contains",
    ])
    assert "_ pkg/eval/suite.yaml::passes _" not in result.stdout.str()
    reports = pytester.inline_run().getreports("pytest_runtest_logreport")
    [call] = [r for r in reports if r.when == "call" and r.nodeid.endswith("::fails")]
    assert call.outcome == "passed"  # what CI tools show a passed test's details from
    [(title, text)] = [s for s in call.sections if s[0].startswith("elizon")]
    assert title == "elizon advisory failed"
    assert text.startswith("case 'fails' failed (advisory suite pkg/eval/suite.yaml:5)")


def test_a_setup_error_formats_no_traceback(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A case whose entry point is not bound costs what a pass costs: pytest is never asked
    # to format a traceback of plugin internals that nobody reads.
    from _pytest._code import code

    # pytest 8 calls it FormattedExcinfo, pytest 9 ExceptionInfoFormatter
    formatter = getattr(code, "ExceptionInfoFormatter", None) or code.FormattedExcinfo
    packages.package(app=ECHO_APP, entry=None, suite="cases:\n" + "".join(
        f"  - id: c{i}\n    input: x\n" for i in range(50)))
    calls = []
    original = formatter.repr_traceback

    def counting(self: object, excinfo: object) -> object:
        calls.append(excinfo)
        return original(self, excinfo)  # type: ignore[arg-type]

    monkeypatch.setattr(formatter, "repr_traceback", counting)
    result = pytester.runpytest()
    result.assert_outcomes(errors=50)
    result.stdout.fnmatch_lines(["ELIZON_ENTRY_UNBOUND: no entry point is bound for this case*"])
    assert calls == []
    # the spy does see a traceback when pytest formats one
    pytester.makepyfile(test_control="def test_fails():\n    assert 1 == 2\n")
    pytester.runpytest("test_control.py").assert_outcomes(failed=1)
    assert len(calls) == 1


def test_advisory_timeouts_do_not_fail_the_run(packages: Packages, pytester: pytest.Pytester
                                               ) -> None:
    packages.package(app=HANG_APP, entry="app:hang", gate="advisory",
                     suite="cases:\n  - id: slow\n    input: x\n")
    result = pytester.runpytest("--elizon-timeout=0.05", "-v")  # its one case never answers
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"advisory_timeout": 1}
    result.stdout.fnmatch_lines(["pkg/eval/suite.yaml::slow ADVISORY TIMEOUT*"])


def test_strict_makes_advisory_count(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite=ADVISORY_SUITE, gate="advisory")
    result = pytester.runpytest("--elizon-strict")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 1, "failed": 1}
    result.stdout.fnmatch_lines(["*advisory, counted as must-pass by --elizon-strict*"])
    pytester.makeini("[pytest]\nelizon_strict = true\n")
    assert pytester.runpytest().ret == pytest.ExitCode.TESTS_FAILED


def test_must_pass_failures_fail_the_run(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite=ADVISORY_SUITE, gate="must-pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*: 1 passed, 1 failed, 0 timeout, pass rate * — FAIL"])


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_real_ctrl_c_stops_the_session_promptly(packages: Packages, pytester: pytest.Pytester
                                                  ) -> None:
    log = pytester.path / "calls.log"
    packages.package(app=f"""
import pathlib, time
def answer(text):
    with pathlib.Path({str(log)!r}).open("a") as fh:
        fh.write(text + "\\n")
    time.sleep(3600)
""", suite="cases:\n  - id: hangs\n    input: first\n  - id: never\n    input: second\n")
    with subprocess.Popen(
            [sys.executable, "-c", PYTEST_WITH_CTRL_C, "-p", "no:cacheprovider"],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
        # (the line written, not just the file opened: Ctrl-C between the two leaves it empty)
        output = interrupt_when(process, lambda: log.exists() and log.read_text() == "first\n")
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    # stopped while the first case was waiting, well inside its 90 s limit: the second case
    # never started, and nothing was reported as a timeout
    assert log.read_text().splitlines() == ["first"]
    assert "timeout" not in output
