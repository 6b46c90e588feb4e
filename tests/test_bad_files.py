"""Every malformed file gets its code and ``file:line``; nothing runs half a suite.

The catalogues of bad suites and manifests are checked on the messages the loaders give
(what pytest prints, line for line); one of each also runs through pytest, as a user
would, for the exit status and the absence of any traceback. tests/test_loading_direct.py
checks the reading and validation steps in more detail.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load import loading
from pytest_elizon_eval.load import packages as package_files

from .conftest import ECHO_APP, Packages

GOOD_MANIFEST = "entry: app:answer\nevaluation:\n  suite: ./eval/suite.yaml\n"


def run_bad(packages: Packages, pytester: pytest.Pytester, suite: str | bytes,
            manifest: str = GOOD_MANIFEST) -> pytest.RunResult:
    packages.write("pkg/elizon.yaml", manifest)
    packages.write("pkg/app.py", ECHO_APP)
    path = pytester.path / "pkg/eval/suite.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(suite, bytes):
        path.write_bytes(suite)
    else:
        packages.write("pkg/eval/suite.yaml", suite)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stdout.str()
    result.assert_outcomes(errors=1)
    return result


SUITE_CASES = {
    "not-yaml": ("cases: [1, 2\n", ["pkg/eval/suite.yaml:2: not valid YAML: *"]),
    "not-a-mapping": ("- id: a\n  input: x\n",
                      ["pkg/eval/suite.yaml:1: the file must be a mapping with a 'cases' list, "
                       "found a list"]),
    "no-cases": ("name: x\n", ["pkg/eval/suite.yaml:1: missing required key 'cases'",
                               "pkg/eval/suite.yaml:1: unknown key 'name'; allowed here: cases"]),
    "empty-cases": ("cases: []\n", ["pkg/eval/suite.yaml:1: cases: must not be empty"]),
    "unknown-case-key": ("cases:\n  - id: a\n    input: x\n    expected: {}\n",
                         ["pkg/eval/suite.yaml:4: cases[[]0[]]: unknown key 'expected' "
                          "(did you mean 'expect'?)*"]),
    "missing-id-and-input": ("cases:\n  - description: no id\n",
                             ["pkg/eval/suite.yaml:2: cases[[]0[]]: a case has exactly one of "
                              "'input' (one call) or 'turns' (a conversation)",
                              "pkg/eval/suite.yaml:2: cases[[]0[]]: missing required key 'id'"]),
    "bad-id": ("cases:\n  - id: Not_Hyphenated\n    input: x\n",
               ["pkg/eval/suite.yaml:2: cases[[]0[]].id: id 'Not_Hyphenated' must be lowercase*"]),
    "duplicate-id": ("cases:\n  - id: a\n    input: x\n  - id: a\n    input: y\n",
                     ["pkg/eval/suite.yaml:4: cases[[]1[]].id: duplicate id 'a' "
                      "(first at line 2)"]),
    "unknown-assertion": ("cases:\n  - id: a\n    input: x\n    expect:\n"
                          "      notcontains: [x]\n",
                          ["pkg/eval/suite.yaml:5: cases[[]0[]].expect: unknown key "
                           "'notcontains' (did you mean 'notContains'?)*"]),
    "wrong-type": ("cases:\n  - id: a\n    input: x\n    expect:\n      contains: 3\n",
                   ["pkg/eval/suite.yaml:5: cases[[]0[]].expect.contains: expected a list, "
                    "found the number 3"]),
    "negative-latency": ("cases:\n  - id: a\n    input: x\n    expect:\n"
                         "      maxLatencyMs: -5\n",
                         ["pkg/eval/suite.yaml:5: *maxLatencyMs: must be at least 0, found -5"]),
    "fractional-latency": ("cases:\n  - id: a\n    input: x\n    expect:\n"
                           "      maxLatencyMs: 1.5\n",
                           ["pkg/eval/suite.yaml:5: *maxLatencyMs: expected a whole number, "
                            "found the number 1.5"]),
    "null-input": ("cases:\n  - id: a\n    input:\n",
                   ["pkg/eval/suite.yaml:3: cases[[]0[]].input: input is null; give a string or "
                    "a mapping of named inputs (quote 'null' if you mean the text)"]),
    "not-a-number": ("cases:\n  - id: a\n    input: x\n    minPassRate: .nan\n",
                     ["pkg/eval/suite.yaml:4: cases[[]0[]].minPassRate: must be a finite "
                      "number, found not-a-number (.nan)"]),
    "input-list": ("cases:\n  - id: a\n    input: [1, 2]\n",
                   ["pkg/eval/suite.yaml:3: cases[[]0[]].input: input must be a string or a "
                    "mapping of named inputs, found a list"]),
    "yaml11-no": ("cases:\n  - id: no\n    input: x\n",
                  ["pkg/eval/suite.yaml:2: unquoted 'no' is read by YAML 1.1 as boolean false;*"]),
    "yaml11-octal": ("cases:\n  - id: 0123\n    input: x\n",
                     ["pkg/eval/suite.yaml:2: unquoted '0123' is read by YAML 1.1 as the "
                      "number 83;*"]),
    "duplicate-key": ("cases:\n  - id: a\n    input: x\n    input: y\n",
                      ["pkg/eval/suite.yaml:4: duplicate key 'input' (first at line 3)"]),
    "multi-document": ("cases:\n  - id: a\n    input: x\n---\ncases: []\n",
                       ["pkg/eval/suite.yaml:5: file holds more than one YAML document*"]),
    "empty-file": ("", ["pkg/eval/suite.yaml: file is empty; expected a YAML mapping"]),
    "recursive-alias": ("cases: &c\n  - id: a\n    input: *c\n",
                        ["pkg/eval/suite.yaml:*: recursive YAML alias*"]),
    "python-tag": ("cases:\n  - id: a\n    input: !!python/object/apply:os.system [echo]\n",
                   ["pkg/eval/suite.yaml:3: YAML tag 'tag:yaml.org,2002:python/object/apply:"
                    "os.system' is not allowed"]),
}


def error_lines(tmp_path: Path, suite: str | bytes, manifest: str = GOOD_MANIFEST) -> list[str]:
    """The ``CODE: …`` lines pytest would print for this package (manifest first)."""
    folder = tmp_path / "pkg"
    (folder / "eval").mkdir(parents=True)
    (folder / "elizon.yaml").write_text(manifest, encoding="utf-8")
    path = folder / "eval/suite.yaml"
    if isinstance(suite, bytes):
        path.write_bytes(suite)
    else:
        path.write_text(suite, encoding="utf-8")
    try:
        package_files.load_manifest(folder / "elizon.yaml", "pkg/elizon.yaml")
        package_files.load_suite(path, "pkg/eval/suite.yaml")
    except ElizonError as exc:
        return exc.lines
    raise AssertionError("no error")


def assert_consecutive(lines: list[str], patterns: list[str]) -> None:
    starts = [i for i, line in enumerate(lines) if fnmatch.fnmatch(line, patterns[0])]
    assert any(len(lines) >= i + len(patterns)
               and all(fnmatch.fnmatch(lines[i + k], p) for k, p in enumerate(patterns))
               for i in starts), (patterns, lines)


@pytest.mark.parametrize("name", list(SUITE_CASES))
def test_invalid_suite_reports_every_problem_with_its_line(tmp_path: Path, name: str) -> None:
    suite, expected = SUITE_CASES[name]
    assert_consecutive(error_lines(tmp_path, suite),
                       [f"EVALUATION_SUITE_INVALID: {line}" for line in expected])


def test_a_bad_suite_stops_the_session_with_its_lines_only(
        packages: Packages, pytester: pytest.Pytester) -> None:
    result = run_bad(packages, pytester, SUITE_CASES["unknown-assertion"][0])
    result.stdout.fnmatch_lines(["EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:5: "
                                 "cases[[]0[]].expect: unknown key 'notcontains'*"])


def test_many_problems_are_all_listed_in_line_order(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    suite = """
cases:
  - id: Bad
    input: x
  - id: fine
    input: y
    expect:
      notcontains: [a]
      maxLatencyMs: -1
  - id: fine
"""
    result = run_bad(packages, pytester, suite)
    result.stdout.fnmatch_lines([
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:2: cases[[]0[]].id: id 'Bad'*",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:7: cases[[]1[]].expect: unknown key "
        "'notcontains'*",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:8: *maxLatencyMs: must be at least 0*",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:9: cases[[]2[]].id: duplicate id 'fine'*",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:9: cases[[]2[]]: a case has exactly one "
        "of 'input' (one call) or 'turns' (a conversation)",
    ], consecutive=True)


def test_an_alias_bomb_is_refused_quickly(packages: Packages, pytester: pytest.Pytester) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i-1}'] * 10)}]" for i in range(1, 10)]
    bomb = "\n".join(levels) + "\ncases:\n  - id: a\n    input: x\n    expect:\n" \
        "      contains: *a9\n"
    result = run_bad(packages, pytester, bomb)
    result.stdout.fnmatch_lines(["EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:*: YAML aliases "
                                 "expand to more than 100,000 nodes (an alias bomb?)"])


def test_aliases_within_reason_are_allowed(packages: Packages, pytester: pytest.Pytester
                                           ) -> None:
    suite = """
cases:
  - id: a
    input: alpha
    expect: &shared
      contains: [alpha]
  - id: b
    input: alpha again
    expect: *shared
"""
    packages.package(suite=suite, app=ECHO_APP)
    pytester.runpytest().assert_outcomes(passed=2)


def test_non_utf8_file(packages: Packages, pytester: pytest.Pytester) -> None:
    result = run_bad(packages, pytester, b"cases:\n  - id: a\n    input: caf\xe9\n")
    result.stdout.fnmatch_lines(["EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:3: not UTF-8 "
                                 "text (byte 0xe9 at offset 31); save the file as UTF-8"])


def test_huge_file_is_refused_before_parsing(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loading, "MAX_FILE_BYTES", 1000)
    result = run_bad(packages, pytester, "cases:\n" + "  - id: a\n    input: x\n" * 100)
    result.stdout.fnmatch_lines(["EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml: file is 2,307 "
                                 "bytes; the limit is 1,000"])


def test_deep_nesting_is_refused(packages: Packages, pytester: pytest.Pytester) -> None:
    deep = "cases:\n  - id: a\n    input: {x: " + "[" * 5000 + "]" * 5000 + "}\n"
    result = run_bad(packages, pytester, deep)
    result.stdout.fnmatch_lines(["EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:3: YAML nesting "
                                 "is deeper than 100 levels"])


def test_missing_suite(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.write("pkg/elizon.yaml", """
        entry: app:answer
        evaluation:
          suites:
            - suite: ./eval/here.yaml
            - suite: ./eval/gone.yaml
    """)
    packages.write("pkg/eval/here.yaml", "cases:\n  - id: a\n    input: x\n")
    packages.write("pkg/app.py", ECHO_APP)
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["EVALUATION_SUITE_MISSING: pkg/eval/gone.yaml "
                                 "(named in pkg/elizon.yaml:5)"])
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)  # and the suite that exists does not run half-way


MANIFEST_CASES = {
    "bad-gate": ("evaluation:\n  suite: ./eval/suite.yaml\n  gate: blocking\n",
                 ["pkg/elizon.yaml:3: evaluation.gate: expected 'advisory' or 'must-pass', "
                  "found the text 'blocking'"]),
    "baseline-not-numbers": ("evaluation:\n  suite: ./eval/suite.yaml\n  authorBaseline:\n"
                             "    pass_rate: high\n",
                             ["pkg/elizon.yaml:4: evaluation.authorBaseline.pass_rate: expected "
                              "a number, found the text 'high'"]),
    "unknown-key": ("evaluation:\n  suite: ./eval/suite.yaml\nentrypoint: app:answer\n",
                    ["pkg/elizon.yaml:3: unknown key 'entrypoint' (did you mean 'entry'?)*"]),
    "suite-and-suites": ("evaluation:\n  suite: ./a.yaml\n  suites:\n    - suite: ./b.yaml\n",
                         ["pkg/elizon.yaml:2: evaluation.suite: with 'suites:' each set "
                          "carries its own*"]),
    "no-suite": ("evaluation:\n  gate: advisory\n",
                 ["pkg/elizon.yaml:1: evaluation: needs 'suite: <path>' or a 'suites:' list"]),
    "listed-twice": ("evaluation:\n  suites:\n    - suite: ./eval/suite.yaml\n"
                     "    - suite: eval/suite.yaml\n",
                     ["pkg/elizon.yaml:4: suite 'eval/suite.yaml' is listed twice "
                      "(first at line 3)"]),
    "not-yaml": ("evaluation: [\n", ["pkg/elizon.yaml:2: not valid YAML*"]),
    "infinite-price": ("prices:\n  m: {input: .inf, output: 0}\n"
                       "evaluation:\n  suite: ./eval/suite.yaml\n",
                       ["pkg/elizon.yaml:2: prices.m.input: must be a finite number, found "
                        "infinity (.inf)"]),
    "unknown-probe-category": ("evaluation:\n  suites:\n    - probes:\n        - jailbreak\n"
                               "        - mind-control\n",
                               ["pkg/elizon.yaml:5: evaluation.suites[[]0[]].probes: item 1: "
                                "unknown category 'mind-control'*"]),
    "suite-outside-package": ("evaluation:\n  suite: ../elsewhere/suite.yaml\n",
                              ["pkg/elizon.yaml:2: suite '../elsewhere/suite.yaml' is outside the "
                               "package folder; a package's suites ship inside it"]),
}


@pytest.mark.parametrize("name", list(MANIFEST_CASES))
def test_invalid_manifest(tmp_path: Path, name: str) -> None:
    manifest, expected = MANIFEST_CASES[name]
    assert_consecutive(error_lines(tmp_path, "cases:\n  - id: a\n    input: x\n", manifest),
                       [f"ELIZON_MANIFEST_INVALID: {line}" for line in expected])


def test_a_bad_manifest_stops_the_session_with_its_lines_only(
        packages: Packages, pytester: pytest.Pytester) -> None:
    result = run_bad(packages, pytester, "cases:\n  - id: a\n    input: x\n",
                     manifest=MANIFEST_CASES["unknown-key"][0])
    result.stdout.fnmatch_lines(["ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:3: unknown key "
                                 "'entrypoint' (did you mean 'entry'?)*"])
