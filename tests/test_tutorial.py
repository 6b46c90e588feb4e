"""docs/tutorial.md, run as a reader runs it: its files written as it says (the README's
helpdesk package first), each command it shows run in order, and each output it shows
found in the real one, line for line (timings aside). A change to the plugin's output, or
to a file the tutorial names, fails here until the tutorial says it again."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: What changes from run to run in an output: durations.
_TIMINGS = ((re.compile(r"in \d+\.\d+s"), "in *s"), (re.compile(r"took \d+\.\d+ ms"), "took * ms"),
            (re.compile(r"latency: \d+\.\d+ ms"), "latency: * ms"))


def step(number: int) -> str:
    """The tutorial's section ``## N. …``."""
    start = TUTORIAL.index(f"\n## {number}. ")
    return TUTORIAL[start:TUTORIAL.index("\n## ", start + 1)]


def files(text: str) -> dict[str, str]:
    """The files a text tells the reader to write: each code block that starts with
    ``# helpdesk/PATH``, except the snippets that call a hosted model (as the tutorial's
    introduction says)."""
    found = {}
    for _, body in _BLOCK.findall(text):
        named = re.match(r"# (helpdesk/\S+)\n", body)
        if named and not re.search(r"\b(openai|httpx)\b", body):
            found[named.group(1)] = body
    return found


def shown(text: str) -> list[tuple[list[str], list[str]]]:
    """Each ``$ pytest …`` block: the command's arguments and the lines it shows."""
    return [(shlex.split(body.splitlines()[0][2:])[1:], body.splitlines()[1:])
            for _, body in _BLOCK.findall(text) if body.startswith("$ pytest ")]


def commands(text: str) -> list[list[str]]:
    """The ``pytest …`` lines of the text's bash blocks (a ``\\`` goes on to the next line;
    a ``#`` comment ends it)."""
    found = []
    for language, body in _BLOCK.findall(text):
        if language == "bash":
            for line in body.replace("\\\n", " ").splitlines():
                if line.startswith("pytest "):
                    found.append(shlex.split(line, comments=True)[1:])
    return found


def pattern(line: str) -> str:
    """An output line as an fnmatch pattern: itself, durations and the width of pytest's
    last line aside."""
    said = line.replace("[", "\0").replace("]", "[]]").replace("\0", "[[]")
    said = said.replace("*", "[*]").replace("?", "[?]")
    for found, wildcard in _TIMINGS:
        said = found.sub(wildcard, said)
    return re.sub(r"^=+ (.* in \*s) =+$", r"*= \1 =*", said)


def write(pytester: pytest.Pytester, written: dict[str, str]) -> None:
    for name, body in written.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")


def run_shown(pytester: pytest.Pytester, text: str, status: pytest.ExitCode) -> None:
    """Run each output block's command and find its lines, in order and one after the
    other, in what pytest printed."""
    blocks = shown(text)
    assert blocks, "the step shows no output"
    for args, lines in blocks:
        result = pytester.runpytest(*args)
        assert result.ret == status, result.stdout.str()
        result.stdout.fnmatch_lines([pattern(line) for line in lines], consecutive=True)


def test_steps_one_and_two_a_first_run_and_a_failure(pytester: pytest.Pytester) -> None:
    package = files(README)
    assert set(package) == {"helpdesk/elizon.yaml", "helpdesk/eval/suite.yaml",
                            "helpdesk/app.py"}
    write(pytester, package)
    run_shown(pytester, step(1), pytest.ExitCode.OK)
    ran = {" ".join(args): pytester.runpytest(*args) for args in commands(step(1))}
    assert list(ran) == ["helpdesk --collect-only -q",
                         "helpdesk/eval/suite.yaml::double-charge-goes-to-billing",
                         "helpdesk -k billing", "helpdesk --lf"]
    assert all(result.ret == pytest.ExitCode.OK for result in ran.values())
    ran["helpdesk --collect-only -q"].stdout.fnmatch_lines([
        "helpdesk/eval/suite.yaml::double-charge-goes-to-billing",
        "helpdesk/eval/suite.yaml::login-trouble-goes-to-support"])
    assert ran["helpdesk -k billing"].parseoutcomes() == {"passed": 1, "deselected": 1}
    # the step breaks the entry point; its failure is shown, and the run fails
    write(pytester, files(step(2)))
    run_shown(pytester, step(2), pytest.ExitCode.TESTS_FAILED)


def test_steps_five_to_eight_a_judge_two_gates_and_reports(pytester: pytest.Pytester) -> None:
    write(pytester, files(README))  # step 2's billing answer put back, as it asks
    written = {**files(step(5)), **files(step(7))}
    assert set(written) == {"helpdesk/eval/extended.yaml", "helpdesk/conftest.py",
                            "helpdesk/elizon.yaml"}
    write(pytester, written)
    run_shown(pytester, step(7), pytest.ExitCode.OK)
    # "`pytest helpdesk -m tone` runs the judged case alone"
    said = re.search(r"`pytest (helpdesk -m tone)` runs the judged case alone", step(7))
    assert said is not None
    tagged = pytester.runpytest(*said.group(1).split())
    assert tagged.parseoutcomes() == {"passed": 1, "deselected": 3}
    (reports,) = commands(step(8))
    assert pytester.runpytest(*reports).ret == pytest.ExitCode.OK
    assert sorted(p.name for p in (pytester.path / "reports").iterdir()) == [
        "elizon.html", "elizon.json", "elizon.md", "elizon.xml"]
