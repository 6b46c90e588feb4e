"""Helpers shared by the plugin's tests: write real Elizon packages into a pytester dir."""

from __future__ import annotations

import contextlib
import functools
import gc
import http.server
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import _pytest._code.code
import cryptography.hazmat.primitives.serialization  # noqa: F401 - see below
import httpcore  # noqa: F401 - see below
import httpx  # noqa: F401 - see below
import jsonschema
import junit_xml  # noqa: F401 - see below
import pluggy
import pytest
import regex  # noqa: F401 - see below
import yaml  # noqa: F401 - see below

# pytester's in-process runs drop modules first imported inside them; httpx imports httpcore
# lazily and keeps its exception classes, so import it here, once, for the whole session.
# Signing's cryptography classes likewise: a key serialised after an inner run dropped them
# fails the library's own isinstance checks. PyYAML too: the plugin imports it only for a
# file not in the suite cache, and its C parser, which outlives a dropped module, would go
# on making events of the dropped module's classes. And what the plugin imports lazily that
# no test module imports (regex for `matches`, junit_xml, httpx): else the dozens of inner
# runs that need one would each import it again (10-110 ms each).

pytest_plugins = ["pytester"]

# The tests start many Python processes (xdist workers, the elizon-eval command, commands
# as entry points): let them keep compiled modules, even where the environment says not to
# (PYTHONDONTWRITEBYTECODE), instead of compiling the plugin again in each one.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


class Packages:
    """Writes packages (manifest, suite files, Python apps) as a user would."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.root = pytester.path

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def package(
        self,
        name: str = "pkg",
        *,
        suite: str,
        app: str | None = None,
        entry: str | None = "app:answer",
        gate: str = "must-pass",
        baseline: str = "",
    ) -> Path:
        """A package folder with elizon.yaml, eval/suite.yaml and (optionally) app.py."""
        lines = [f"name: {name}"]
        if entry:
            lines.append(f"entry: {entry}")
        lines += ["evaluation:", "  suite: ./eval/suite.yaml", f"  gate: {gate}"]
        if baseline:
            lines.append("  authorBaseline:")
            lines += [f"    {item}" for item in baseline.split(";")]
        self.write(f"{name}/elizon.yaml", "\n".join(lines) + "\n")
        self.write(f"{name}/eval/suite.yaml", suite)
        if app is not None:
            self.write(f"{name}/app.py", app)
        return self.root / name


@functools.cache
def _results_validator() -> Any:
    from pytest_elizon_eval.reporting import results
    schema = results.schema()
    kind = jsonschema.validators.validator_for(schema)
    kind.check_schema(schema)
    return kind(schema)


def validate_results(data: Any) -> None:
    """``jsonschema.validate(data, results.schema())``: the schema checked, and its validator
    built, once per session rather than once a call (a tenth of a second each)."""
    _results_validator().validate(data)


@pytest.fixture
def packages(pytester: pytest.Pytester) -> Packages:
    return Packages(pytester)


ECHO_APP = """
def answer(text=None, **named):
    return text if text is not None else " ".join(f"{k}={v}" for k, v in sorted(named.items()))
"""


def ci_step_env(**extra: str) -> dict[str, str]:
    """The environment of a CI step's process: this one's, without GitHub's, the plugin's
    or pytest's own variables, and ``extra``. pytest there loads the plugins a user's
    install has (ours and pytest-xdist's), not every test-only one installed here: each of
    hypothesis' and the SDKs' plugins would cost every process and xdist worker a start-up
    of its own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "ELIZON_", "PYTEST_"))}
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
               PYTEST_PLUGINS=",".join(_INNER_PLUGINS))
    env.update(extra)
    return env


def elizon_eval(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``elizon-eval *args`` in ``cwd``, with a CI step's environment and ``env``, in this
    process through ``cli.main``, which is all the console script calls: a process per call
    would only add its start-up. (test_cli's workflow, terminal and keygen tests, test_reference
    and test_attestation's first verdict run the script itself.)"""
    import contextlib
    import io

    from pytest_elizon_eval import cli  # deferred: the plugin's own modules load first

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        patch.chdir(cwd)
        step = ci_step_env()
        for name in [name for name in os.environ if name not in step]:
            patch.delenv(name)  # what a CI step does not have
        for name, value in env.items():
            patch.setenv(name, value)
        try:
            status = cli.main(list(args))
        except SystemExit as exit_:  # argparse's usage errors
            status = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(["elizon-eval", *args], status, out.getvalue(),
                                       err.getvalue())


@pytest.fixture(autouse=True)
def _quiet_inner_runs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    # pytester runs pytest in this process, where the plugin is already imported; pytest may
    # then warn that it cannot assertion-rewrite it. That is an artefact of in-process runs,
    # not something a user sees, so inner runs ignore that one warning. (pytester clears
    # PYTEST_ADDOPTS when it is set up, so set it after pytester.)
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
        options = ["-W ignore::pytest.PytestAssertRewriteWarning", *_plugins(request)]
        monkeypatch.setenv("PYTEST_ADDOPTS", " ".join(options))
        # Inner runs print what a user's terminal shows wherever these tests run: pytest
        # prints short-summary lines in full, not cut to the width, where CI or
        # BUILD_NUMBER is set (as in the project's CI), and tests match those lines.
        for name in ("CI", "BUILD_NUMBER"):
            monkeypatch.delenv(name, raising=False)


_INNER_PLUGINS = ("pytest_elizon_eval.plugin", "xdist.plugin", "xdist.looponfail")


def _plugins(request: pytest.FixtureRequest) -> list[str]:
    """The plugins of inner runs: ours and pytest-xdist's, as a user's install has them, and
    the entry-point names a test module lists in ``INNER_ENTRY_POINTS`` (pytest-html's, say),
    and no others. Whatever else is installed here (hypothesis, say) never joins an inner
    run, where its warnings would be errors and break tests it has nothing to do with; and
    naming the plugins spares each of the hundreds of inner runs reading every installed
    package's metadata. pytest's unraisable- and thread-exception checks are left out, as
    they end every session with full garbage collections of this test process."""
    left_out = ["-p no:unraisableexception", "-p no:threadexception"]
    named = [f"-p {name}" for name in getattr(request.module, "INNER_ENTRY_POINTS", ())]
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    # In-process runs get the same modules as plugin objects, registered under the names
    # that ``-p`` gives them: pytest then finds each ``-p`` below already registered, where
    # it would otherwise first look the name up among every installed package's entry points
    # (a few ms per name and run). Subprocess runs import them through ``-p``.
    pytester: pytest.Pytester = request.getfixturevalue("pytester")
    inline_run = pytester.inline_run
    modules = [sys.modules[name] for name in _INNER_PLUGINS]

    def with_plugins(*args: Any, plugins: Any = (), **kwargs: Any) -> Any:
        return inline_run(*args, plugins=[*modules, *plugins], **kwargs)

    monkeypatch.setattr(pytester, "inline_run", with_plugins)
    # The history store (docs/contract.md#history) is on by default, and creating one costs
    # a few fsyncs per run: inner runs keep it off unless their module sets INNER_HISTORY
    # (test_history) or the run names a store itself (a later --elizon-history wins).
    history = [] if getattr(request.module, "INNER_HISTORY", False) \
        else ["--elizon-history=off"]
    return [f"-p {name}" for name in _INNER_PLUGINS] + named + left_out + history


def _share_pytest_source_trees() -> None:
    """An inner run that ends in a collection error (pytest's ``Interrupted``) has its
    traceback rendered in full, though only its last line is shown, and rendering parses each
    source file of the traceback (pytest's and pluggy's own, ~0.1 s a run). Those files do not
    change during the session: their syntax trees are kept for every later run (files the
    tests write are parsed as before)."""
    code = getattr(_pytest._code, "code", None)
    entry = getattr(code, "TracebackEntry", None)
    if entry is None or not hasattr(entry, "getsource"):
        return  # another pytest: every run parses them, as it would anyway
    roots = tuple(str(Path(m.__file__).parent) + os.sep for m in (_pytest, pluggy))
    trees: dict[Any, Any] = {}
    getsource = entry.getsource

    def shared(self: Any, astcache: Any = None) -> Any:
        if str(self.frame.code.path).startswith(roots):
            astcache = trees
        return getsource(self, astcache)

    entry.getsource = shared


_share_pytest_source_trees()


#: Runs pytest with SIGINT as a terminal gives it, even when this process inherited it ignored
#: (a shell's background job): else Ctrl-C would never reach the session under test.
PYTEST_WITH_CTRL_C = ("import signal, sys, pytest; "
                      "signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "sys.exit(pytest.main(sys.argv[1:]))")


def interrupt_when(process: subprocess.Popen[str], ready: Callable[[], bool]) -> str:
    """Send SIGINT once ``ready()`` and return the output; the process is always reaped.
    The bounds are for safety only: what the test proves comes from the logs."""
    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert process.poll() is None, "the session ended before it was interrupted"
            assert time.monotonic() < deadline, "the session never got under way"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
        return output
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def imported_by_a_session(folder: Path, *args: str, among: tuple[str, ...]
                          ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """A fresh process runs ``pytest -q ARGS`` in ``folder`` with only the plugin loaded;
    its result, and which of the modules ``among`` (full names or top-level packages) the
    session imported."""
    script = ("import sys, pytest\n"
              "code = pytest.main(['-q', '-p', 'pytest_elizon_eval.plugin', *sys.argv[1:]])\n"
              f"print(sorted(m for m in {among!r} if m in sys.modules))\n"
              "sys.exit(code)\n")
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=folder, env=env,
                          capture_output=True, text=True, check=False)
    last = done.stdout.rstrip().splitlines()[-1] if done.stdout.strip() else ""
    return done, [m for m in among if repr(m) in last]


def pytest_collection_finish(session: pytest.Session) -> None:
    # Everything loaded so far lives for the whole run: leave it out of every later garbage
    # collection (each of the hundreds of inner pytest runs would otherwise walk it again).
    gc.collect()
    gc.freeze()
    # The inner runs allocate millions of short-lived objects: fewer, larger young
    # collections, and so fewer full ones (garbage is still collected, a little later).
    gc.set_threshold(10_000, 10, 10)
    _frozen_at[0] = len(sys.modules)


_frozen_at = [0]  # len(sys.modules) when the heap was last frozen


def pytest_runtest_logfinish() -> None:
    # Test-only libraries (the SDKs, scipy, selenium...) are imported by the tests that need
    # them and stay imported: once a test has imported many modules, collect and freeze
    # again, or every later full collection walks all of their objects (seconds in all).
    # (A module an in-process pytest run imported is dropped after it, so not counted.)
    if len(sys.modules) > _frozen_at[0] + 50:
        gc.collect()
        gc.freeze()
        _frozen_at[0] = len(sys.modules)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Before other plugins' end-of-run hooks: gc.get_referrers cannot see frozen objects, and
    # hypothesis, if installed, is imported by its terminal summary and asks it who refers to
    # trio's PRNG (trio comes with selenium); a frozen referrer looks like none, and its
    # warning would be an error here.
    gc.unfreeze()


@contextlib.contextmanager
def loopback(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 serving ``handler``, as its base URL; shut down
    and closed on leaving."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def start_pytest(pytester: pytest.Pytester, *args: str, name: str = "started"
                 ) -> Callable[[], pytest.RunResult]:
    """``pytester.runpytest_subprocess(*args)`` started now, its result when the returned
    function is called: the process runs meanwhile. (Output goes to files, as pytester's
    does, so a long output never blocks the process; ``name`` tells apart the files of
    runs started side by side.)"""
    basetemp = pytester.path / f"runpytest-{name}"
    basetemp.mkdir()
    with (pytester.path / f"{name}.out").open("w", encoding="utf-8") as out, \
            (pytester.path / f"{name}.err").open("w", encoding="utf-8") as err:
        process = pytester.popen([sys.executable, "-mpytest", f"--basetemp={basetemp}", *args],
                                 stdout=out, stderr=err)

    def result() -> pytest.RunResult:
        try:
            ret = process.wait(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        lines = [(pytester.path / f"{name}.{stream}").read_text(encoding="utf-8").splitlines()
                 for stream in ("out", "err")]
        with contextlib.suppress(ValueError):  # as pytester gives it: an ExitCode if one
            ret = pytest.ExitCode(ret)
        return pytest.RunResult(ret, *lines, 0.0)

    return result
