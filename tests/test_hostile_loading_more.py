"""Issue 37: loading, binding, snapshots, checks and retries under hostile conditions.

Two suite files whose snapshots would share one file (``s.yml`` and ``s.yml.yaml``); binding
while ``sys.modules`` changes under it (as other threads' imports change it); a check module
that exits at import in a suite that is a collection error anyway; ``elizon_retry_on``
classes imported only when an error needs classifying; Ctrl-C while an entry point swallows
``KeyboardInterrupt`` in a loop. Each runs real packages through pytest as a user's run does.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
import yaml

from .conftest import PYTEST_WITH_CTRL_C, Packages, interrupt_when

# -- snapshots: two suites, one snapshot file ---------------------------------------------------

TWINS_MANIFEST = """
name: twins
entry: app:answer
evaluation:
  suites:
    - suite: eval/s.yml
    - suite: eval/s.yml.yaml
"""
TWIN_SUITE = """
cases:
  - id: {pinned}
    input: {pinned}
    expect: {{snapshot: true}}
  - id: {plain}
    input: x
"""
SHARED = "twins/eval/__snapshots__/s.yml.snap.yaml"


def _twins(packages: Packages) -> None:
    packages.write("twins/elizon.yaml", TWINS_MANIFEST)
    packages.write("twins/app.py", "def answer(text):\n    return 'said ' + text\n")
    packages.write("twins/eval/s.yml", TWIN_SUITE.format(pinned="a", plain="plain-a"))
    packages.write("twins/eval/s.yml.yaml", TWIN_SUITE.format(pinned="b", plain="plain-b"))


def test_two_suites_whose_snapshots_would_share_a_file_are_refused_and_nothing_is_lost(
        packages: Packages, pytester: pytest.Pytester) -> None:
    _twins(packages)
    # a snapshot file as an earlier version wrote it, holding both suites' pins
    pins = {c: {"input_sha256": "0" * 64, "entry": "app:answer",
                "output_sha256": hashlib.sha256(f"said {c}".encode()).hexdigest(),
                "output": f"said {c}"} for c in ("a", "b")}
    shared = packages.write(SHARED, "# old\n" + json.dumps(
        {"format": "pytest-elizon-eval/snapshots/v1", "snapshots": pins}))
    before = shared.read_bytes()
    # an update run over one of the two suites: its pinned case is refused, naming both
    # suite files; the other suite's pins are not removed as unused
    one = pytester.runpytest("twins/eval/s.yml", "--elizon-snapshot-update",
                             "--elizon-results=r.json")
    assert one.parseoutcomes() == {"passed": 1, "errors": 1}
    one.stdout.fnmatch_lines([
        f"ELIZON_SNAPSHOT_INVALID: {SHARED}: the snapshots of twins/eval/s.yml and "
        "twins/eval/s.yml.yaml would share this file; rename one of the two suite files*"])
    assert shared.read_bytes() == before
    outcomes = {c["id"]: c["outcome"] for s in json.loads(
        (pytester.path / "r.json").read_text())["suites"] for c in s["cases"]}
    assert outcomes == {"a": "error", "plain-a": "passed"}
    # both suites at once: both pinned cases refused, still nothing written or removed
    both = pytester.runpytest("--elizon-snapshot-update")
    assert both.parseoutcomes() == {"passed": 2, "errors": 2}
    assert shared.read_bytes() == before
    # renamed apart, each suite has a file of its own
    (pytester.path / "twins/eval/s.yml").rename(pytester.path / "twins/eval/s2.yml")
    packages.write("twins/elizon.yaml", TWINS_MANIFEST.replace("eval/s.yml\n", "eval/s2.yml\n"))
    shared.unlink()
    apart = pytester.runpytest("--elizon-snapshot-update")
    assert apart.parseoutcomes() == {"passed": 4}
    snapshots = pytester.path / "twins/eval/__snapshots__"
    assert sorted(p.name for p in snapshots.iterdir()) == ["s.yml.snap.yaml",
                                                           "s2.yml.snap.yaml"]


def test_a_file_of_the_twin_name_that_is_no_suite_changes_nothing(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app="def answer(text):\n    return text\n",
                     suite="cases:\n  - id: a\n    input: x\n    expect: {snapshot: true}\n")
    packages.write("pkg/eval/suite", "not a suite: no manifest names it, no glob matches it\n")
    result = pytester.runpytest("--elizon-snapshot-update")
    assert result.parseoutcomes() == {"passed": 1}
    assert (pytester.path / "pkg/eval/__snapshots__/suite.snap.yaml").is_file()


def test_suites_whose_snapshot_files_only_look_alike_each_keep_their_own(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # s.yaml and s.yaml.yaml: s.snap.yaml and s.yaml.snap.yaml, no file shared
    packages.write("pkg/elizon.yaml", TWINS_MANIFEST.replace("twins", "pkg").replace(
        "eval/s.yml\n", "eval/s.yaml\n").replace("eval/s.yml.yaml", "eval/s.yaml.yaml"))
    packages.write("pkg/app.py", "def answer(text):\n    return 'said ' + text\n")
    packages.write("pkg/eval/s.yaml", TWIN_SUITE.format(pinned="a", plain="plain-a"))
    packages.write("pkg/eval/s.yaml.yaml", TWIN_SUITE.format(pinned="b", plain="plain-b"))
    pytester.runpytest("--elizon-snapshot-update").assert_outcomes(passed=4)
    written = pytester.path / "pkg/eval/__snapshots__"
    assert sorted(p.name for p in written.iterdir()) == ["s.snap.yaml", "s.yaml.snap.yaml"]
    assert {name: sorted(yaml.safe_load((written / name).read_text())["snapshots"]) for name in
            ("s.snap.yaml", "s.yaml.snap.yaml")} == {"s.snap.yaml": ["a"],
                                                     "s.yaml.snap.yaml": ["b"]}
    pytester.runpytest().assert_outcomes(passed=4)  # each matches its own pins


# -- binding while sys.modules changes ----------------------------------------------------------

# Another thread's import lands in sys.modules at any moment, also while the binding goes
# through it to set a package's own modules apart. A key whose comparison changes sys.modules
# makes that moment certain: each time the binding compares it with the name it imports, two
# modules are added (as another thread's imports would add them) and one added before removed
# (as a thread that imports and then takes out a module of its own would).
CHURNING_CONFTEST = """
import sys
import types


class Churning(str):
    calls = 0

    def __eq__(self, other):
        if other == "churn_app":
            Churning.calls += 1
            for name in (f"churn_other_{Churning.calls}", f"churn_gone_{Churning.calls}"):
                sys.modules[name] = types.ModuleType(name)
            sys.modules.pop(f"churn_gone_{Churning.calls - 1}", None)
        return str.__eq__(self, other)

    __hash__ = str.__hash__


sys.modules[Churning("zz_churning_key")] = types.ModuleType("zz_churning_key")
"""


def test_binding_never_trips_over_modules_imported_meanwhile(
        packages: Packages, pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CHURNING_CONFTEST)
    for name in ("one", "two", "three"):  # each package binds its own churn_app
        packages.package(name, entry="churn_app:answer", app=None, suite=(
            f"cases:\n  - id: c\n    input: x\n    expect: {{equals: {name}}}\n"))
        packages.write(f"{name}/churn_app.py", f"def answer(text):\n    return {name!r}\n")
    result = pytester.runpytest("--elizon-results=r.json")
    result.assert_outcomes(passed=3)
    assert "dictionary changed size" not in result.stdout.str()


# -- a check module that exits, in a suite that is a collection error ---------------------------

def test_a_check_that_exits_at_import_is_named_with_the_suites_other_bad_checks(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app="def answer(q):\n    return q\n", suite="""
        cases:
          - id: exits
            input: x
            expect: {checks: ["exits:fine"]}
          - id: missing
            input: x
            expect: {checks: ["nosuchmod:fn"]}
    """)
    packages.write("pkg/exits.py", "import sys\nsys.exit(3)\n\ndef fine(output):\n"
                                   "    return True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # the missing module: collection error
    result.stdout.fnmatch_lines([
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:4: cases[[]0[]].expect.checks[[]0[]]: "
        "check 'exits:fine' cannot be used: importing 'exits' from */pkg ended with "
        "SystemExit: 3 (at */pkg/exits.py:2: sys.exit(3))",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:7: cases[[]1[]].expect.checks[[]0[]]: "
        "check 'nosuchmod:fn' cannot be used: cannot import 'nosuchmod': ModuleNotFoundError*"])


# -- elizon_retry_on: imported when an error needs classifying ----------------------------------

# An SDK whose import is slow in life: here it leaves a line in imported.txt each time.
LOGGING_SDK = """
import pathlib

with pathlib.Path(__file__).with_name("imported.txt").open("a") as fh:
    fh.write("imported\\n")


class RateLimitError(Exception):
    retry_after = 0.01
"""
RAISING_APP = """
import pathlib

def answer(text):
    if text == "fine":
        return "fine"
    if text == "refused":
        calls = pathlib.Path(__file__).with_name("calls.txt")
        with calls.open("a") as fh:
            fh.write("x")
        if len(calls.read_text()) < 2:
            import logging_sdk
            raise logging_sdk.RateLimitError("429")
        return "fine"
    raise ValueError("the app broke")
"""


def _retry_package(packages: Packages, pytester: pytest.Pytester, retry_on: str,
                   inputs: tuple[str, ...]) -> Path:
    packages.write("logging_sdk.py", LOGGING_SDK)
    packages.package(app=RAISING_APP, suite="cases:\n" + "".join(
        f"  - id: {text}\n    input: {text}\n    expect: {{equals: fine}}\n" for text in inputs))
    pytester.syspathinsert()
    pytester.makeini(f"[pytest]\nelizon_retry_on = {retry_on}\n")
    return pytester.path / "imported.txt"


def _imports(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def test_retry_on_classes_are_imported_only_when_an_error_needs_classifying(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # a class in a module of a package (litellm.exceptions.RateLimitError): the module is
    # found at start-up without running the package's __init__, which also logs its import
    packages.write("logging_pkg/__init__.py", """
        import pathlib

        with pathlib.Path(__file__).parent.with_name("imported.txt").open("a") as fh:
            fh.write("imported\\n")
    """)
    packages.write("logging_pkg/errors.py", "class Busy(Exception):\n    pass\n")
    marker = _retry_package(packages, pytester,
                            "logging_sdk.RateLimitError logging_pkg.errors.Busy",
                            ("fine", "broken"))
    pytester.runpytest("--collect-only").assert_outcomes()
    assert _imports(marker) == 0
    pytester.runpytest("-k", "fine").assert_outcomes(passed=1)
    assert _imports(marker) == 0  # nothing raised: nothing to classify
    result = pytester.runpytest("--elizon-results=r.json")
    result.assert_outcomes(passed=1, failed=1)
    assert _imports(marker) == 2  # at the first error, each once
    cases = {c["id"]: c for s in json.loads((pytester.path / "r.json").read_text())["suites"]
             for c in s["cases"]}
    assert cases["broken"]["error"]["message"] == "the app broke"
    assert cases["broken"]["attempts"] == 1


def test_a_retry_on_class_imported_late_is_still_retried(
        packages: Packages, pytester: pytest.Pytester) -> None:
    marker = _retry_package(packages, pytester, "logging_sdk.RateLimitError", ("refused",))
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(passed=1)
    [case] = [c for s in json.loads((pytester.path / "r.json").read_text())["suites"]
              for c in s["cases"]]
    assert (case["attempts"], case["waited_s"]) == (2, 0.01)
    assert _imports(marker) == 1


def test_a_misspelt_retry_on_class_is_named_at_the_first_error_it_leaves_unclassified(
        packages: Packages, pytester: pytest.Pytester) -> None:
    marker = _retry_package(packages, pytester, "logging_sdk.RateLimitErorr",
                            ("fine", "broken", "refused"))
    result = pytester.runpytest("--elizon-results=r.json", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=2)
    cases = {c["id"]: c for s in json.loads((pytester.path / "r.json").read_text())["suites"]
             for c in s["cases"]}
    said = ("(not retried: ini option elizon_retry_on in {ini}: 'logging_sdk.RateLimitErorr' "
            "is not an exception class: module 'logging_sdk' has no attribute "
            "'RateLimitErorr')").format(ini=pytester.path / "tox.ini")
    assert cases["broken"]["error"]["message"] == f"the app broke {said}"
    assert cases["refused"]["error"]["message"] == f"429 {said}"
    assert cases["refused"]["attempts"] == 1
    assert cases["fine"]["outcome"] == "passed"
    assert _imports(marker) == 1  # tried once for the whole session


def test_a_retry_on_module_that_is_not_there_is_a_usage_error_without_importing_anything(
        packages: Packages, pytester: pytest.Pytester) -> None:
    marker = _retry_package(packages, pytester, "logging_sdk.errors.RateLimitError",
                            ("fine",))
    result = pytester.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*ini option elizon_retry_on in *: 'logging_sdk.errors.RateLimitError' is not an "
        "importable exception class (expected a dotted name such as openai.RateLimitError): "
        "there is no module logging_sdk.errors"])
    assert _imports(marker) == 0


# Another package's isolated import puts its folder first on sys.path for a moment: a class
# of elizon_retry_on imported then, on a case's thread, would be that folder's module of the
# name. The test's lock (binding's, recording when a thread has to wait for it) and events
# make the moment certain: "first"'s case raises while "second"'s app is being imported, and
# that import goes on only once the classifying thread has imported a module of the name or
# waits for the lock.
RENDEZVOUS = "elizon_test_rendezvous"
SHADOWED_SDK = """
class Throttled(Exception):
    retry_after = 0.01
"""
WAITING_APP = f"""
import {RENDEZVOUS}

def answer(text):
    {RENDEZVOUS}.second_importing.wait(60)
    raise ValueError("the app broke")
"""
IMPORTED_APP = f"""
import {RENDEZVOUS}

{RENDEZVOUS}.second_importing.set()
{RENDEZVOUS}.progress.wait(60)

def answer(text):
    return text
"""
THROTTLED_APP = """
import pathlib
import sdkerrs

def answer(text):
    calls = pathlib.Path(__file__).with_name("calls.txt")
    with calls.open("a") as fh:
        fh.write("x")
    if len(calls.read_text()) < 2:
        raise sdkerrs.Throttled("429")
    return text
"""


class _TellingLock:
    """A lock that sets ``waited`` when a thread finds it held."""

    def __init__(self, waited: threading.Event) -> None:
        self._lock = threading.Lock()
        self._waited = waited

    def __enter__(self) -> bool:
        if not self._lock.acquire(blocking=False):
            self._waited.set()
            self._lock.acquire()
        return True

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_a_retry_on_class_is_never_imported_from_a_package_folder_being_imported(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_elizon_eval.bind import binding
    from pytest_elizon_eval.run import importing

    rendezvous = types.ModuleType(RENDEZVOUS)
    rendezvous.second_importing = threading.Event()  # type: ignore[attr-defined]
    rendezvous.progress = threading.Event()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, RENDEZVOUS, rendezvous)
    telling = _TellingLock(rendezvous.progress)  # the one lock binding and retries share
    monkeypatch.setattr(binding, "_import_lock", telling)
    monkeypatch.setattr(importing, "IMPORT_LOCK", telling)
    packages.write("sdkerrs.py", SHADOWED_SDK)  # the SDK, on sys.path
    pytester.syspathinsert()
    pytester.makeini("[pytest]\nelizon_retry_on = sdkerrs.Throttled\n")
    case = "cases:\n  - id: {0}\n    input: {0}\n    expect: {{equals: {0}}}\n"
    packages.package("first", app=WAITING_APP, suite=case.format("broken"))
    packages.package("second", app=IMPORTED_APP, suite=case.format("fine"))
    # the second package's own module of that name, which says it was imported
    packages.write("second/sdkerrs.py", f"import {RENDEZVOUS}\n\n{RENDEZVOUS}.progress.set()\n")
    packages.package("third", app=THROTTLED_APP, suite=case.format("refused"))
    result = pytester.runpytest("--elizon-concurrency=2", "-p", "no:randomly",
                                "--elizon-results=r.json")
    cases = {c["id"]: c for s in json.loads((pytester.path / "r.json").read_text())["suites"]
             for c in s["cases"]}
    assert cases["broken"]["error"]["message"] == "the app broke"  # classified, not retried
    assert (cases["refused"]["outcome"], cases["refused"]["attempts"]) == ("passed", 2)
    result.assert_outcomes(passed=2, failed=1)


# -- Ctrl-C while an entry point swallows KeyboardInterrupt -------------------------------------

@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_the_session_while_the_entry_swallows_keyboard_interrupt(
        packages: Packages, pytester: pytest.Pytester) -> None:
    loops = pytester.path / "loops.txt"
    packages.package(app=f"""
import pathlib, time

LOOPS = pathlib.Path({str(loops)!r})

def answer(text):
    while True:
        try:
            with LOOPS.open("a") as fh:
                fh.write(f"loop {{text}}\\n")
            time.sleep(0.01)
        except KeyboardInterrupt:  # what a careless retry loop does
            with LOOPS.open("a") as fh:
                fh.write("swallowed\\n")
""", suite="cases:\n  - id: loops\n    input: x\n  - id: never\n    input: y\n")
    with subprocess.Popen(
            [sys.executable, "-c", PYTEST_WITH_CTRL_C, "-p", "no:cacheprovider",
             "--elizon-timeout=60", "--elizon-results=r.json", "-p", "no:randomly"],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
        output = interrupt_when(process, lambda: _loops(loops) >= 3)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    seen = loops.read_text().splitlines()
    # the entry point never saw the interrupt (it runs on a worker thread), and was still
    # looping: the session ended on Ctrl-C, not at the case's 60 s limit
    assert set(seen) == {"loop x"}  # nor did the second case start
    assert "timeout" not in output


def _loops(path: Path) -> int:
    return path.read_text().count("loop x\n") if path.exists() else 0
