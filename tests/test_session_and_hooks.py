"""The session object, plan building as a pure function, and the plugin's hooks
(docs/hooks.md) as a conftest.py uses them."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

import pytest_elizon_eval
from pytest_elizon_eval import errors
from pytest_elizon_eval.bind import binding
from pytest_elizon_eval.bind.binding import Source
from pytest_elizon_eval.collect import session as session_module
from pytest_elizon_eval.collect.options import Settings
from pytest_elizon_eval.collect.session import ElizonSession, current
from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load.packages import Package, SuiteSpec
from pytest_elizon_eval.load.runtime import Case
from pytest_elizon_eval.run import concurrency, planning, retrying

from .conftest import ECHO_APP, Packages

#: The package as imported: the checkout, or site-packages when the wheel is tested.
PACKAGE_DIR = Path(pytest_elizon_eval.__file__).parent

# -- the session ----------------------------------------------------------------------------


def _session(**retry: Any) -> ElizonSession:
    return ElizonSession(settings=Any, index=Any, binder=Any,  # type: ignore[arg-type]
                         retry=retrying.RetryPolicy(**retry),
                         gates=concurrency.Gates(8))


def test_the_innermost_session_gives_the_retry_policy_and_the_gates() -> None:
    outer, inner = _session(retries=1), _session(retries=7)
    before = current()
    outer.start(None)
    inner.start(None)
    try:
        assert current() is inner
        assert retrying.policy().retries == 7
        assert concurrency.gate_for("host") is inner.gates.limit("host")  # type: ignore[union-attr]
        inner.end()
        assert retrying.policy().retries == 1
    finally:
        inner.end()
        outer.end()
    assert current() is before


def test_outside_a_session_the_defaults_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    # this test process itself runs inside a session of the installed plugin: set it aside
    monkeypatch.setattr(session_module, "_configured", [])
    assert current() is None
    assert retrying.policy() == retrying.RetryPolicy()
    assert concurrency.gate_for("host") is None


def test_session_state_is_one_stash_key_and_no_module_globals() -> None:
    keys = {path.relative_to(PACKAGE_DIR).as_posix(): path.read_text(encoding="utf-8").count(
        "StashKey[") for path in PACKAGE_DIR.rglob("*.py")}
    assert keys["collect/session.py"] == 1
    assert keys["collect/nodes.py"] == 0
    assert keys["redteam/nodes.py"] == 2  # the probe pack: its state, and a case's watch
    assert keys["collect/snapshotting.py"] == 1  # a case's snapshot check
    assert keys["collect/prompt_fixture.py"] == 1  # the prompt registries it has read
    assert sum(keys.values()) == 5, {k: n for k, n in keys.items() if n}
    for name in ("run/retrying.py", "run/concurrency.py"):
        assert "global " not in (PACKAGE_DIR / name).read_text(encoding="utf-8")


def _runtime_imports(relative: str) -> set[str]:
    """The package's modules (dotted, from the package root) a module imports at run time."""
    tree = ast.parse((PACKAGE_DIR / relative).read_text(encoding="utf-8"))
    package = relative.split("/")[:-1]
    found: set[str] = set()
    for node in tree.body:  # run-time imports only: those under TYPE_CHECKING are types
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] + (
                node.module.split(".") if node.module else [])
            for alias in node.names:  # a name is a module, or an attribute of the module `base`
                module = [*base, alias.name]
                is_module = PACKAGE_DIR.joinpath(*module).with_suffix(".py").is_file()
                found.add(".".join(module if is_module else base))
    return found


def test_collect_imports_at_most_six_siblings_and_not_the_probe_pack() -> None:
    siblings = _runtime_imports("collect/nodes.py")
    assert "run.running" in siblings  # the reading above finds the imports it counts
    assert len(siblings) <= 6, siblings
    assert not any(s.startswith("redteam") for s in siblings), siblings


# -- the plan, as a pure function -----------------------------------------------------------


class _Bound:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.description = str(source.value)


class _Binder:
    """Binds the first source that offers a value, as binding.Binder does, keeping them all."""

    def __init__(self) -> None:
        self.seen: dict[str, list[Source]] = {}

    def _bind(self, kind: binding.Kind, sources: list[Source]) -> _Bound:
        self.seen[kind.key] = sources
        chosen = next((s for s in sources if s.value is not None), None)
        if chosen is None:
            raise ElizonError(kind.unbound, ["nothing bound"])
        return _Bound(chosen)

    def entry(self, sources: list[Source], folder: Path, output: str = "text") -> _Bound:
        return self._bind(binding.ENTRY, sources)

    def judge(self, sources: list[Source], folder: Path) -> _Bound:
        return self._bind(binding.JUDGE, sources)


def _settings(cli: object = None, ini: object = None, judge: object = None) -> Settings:
    return Settings(
        cli={"entry": Source(cli, "--elizon-entry"), "judge": Source(None, "--elizon-judge")},
        ini={"entry": Source(ini, "ini elizon_entry"), "judge": Source(judge, "ini elizon_judge")},
        route_key="route", timeout_s=30.0, timeout_source="the default", strict=False,
        suite_globs=(), junit=None, markdown=None, results=None, baseline=None,
        annotations=False, step_summary=None, concurrency=1, record=None, replay=None,
        prices={"m": (1.0, 2.0)})


def _context(tmp_path: Path, manifest_entry: str | None = "app:answer", **spec: Any
             ) -> planning.SuiteContext:
    package = Package(name="pkg", folder=tmp_path, manifest=tmp_path / "elizon.yaml",
                      entry=manifest_entry, entry_line=2 if manifest_entry else None,
                      prices={"n": (3.0, 4.0)})
    return planning.SuiteContext(package, SuiteSpec(tmp_path / "s.yaml", **spec),
                                 "pkg/s.yaml", "pkg:s.yaml", manifest_display="pkg/elizon.yaml")


def _case(**extra: Any) -> Case:
    return Case.model_validate({"id": "c", "input": "hi", **extra})


def _where(name: str) -> str:
    return f"conftest.py:{len(name)}"


def test_a_suites_cases_bind_their_entry_again_only_when_its_sources_change(
        tmp_path: Path) -> None:
    context, settings = _context(tmp_path), _settings()
    binds: list[object] = []

    class Counting(_Binder):
        def entry(self, sources: list[Source], folder: Path, output: str = "text") -> _Bound:
            binds.append(next(s.value for s in sources if s.value is not None))
            return super().entry(sources, folder, output)

    binder = Counting()

    def plan(given: object, with_settings: Settings = settings,
             with_binder: _Binder = binder) -> str:
        return planning.plan_case(_case(), context, with_settings, with_binder,  # type: ignore[arg-type]
                                  {"elizon_entry": given}, _where, judged=False).entry_description

    first, second = "fixture:one", "fixture:two"
    assert [plan(None), plan(None), plan(first), plan(first), plan(second)] == [
        "app:answer", "app:answer", "fixture:one", "fixture:one", "fixture:two"]
    assert binds == ["app:answer", "fixture:one", "fixture:two"]  # once a change
    assert plan(first, _settings(cli="cli:answer")) == "cli:answer"  # other settings
    assert plan(first, with_binder=Counting()) == "fixture:one"  # another binder binds anew
    assert binds[3:] == ["cli:answer", "fixture:one"]


def test_the_command_line_beats_the_fixture_beats_the_manifest_beats_the_ini(
        tmp_path: Path) -> None:
    context, given = _context(tmp_path), {"elizon_entry": "fixture:answer"}
    binder = _Binder()
    plan = planning.plan_case(_case(), context, _settings(cli="cli:answer", ini="ini:answer"),
                              binder, given, _where, judged=False)  # type: ignore[arg-type]
    assert plan.entry_description == "cli:answer"
    assert [s.where for s in binder.seen["entry"]] == [
        "--elizon-entry", "the elizon_entry fixture (conftest.py:12)",
        "entry: in pkg/elizon.yaml:2", "ini elizon_entry"]
    for fixtures, settings, expected in [
        (given, _settings(ini="ini:answer"), "fixture:answer"),
        ({"elizon_entry": None}, _settings(ini="ini:answer"), "app:answer"),
    ]:
        plan = planning.plan_case(_case(), context, settings, _Binder(), fixtures, _where,
                                  judged=False)  # type: ignore[arg-type]
        assert plan.entry_description == expected
    plan = planning.plan_case(_case(), _context(tmp_path, None), _settings(ini="ini:answer"),
                              _Binder(), {"elizon_entry": None}, _where,  # type: ignore[arg-type]
                              judged=False)
    assert plan.entry_description == "ini:answer"
    assert binding.precedence(cli=Source(1, "a"), fixture=Source(2, "b"), manifest=Source(3, "c"),
                              ini=Source(4, "d")) == [Source(1, "a"), Source(2, "b"),
                                                      Source(3, "c"), Source(4, "d")]


def test_the_plan_takes_repeat_pass_rate_and_prices_from_case_then_suite(tmp_path: Path) -> None:
    context = _context(tmp_path, repeat=3, min_pass_rate=0.5)
    values = {"elizon_entry": None}
    plan = planning.plan_case(_case(), context, _settings(), _Binder(), values, _where,
                              judged=False)  # type: ignore[arg-type]
    assert (plan.repeat, plan.min_pass_rate, plan.timeout_s) == (3, 0.5, 30.0)
    assert plan.prices == {"m": (1.0, 2.0), "n": (3.0, 4.0)}
    plan = planning.plan_case(_case(repeat=2, minPassRate=1.0), context, _settings(), _Binder(),
                              values, _where, judged=False)  # type: ignore[arg-type]
    assert (plan.repeat, plan.min_pass_rate) == (2, 1.0)


def test_an_unbound_judge_fails_the_plan_unless_it_is_optional(tmp_path: Path) -> None:
    context = _context(tmp_path)
    values = {"elizon_entry": None, "elizon_judge": None}
    with pytest.raises(ElizonError) as raised:
        planning.plan_case(_case(), context, _settings(), _Binder(), values, _where,
                           judged=True)  # type: ignore[arg-type]
    assert raised.value.code == errors.ELIZON_JUDGE_UNBOUND
    plan = planning.plan_case(_case(), context, _settings(), _Binder(), values, _where,
                              judged=True, judge_optional=True)  # type: ignore[arg-type]
    assert plan.judge is None
    plan = planning.plan_case(_case(), context, _settings(judge="j:grade"), _Binder(), values,
                              _where, judged=True, judge_optional=True)  # type: ignore[arg-type]
    assert plan.judge is not None


# -- the hooks, from a conftest.py ----------------------------------------------------------

SUITE = """
cases:
  - id: hello
    input: hello there
    expect:
      contains: [hello]
"""

CONFTEST = '''
import pytest
from pytest_elizon_eval.run.assertions import AssertionResult
from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.run.planning import CaseChecks

seen = []

@pytest.fixture
def house_style():
    return "no shouting"

def pytest_elizon_case_fixtures(suite):
    return ["house_style"]

def pytest_elizon_case_setup(item):
    if item.fixture_values["house_style"] != "no shouting":
        raise ElizonError("HOUSE_STYLE", ["unknown style"])
    seen.append((item.name, item.plan.timeout_s))

def pytest_elizon_case_checks(item, run):
    said = run.attempts[0].call.text or ""
    return CaseChecks(assertions=(AssertionResult("house", said.islower(), "no capitals",
                                                  said),),
                      security={"leaked": [{"kind": "house", "masked": "h***"}]},
                      redact=("there",))
'''


def test_a_conftest_adds_fixtures_setup_and_whole_case_checks(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest("--elizon-results=out.json")
    result.assert_outcomes(passed=1)
    case = json.loads((pytester.path / "out.json").read_text())["suites"][0]["cases"][0]
    assert case["assertions"][-1]["name"] == "house"
    assert case["security"] == {"leaked": [{"kind": "house", "masked": "h***"}]}
    assert "there" not in json.dumps(case)  # masked in every report


def test_a_case_check_from_a_hook_fails_the_case(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE.replace("hello there", "Hello there").replace(
        "[hello]", "[Hello]"), app=ECHO_APP)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*house*"])


def test_a_setup_hook_that_raises_is_a_setup_error(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    pytester.makeconftest(CONFTEST.replace('return "no shouting"', 'return "SHOUT"'))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*HOUSE_STYLE*unknown style*"])


def test_a_plugin_collects_a_test_set_the_walk_does_not_reach(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    pytester.makeconftest('''
from pytest_elizon_eval import SuiteFile  # the public name, as docs/hooks.md imports it

def pytest_elizon_collect_test_set(collector, package, spec):
    return SuiteFile.from_parent(collector, path=spec.path, package=package, spec=spec,
                                 nodeid=collector.nodeid + "::mine")
''')
    result = pytester.runpytest("--collect-only", "-q", "pkg/elizon.yaml")
    result.stdout.fnmatch_lines(["pkg/elizon.yaml::mine::hello"])


def test_a_conftests_hooks_reach_the_cases_under_it_and_no_others(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """Each suite file's hook proxy is found once for its cases' runs: a conftest.py in one
    package's folder still sees every phase of its own cases and none of the other's."""
    two = "cases:\n  - id: a\n    input: x\n  - id: b\n    input: y\n"
    packages.package("one", app=ECHO_APP, suite=two)
    packages.package("two", app=ECHO_APP, suite=two)
    packages.write("one/conftest.py", """
def pytest_runtest_setup(item):
    print("SEEN setup", item.nodeid)

def pytest_runtest_teardown(item):
    print("SEEN teardown", item.nodeid)

def pytest_elizon_case_setup(item):
    print("SEEN case-setup", item.nodeid)
""")
    result = pytester.runpytest("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    seen = sorted(re.findall(r"SEEN \S+ \S+", result.stdout.str()))
    assert seen == sorted(f"SEEN {phase} one/eval/suite.yaml::{case}"
                          for phase in ("setup", "teardown", "case-setup") for case in "ab")
