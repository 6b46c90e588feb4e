"""Issue 11: ``elizon-eval import promptfoo`` — the mapping directly, the command in process,
and one pytester run of an imported package."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_elizon_eval import cli
from pytest_elizon_eval.promptfoo import ImportFailed, case_id, convert

from .conftest import Packages

CONFIG = """
description: Support bot
prompts: ["Answer: {{question}}"]
providers: [openai:gpt-4o-mini]
defaultTest:
  vars: {tone: calm}
  assert:
    - type: latency
      threshold: 5000
tests:
  - description: Refund question
    vars: {question: Where is my refund?}
    assert:
      - type: contains
        value: Refund
      - type: icontains
        value: refund
      - type: contains-any
        value: [days, weeks]
      - type: icontains-any
        value: [DAYS]
      - type: not-contains
        value: sorry
      - type: starts-with
        value: Your
      - type: regex
        value: "\\\\d+ days"
      - type: cost
        threshold: 0.01
  - description: Refund question
    vars: {question: Give me JSON}
    assert:
      - type: is-json
        value: {type: object, required: [status]}
      - type: contains-json
      - type: equals
        value: '{"status": "ok"}'
  - description: "Tone — rubric & python!"
    vars: {question: hello}
    threshold: 0.5
    assert:
      - type: llm-rubric
        value: Is polite
        threshold: 0.8
      - type: python
        value: file://asserts/polite.py:check_polite
      - type: similar
        value: Hello there
      - type: python
        value: output.startswith("x")
      - type: contains
        value: hi
        transform: output.lower()
  - file://more_tests.csv
  - file://cases/*.jsonl
"""

CSV = """question,__expected,__description
What are your hours?,contains: 9am,Opening hours
Say ok,ok,
"""


def _write_config(folder: Path) -> Path:
    (folder / "asserts").mkdir(parents=True)
    (folder / "cases").mkdir()
    (folder / "asserts" / "polite.py").write_text(
        "def check_polite(output, context):\n"
        "    return {'pass': 'please' in output, 'score': 1.0, 'reason': 'said please'}\n")
    (folder / "more_tests.csv").write_text(CSV)
    (folder / "cases" / "a.jsonl").write_text(
        '{"description": "From JSONL", "vars": {"question": "q1"}, '
        '"assert": [{"type": "icontains", "value": "q1"}]}\n')
    config = folder / "promptfooconfig.yaml"
    config.write_text(textwrap.dedent(CONFIG))
    return config


def test_every_mapped_type_default_test_files_and_what_is_not_converted(
    tmp_path: Path
) -> None:
    config = _write_config(tmp_path / "pf")
    conversion = convert(config, tmp_path / "out")
    suite = yaml.safe_load(conversion.suite)["cases"]
    assert [c["id"] for c in suite] == ["refund-question", "refund-question-2",
                                        "tone-rubric-python", "opening-hours", "case-5",
                                        "from-jsonl"]
    first, second, tone, hours, ok, jsonl = suite
    assert first["input"] == {"tone": "calm", "question": "Where is my refund?"}
    assert first["expect"] == {
        "containsExact": ["Refund"], "contains": ["refund"], "containsAny": ["days", "weeks",
                                                                            "DAYS"],
        "notContains": ["sorry"], "startsWith": "Your", "matches": ["\\d+ days"],
        "maxCostUsd": 0.01, "maxLatencyMs": 5000}
    assert second["expect"] == {"isJson": True, "jsonSchema": {"type": "object",
                                                               "required": ["status"]},
                                "equals": '{"status": "ok"}', "maxLatencyMs": 5000}
    assert tone["expect"] == {"judge": {"rubric": "Is polite", "threshold": 0.8},
                              "checks": ["promptfoo_checks:check_1"],
                              "containsExact": ["hi"], "maxLatencyMs": 5000}
    assert hours["expect"] == {"containsExact": ["9am"], "maxLatencyMs": 5000}
    assert ok["expect"] == {"equals": "ok", "maxLatencyMs": 5000}
    assert jsonl["expect"] == {"contains": ["q1"], "maxLatencyMs": 5000}
    assert conversion.unconverted == [
        "tone-rubric-python: similar 'Hello there': no Elizon equivalent",
        "tone-rubric-python: python 'output.startswith(\"x\")': inline Python code is not "
        "converted; move it into a file (file://checks.py:function) or write a check",
        "tone-rubric-python: contains: transform='output.lower()' not converted (the "
        "assertion itself is)",
        "tone-rubric-python: threshold 0.5 (a weighted score over the assertions): not "
        "converted; in Elizon every assertion must pass",
    ]
    # each one is also a comment on its case
    assert "    # promptfoo, not converted: similar 'Hello there': no Elizon equivalent" \
        in conversion.suite.splitlines()
    assert conversion.mapped["latency"] == 6
    assert conversion.mapped["python"] == 1
    assert "entry: app:answer" in conversion.manifest
    assert "openai:gpt-4o-mini" in conversion.manifest
    assert conversion.checks is not None
    assert "'../pf/asserts/polite.py'" in conversion.checks


def test_case_ids_are_valid_and_unique() -> None:
    taken: set[str] = set()
    assert [case_id(d, i, taken) for i, d in enumerate(
        ["Hello, World!", "hello world", None, "   ", "ÄÖ only", "x" * 80])] == [
        "hello-world", "hello-world-2", "case-3", "case-4", "only", "x" * 60]


@pytest.mark.parametrize(("config", "files", "message"), [
    ("[1, 2]", {}, "not a promptfoo config"),
    ("tests: []", {}, "no tests to import"),
    ("tests: [file://../outside.csv]", {}, "is outside the config's folder"),
    ("tests: [file://t.txt]", {"t.txt": "x"}, "unsupported type .txt"),
    ("tests: [file://t.csv]", {"t.csv": 'q\n"unclosed\n'}, "t.csv:2: not CSV"),
    ("tests: [file://t.jsonl]", {"t.jsonl": "{bad\n"}, "t.jsonl:1: not JSON"),
    ("tests: [3]", {}, "tests[0]: a test must be a mapping"),
    ("tests: [{vars: [1]}]", {}, "tests[0].vars: expected a mapping"),
    ("tests: nope", {}, "is neither a test nor a file:// reference"),
    ("a: &a [*a]", {}, "config"),
    ("tests: [{assert: x}]", {}, "tests[0].assert: expected a list"),
])
def test_bad_configs_are_clear_errors(tmp_path: Path, config: str, files: dict[str, str],
                                      message: str) -> None:
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ImportFailed, match=message.replace(".", "\\.").replace("[", "\\[")):
        convert(tmp_path / "promptfooconfig.yaml", tmp_path / "out")


def test_the_command_writes_a_package_that_runs_under_pytest(
    packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _write_config(pytester.path / "pf")
    out = pytester.path / "pkg"
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"imported 6 cases from {config} into {out}" in printed
    assert "  tone-rubric-python: similar 'Hello there': no Elizon equivalent" in printed
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out)]) == 2
    assert "elizon.yaml exists; use --force to overwrite" in capsys.readouterr().err
    packages.write("pkg/app.py", """
        def answer(question, tone):
            if question == "Give me JSON":
                return '{"status": "ok"}'
            return f"Your refund for {question} takes 3 days, please. 9am. ok Refund q1 hi"
    """)
    packages.write("pkg/conftest.py", """
        import pytest

        @pytest.fixture(scope="session")
        def elizon_judge():
            return lambda rubric, input, output: 0.9
    """)
    manifest = out / "elizon.yaml"
    manifest.write_text("entry: app:answer\n" + manifest.read_text())
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA", "pkg")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines_random([
        "PASSED pkg/suite.yaml::opening-hours", "PASSED pkg/suite.yaml::refund-question-2",
        "PASSED pkg/suite.yaml::tone-rubric-python", "PASSED pkg/suite.yaml::from-jsonl",
        "FAILED pkg/suite.yaml::case-5 - ✗ equals*",  # the CSV's plain value: equals 'ok'
        # every mapped assertion is checked: this app reports no usage for maxCostUsd
        "FAILED pkg/suite.yaml::refund-question - ✗ maxCostUsd: cost unknown*"])
