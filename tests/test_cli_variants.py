"""``elizon-eval`` on the results of runs with package variants (docs/format.md#variants):
``show`` prints the comparison, ``diff`` pairs each case under its own variant only,
``merge`` joins variant shards into one comparison, ``verify`` knows the variant gate of
``--elizon-fail-on-regression``, and ``history`` keeps variants apart. Every file here is
written by a real pytest run of a real package."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import Packages, elizon_eval, validate_results
from .test_variants import APP, TWO, gated_package, variant_package

#: The reverse of test_variants' APP: the large model now misses "large", the small finds it.
SWAPPED = APP.replace('return f"{text} from {model}"',
                      'return f"{text} from {\'small\' if model == \'large\' else \'large\'}"')
#: Large, and small that is wrong on ten of the twelve gated cases: significantly worse.
WORSE = "  - name: large\n  - name: small\n    params: {wrong: 10}\n"


def run(pytester: pytest.Pytester, results: str, *args: str) -> dict[str, Any]:
    """``pytest pkg --elizon-results=RESULTS ARGS``: the file it wrote, schema-checked."""
    pytester.runpytest("pkg", f"--elizon-results={results}", *args)
    data: dict[str, Any] = json.loads((pytester.path / results).read_text("utf-8"))
    validate_results(data)
    return data


def cases(data: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    return {(c["id"], c.get("variant")): c["outcome"] for s in data["suites"]
            for c in s["cases"]}


def untimed(comparison: dict[str, Any]) -> dict[str, Any]:
    """A comparison's data without what the machine's speed decides."""
    return {**comparison, "variants": [
        {k: v for k, v in row.items() if not k.startswith("latency_")}
        for row in comparison["variants"]]}


def test_show_prints_the_variant_lines_of_the_terminal_and_every_detail(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    ran = pytester.runpytest("pkg", "--elizon-results=a.json")
    terminal = [line for line in ran.stdout.lines if line.startswith("variant ")]
    assert len(terminal) == 2
    shown = elizon_eval("show", "a.json", cwd=pytester.path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert [line for line in lines if line.startswith("variant ")] == terminal
    assert "Variants of package pkg: reference large; 95% intervals; each variant against " \
        "the reference on the cases both ran, Holm-corrected across 1 test at α 0.05" in lines
    assert "  small vs large, pass_rate (McNemar exact, 2 paired cases): 1.000 → 0.500, " \
        "change -0.500 [-1.000, +0.193], p 1, Holm 1: too few cases to tell" in lines
    assert "  pkg/eval/suite.yaml::knows-size  large passed · small failed" in lines
    assert "  pkg/eval/suite.yaml::knows-size[small] — ✗ contains: missing: 'large'" in lines


def test_a_run_the_variant_gate_failed_is_shown_verified_and_overridden_as_failed(
        packages: Packages, pytester: pytest.Pytester) -> None:
    keys = pytester.path / "keys"
    assert elizon_eval("keygen", str(keys), cwd=pytester.path).returncode == 0
    gated_package(packages, WORSE)
    data = run(pytester, "g.json", "--elizon-fail-on-regression",
               f"--elizon-sign-key={keys / 'elizon-eval.key'}")
    # small's failures are advisory case by case: the variant gate fails the suite, and
    # the file says that gate was on
    assert data["suites"][0]["verdict"] == "fail"
    assert data["verdict"]["pass"] is False
    assert data["verdict"]["variant_gate"] is True
    note = ("--elizon-fail-on-regression fails the run on 1 variant result against the "
            "reference: small of pkg against large: pass_rate -0.833 "
            "(Holm p=0.00195).")
    assert data["verdict"]["paragraph"].endswith(note)

    shown = elizon_eval("show", "g.json", cwd=pytester.path)
    assert shown.returncode == 0, shown.stderr
    assert note in shown.stdout.splitlines()
    assert "verdict: FAIL — The run failed: 1 suite, 24 cases." in shown.stdout

    public = str(keys / "elizon-eval.pub")
    plain = elizon_eval("verify", "g.json", "--public-key", public, cwd=pytester.path)
    assert plain.returncode == 0, plain.stderr
    assert "signature valid, by " in plain.stdout
    gate = ("EVALUATION_GATE_FAILED: pkg/eval/suite.yaml (must-pass) passed 14 of 24; the "
            "variant gate against the reference (--elizon-fail-on-regression): small of pkg "
            "against large: pass_rate -0.833 (Holm p=0.00195)\n")
    required = elizon_eval("verify", "g.json", "--public-key", public, "--require-pass",
                           cwd=pytester.path)
    assert (required.returncode, required.stderr) == (1, gate)

    seen = elizon_eval("acknowledge", "g.json", "--acknowledge-evaluation", "--by", "ann",
                       cwd=pytester.path)
    assert seen.returncode == 0, seen.stderr
    assert ("MUST-PASS GATE: FAILED — 1 of 1 must-pass suite did not pass: "
            "pkg/eval/suite.yaml; the variant gate against the reference "
            "(--elizon-fail-on-regression): small of pkg against large: "
            "pass_rate -0.833 (Holm p=0.00195)") in seen.stdout.splitlines()
    ack = json.loads((pytester.path / "g.json.ack.json").read_text("utf-8"))
    assert ack["verdict_seen"]["pass"] is False

    approved = elizon_eval("override", "g.json", "--approver", "ann", "--reason",
                           "small ships behind a flag", "--sign-key",
                           str(keys / "elizon-eval.key"), cwd=pytester.path)
    assert approved.returncode == 0, approved.stderr
    made = json.loads((pytester.path / "g.json.override.json").read_text("utf-8"))
    # the suite the gate failed, and why: the variant's drop
    assert made["failed_suites"] == [{"path": "pkg/eval/suite.yaml", "gate": "must-pass",
                                      "passed": 14, "cases": 24}]
    assert [(v["package"], v["variant"], v["reference"], v["metric"])
            for v in made["failed_variants"]] == [("pkg", "small", "large", "pass_rate")]
    honoured = elizon_eval("verify", "g.json", "--require-pass", "--approver-key", public,
                           cwd=pytester.path)
    assert honoured.returncode == 0, honoured.stderr
    assert "must-pass gate failed, overridden by ann: small ships behind a flag" \
        in honoured.stdout

    # a file written before verdict.variant_gate: the gate was on, as its verdict says
    del data["verdict"]["variant_gate"]
    (pytester.path / "old.json").write_text(json.dumps(data), "utf-8")
    old = elizon_eval("verify", "old.json", "--require-pass", cwd=pytester.path)
    assert (old.returncode, old.stderr) == (1, gate)
    # a file that says the run passed though the gate it names fails it: not a results file
    data["verdict"].update({"pass": True, "variant_gate": True})
    (pytester.path / "edited.json").write_text(json.dumps(data), "utf-8")
    edited = elizon_eval("verify", "edited.json", cwd=pytester.path)
    assert edited.returncode == 1
    assert edited.stderr == ("ELIZON_RESULTS_INVALID: edited.json: its verdicts do not follow "
                             "from its cases: the run says pass=true, its cases give "
                             "pass=false\n")


def test_diff_pairs_each_case_with_itself_under_the_same_variant(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    run(pytester, "a.json")
    run(pytester, "large.json", "--elizon-variant", "large")
    packages.write("pkg/app.py", SWAPPED)
    assert cases(run(pytester, "b.json"))[("knows-size", "large")] == "failed"
    diff = elizon_eval("diff", "a.json", "b.json", cwd=pytester.path)
    assert diff.returncode == 0, diff.stderr
    lines = diff.stdout.splitlines()
    assert lines[0] == "a.json -> b.json: 1 regressed, 1 improved, 0 new, 0 removed, 2 unchanged"
    assert [line.split() for line in lines[1:4]] == [
        ["change", "case", "before", "after"],
        ["regressed", "pkg/eval/suite.yaml::knows-size[large]", "passed", "failed"],
        ["improved", "pkg/eval/suite.yaml::knows-size[small]", "failed", "passed"]]
    assert elizon_eval("diff", "a.json", "b.json", "--fail-on-regression",
                       cwd=pytester.path).returncode == 1
    # a variant one file ran and the other did not: its cases are new, or removed
    grown = elizon_eval("diff", "large.json", "a.json", cwd=pytester.path)
    assert grown.stdout.splitlines()[0] == ("large.json -> a.json: 0 regressed, 0 improved, "
                                            "2 new, 0 removed, 2 unchanged")
    assert [line.split()[:2] for line in grown.stdout.splitlines()[2:4]] == [
        ["new", "pkg/eval/suite.yaml::greets[small]"],
        ["new", "pkg/eval/suite.yaml::knows-size[small]"]]
    shrunk = elizon_eval("diff", "a.json", "large.json", cwd=pytester.path)
    assert shrunk.stdout.splitlines()[0] == ("a.json -> large.json: 0 regressed, 0 improved, "
                                             "0 new, 2 removed, 2 unchanged")


def test_diff_fails_on_regression_as_the_variants_gates_would(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # an advisory variant's case that stopped passing never failed its run: nor the diff
    variant_package(packages, "  - name: large\n    params: {model: large}\n"
                              "  - name: small\n    params: {model: small}\n"
                              "    gate: advisory\n", app=SWAPPED)
    run(pytester, "a.json")
    packages.write("pkg/app.py", APP)
    assert cases(run(pytester, "b.json"))[("knows-size", "small")] == "advisory_failed"
    diff = elizon_eval("diff", "a.json", "b.json", "--fail-on-regression", cwd=pytester.path)
    assert diff.returncode == 0, diff.stdout
    assert ["regressed", "pkg/eval/suite.yaml::knows-size[small]", "passed",
            "advisory_failed"] in [line.split() for line in diff.stdout.splitlines()]
    # a variant significantly worse than its reference fails it, as it failed the run
    gated_package(packages, WORSE)
    run(pytester, "g.json", "--elizon-fail-on-regression")
    same = elizon_eval("diff", "g.json", "g.json", "--fail-on-regression", cwd=pytester.path)
    assert same.returncode == 1, same.stderr
    assert same.stdout.splitlines()[-1] == (
        "--fail-on-regression fails the run on 1 variant result against the reference: "
        "small of pkg against large: pass_rate -0.833 (Holm p=0.00195).")
    assert elizon_eval("diff", "g.json", "g.json", cwd=pytester.path).returncode == 0


def test_merge_joins_the_runs_of_each_variant_into_one_comparison(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    whole = run(pytester, "a.json")
    run(pytester, "l.json", "--elizon-variant", "large")
    run(pytester, "s.json", "--elizon-variant", "small")
    done = elizon_eval("merge", "l.json", "s.json", "-o", "m.json", cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "merged 4 cases of 1 suites from 2 shards: FAIL"
    merged = json.loads((pytester.path / "m.json").read_text("utf-8"))
    validate_results(merged)
    assert cases(merged) == cases(whole)
    assert merged["provenance"]["packages"][0].get("prompts") == \
        whole["provenance"]["packages"][0].get("prompts")
    suite = merged["suites"][0]
    assert (suite["variants"], suite["advisory_variants"], suite["case_count"]) == \
        (["large", "small"], [], 2)
    (compared,) = merged["variants"]
    assert untimed(compared) == untimed(whole["variants"][0])
    assert compared["reference"] == "large"
    assert [d["variant"] for d in compared["differences"]] == ["small"]
    shown = elizon_eval("show", "m.json", cwd=pytester.path)
    assert "variant small of pkg: 1/2 passed, pass rate 0.500 [0.095, 0.905], too few cases to " \
        "tell against large" in shown.stdout
    # each shard ran its variant as its own reference: the first shard's is the merge's
    turned = elizon_eval("merge", "s.json", "l.json", "-o", "t.json", cwd=pytester.path)
    assert turned.returncode == 0, turned.stderr
    assert "  the shards compare pkg's variants with different references (small in " \
        "s.json, large in l.json): the merge compares them with small, the first " \
        "shard's" in turned.stdout.splitlines()
    assert json.loads((pytester.path / "t.json").read_text("utf-8"))["variants"][0][
        "reference"] == "small"


def test_merged_shards_of_a_gated_run_fail_as_the_whole_run_does(
        packages: Packages, pytester: pytest.Pytester) -> None:
    gated_package(packages, WORSE)
    whole = run(pytester, "all.json", "--elizon-fail-on-regression")
    assert whole["verdict"]["pass"] is False
    # a shard of small alone has no reference case to compare with: its failed cases are
    # gated case by case again (never a silent pass); large's shard passes
    for name, chosen in (("l.json", "large"), ("s.json", "small")):
        shard = run(pytester, name, "--elizon-fail-on-regression", "-k", chosen)
        assert shard["verdict"]["pass"] is (chosen == "large")
    assert "small of pkg against large: 10 failed cases (q0, q1, q2, q3, q4, … 5 more) " \
        "large did not run: gated case by case" in \
        json.loads((pytester.path / "s.json").read_text("utf-8"))["verdict"]["paragraph"]
    done = elizon_eval("merge", "l.json", "s.json", "-o", "m.json", cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "merged 24 cases of 1 suites from 2 shards: FAIL"
    merged = json.loads((pytester.path / "m.json").read_text("utf-8"))
    validate_results(merged)
    assert merged["verdict"] == whole["verdict"]  # variant_gate true, the same paragraph
    assert untimed(merged["variants"][0]) == untimed(whole["variants"][0])
    verified = elizon_eval("verify", "m.json", "--require-pass", cwd=pytester.path)
    assert verified.returncode == 1
    assert verified.stderr.startswith(
        "EVALUATION_GATE_FAILED: pkg/eval/suite.yaml (must-pass) passed 14 of 24; the variant "
        "gate against the reference (--elizon-fail-on-regression): small of pkg against "
        "large: pass_rate -0.833")


def test_history_records_and_lists_each_variant_apart(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    store = "--elizon-history=h.sqlite"
    run(pytester, "a.json", store)
    packages.write("pkg/app.py", SWAPPED)
    run(pytester, "b.json", store)
    asked = elizon_eval("history", "h.sqlite", "--format", "json", cwd=pytester.path)
    assert asked.returncode == 0, asked.stderr
    found = json.loads(asked.stdout)
    (suite,) = found["suites"]
    assert [p["pass_rate"] for p in suite["trend"]] == [0.75, 0.75]  # every case of the runs
    assert {v["variant"]: [(p["cases"], p["passed"]) for p in v["trend"]]
            for v in suite["variants"]} == {"large": [(2, 2), (2, 1)],
                                            "small": [(2, 1), (2, 2)]}
    assert [(c["nodeid"], c["since"]) for c in found["started_failing"]] == [
        ("pkg/eval/suite.yaml::knows-size[large]", 2)]
    table = elizon_eval("history", "h.sqlite", cwd=pytester.path).stdout.splitlines()
    assert "pkg/eval/suite.yaml, variant large" in table
    assert "pkg/eval/suite.yaml, variant small" in table
    assert "pkg/eval/suite.yaml" not in table  # no table of the variants pooled
    diff = elizon_eval("history", "diff", "1", "2", "h.sqlite", cwd=pytester.path)
    assert diff.stdout.splitlines()[0] == ("run 1 -> run 2: 1 regressed, 1 improved, 0 new, "
                                           "0 removed, 2 unchanged")
    # the package without its variants: those runs' cases are a table of their own
    packages.package(suite=(pytester.path / "pkg/eval/suite.yaml").read_text("utf-8"),
                     app=SWAPPED)
    run(pytester, "c.json", store)
    table = elizon_eval("history", "h.sqlite", cwd=pytester.path).stdout.splitlines()
    at = table.index("pkg/eval/suite.yaml, without a variant")
    assert [table[at + 2].split()[i] for i in (0, 2, 3)] == ["3", "2", "1.000"]  # run 3 only


def test_merged_provenance_keeps_every_prompt_either_shard_rendered() -> None:
    from pytest_elizon_eval.trust import provenance

    def shard(*prompts: tuple[str, str]) -> dict[str, Any]:
        return {"started": "a", "finished": "b", "plugin": "p", "pytest": "9", "python": "3",
                "options": {}, "packages": [{
                    "name": "pkg", "version": None, "manifest": "pkg/elizon.yaml",
                    "manifest_sha256": "m", "entries": ["app:answer"], "suites": ["s.yaml"],
                    "git": None, "judges": [],
                    "prompts": [{"name": n, "version": v, "sha256": v * 64}
                                for n, v in prompts]}]}

    merged = provenance.merge([("a.json", "1", shard(("support", "1"))),
                               ("b.json", "2", shard(("support", "2"), ("support", "1")))])
    assert merged["packages"][0]["prompts"] == [
        {"name": "support", "version": "1", "sha256": "1" * 64},
        {"name": "support", "version": "2", "sha256": "2" * 64}]
