"""Binding the entry point (docs/contract.md#binding) — precedence, fixtures, imports, inputs and
outputs."""

from __future__ import annotations

import time

import pytest

from .conftest import ECHO_APP, Packages

SOURCES_APP = """
def from_cli(text): return "cli"
def from_manifest(text): return "manifest"
def from_ini(text): return "ini"
"""
FIXTURE_CONFTEST = """
import pytest

@pytest.fixture(scope="session")
def elizon_entry():
    return lambda text: "fixture"
"""


@pytest.mark.parametrize(
    ("cli", "fixture", "manifest", "ini", "winner"),
    [
        (True, True, True, True, "cli"),
        (False, True, True, True, "fixture"),
        (False, False, True, True, "manifest"),
        (False, False, False, True, "ini"),
    ],
)
def test_precedence_cli_fixture_manifest_ini(
    packages: Packages, pytester: pytest.Pytester,
    cli: bool, fixture: bool, manifest: bool, ini: bool, winner: str,
) -> None:
    packages.package(
        suite=f"cases:\n  - id: which\n    input: x\n    expect:\n      equals: {winner}\n",
        app=SOURCES_APP, entry="app:from_manifest" if manifest else None)
    if fixture:
        pytester.makeconftest(FIXTURE_CONFTEST)
    if ini:
        pytester.makeini("[pytest]\nelizon_entry = app:from_ini\n")
    args = ["--elizon-entry=app:from_cli"] if cli else []
    pytester.runpytest(*args).assert_outcomes(passed=1)


def test_fixture_uses_other_fixtures_and_a_session_server(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest("""
        import http.server, threading, urllib.request
        import pytest

        @pytest.fixture(scope="session")
        def model_server():
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    body = self.rfile.read(int(self.headers["Content-Length"]))
                    reply = b"served:" + body
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                def log_message(self, *args):
                    pass
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            # a short poll interval: shutdown() waits for the next poll (0.5 s by default)
            threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
            yield f"http://127.0.0.1:{server.server_port}/"
            server.shutdown()
            server.server_close()

        @pytest.fixture
        def elizon_entry(model_server, tmp_path, monkeypatch):
            monkeypatch.setenv("MODEL_NOTE", "patched")
            (tmp_path / "doc.txt").write_text("from a file")
            def call(text):
                request = urllib.request.Request(model_server, data=text.encode(), method="POST")
                with urllib.request.urlopen(request, timeout=5) as response:
                    served = response.read().decode()
                import os
                return f"{served} {(tmp_path / 'doc.txt').read_text()} {os.environ['MODEL_NOTE']}"
            return call
    """)
    packages.package(suite="""
        cases:
          - id: through-the-server
            input: hello
            expect:
              equals: served:hello from a file patched
    """, entry=None)
    result = pytester.runpytest("--setup-show")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SETUP    S model_server*", "*SETUP    F elizon_entry*"])


def test_fixture_is_overridden_per_directory(packages: Packages, pytester: pytest.Pytester
                                             ) -> None:
    pytester.makeconftest(FIXTURE_CONFTEST)
    packages.package("one", entry=None, suite="""
        cases:
          - id: root-fixture
            input: x
            expect: {equals: fixture}
    """)
    packages.package("two", entry=None, suite="""
        cases:
          - id: overridden
            input: x
            expect: {equals: two's own}
    """)
    packages.write("two/conftest.py", """
        import pytest

        @pytest.fixture
        def elizon_entry():
            return lambda text: "two's own"
    """)
    pytester.runpytest().assert_outcomes(passed=2)


def test_two_packages_each_get_their_own_app_module(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    for name in ("first", "second"):
        packages.package(name, app=f"def answer(text):\n    return 'I am {name}'\n", suite=f"""
            cases:
              - id: own-app
                input: x
                expect: {{equals: I am {name}}}
        """)
    pytester.runpytest().assert_outcomes(passed=2)
    # the imports did not leak into sys.modules for later packages / test modules
    pytester.makepyfile(test_after="""
        import sys
        def test_no_leak():
            assert "app" not in sys.modules
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_string_input_is_positional_and_mapping_is_keywords(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=ECHO_APP, suite="""
        cases:
          - id: positional
            input: just text
            expect: {equals: just text}
          - id: keywords
            input:
              question: why
              tone: calm
            expect: {equals: question=why tone=calm}
    """)
    pytester.runpytest().assert_outcomes(passed=2)


OUTPUTS_APP = '''
import asyncio
from pydantic import BaseModel

class Answer(BaseModel):
    route: str
    score: float

def text(x): return "plain"
def mapping(x): return {"route": "records.query", "n": 1, "ok": True, "note": "é"}
def listing(x): return [1, "two", None]
def number(x): return 42
def model(x): return Answer(route="r", score=0.5)
def stream(x):
    yield "str"
    yield "eamed"
async def coroutine(x):
    await asyncio.sleep(0)
    return "awaited"
async def async_stream(x):
    for chunk in ("as", "ync"):
        await asyncio.sleep(0)
        yield chunk
class Callable:
    async def __call__(self, x):
        return "async object"
instance = Callable()
'''


SHAPES = [
    ("text", "plain"),
    ("mapping", '{"route": "records.query", "n": 1, "ok": true, "note": "é"}'),
    ("listing", '[1, "two", null]'),
    ("number", "42"),
    ("model", '{"route": "r", "score": 0.5}'),
    ("stream", "streamed"),
    ("coroutine", "awaited"),
    ("async_stream", "async"),
    ("instance", "async object"),
]


def test_sync_async_and_every_output_shape(packages: Packages, pytester: pytest.Pytester
                                           ) -> None:
    """One package per entry point (attribute) and the text its answer must give, all in
    one run."""
    for attribute, expected in SHAPES:
        packages.package(f"shape-{attribute}", app=OUTPUTS_APP, entry=f"app:{attribute}",
                         suite=f"""
            cases:
              - id: shape
                input: x
                expect:
                  equals: '{expected.replace("'", "''")}'
        """)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=len(SHAPES))
    for attribute, _ in SHAPES:
        result.stdout.fnmatch_lines([f"shape-{attribute}/eval/suite.yaml::shape PASSED*"])


def test_unbound_entry_is_a_setup_error(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(entry=None, suite="cases:\n  - id: a\n    input: x\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "ELIZON_ENTRY_UNBOUND: no entry point is bound for this case (looked at: "
        "--elizon-entry, the elizon_entry fixture, entry: in pkg/elizon.yaml (not set), "
        "ini option elizon_entry*"])
    assert ":None" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("manifest-module", "ELIZON_ENTRY_INVALID: 'nowhere:answer' (entry: in "
                            "pkg/elizon.yaml:2): cannot import 'nowhere': ModuleNotFoundError*"),
        ("manifest-attribute", "ELIZON_ENTRY_INVALID: 'app:missing' (entry: in "
                               "pkg/elizon.yaml:2): 'app' has no attribute 'missing'"),
        # the failing line of the module, not importlib's
        ("manifest-import-error", "ELIZON_ENTRY_INVALID: 'broken:answer' (entry: in "
                                  "pkg/elizon.yaml:2): cannot import 'broken' from *: "
                                  "ZeroDivisionError: division by zero (at */pkg/broken.py:2: "
                                  "RATE = 1 / 0)"),
        ("manifest-syntax-error", "ELIZON_ENTRY_INVALID: 'typo:answer' (entry: in "
                                  "pkg/elizon.yaml:2): cannot import 'typo' from *: "
                                  "SyntaxError: * (at */pkg/typo.py:2: def answer(text:)"),
        ("fixture-not-callable", "ELIZON_ENTRY_INVALID: the elizon_entry fixture "
                                 "(conftest.py:3) gave int 42, which is not callable*"),
        ("ini-module", "ELIZON_ENTRY_INVALID: 'gone:x' (ini option elizon_entry in "
                       "*tox.ini): cannot import 'gone'*"),
    ],
)
def test_invalid_entry_says_where_it_came_from(
    packages: Packages, pytester: pytest.Pytester, where: str, expected: str
) -> None:
    entry = {"manifest-module": "nowhere:answer", "manifest-attribute": "app:missing",
             "manifest-import-error": "broken:answer",
             "manifest-syntax-error": "typo:answer"}.get(where)
    packages.package(app=ECHO_APP, entry=entry, suite="cases:\n  - id: a\n    input: x\n")
    packages.write("pkg/broken.py", "import json\nRATE = 1 / 0\n")
    packages.write("pkg/typo.py", "import json\ndef answer(text:\n    return text\n")
    if where == "fixture-not-callable":
        pytester.makeconftest("import pytest\n\n@pytest.fixture\ndef elizon_entry():\n"
                              "    return 42\n")
    if where == "ini-module":
        pytester.makefile(".ini", tox="[pytest]\nelizon_entry = gone:x\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([expected])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("--elizon-entry=app.answer", "ERROR: --elizon-entry=app.answer: expected "
                                      "'module.path:attribute'*"),
        ("--elizon-entry={command: []}", "ERROR: --elizon-entry={command: []}: not a process "
                                         "entry {command, cwd, env, output}: command: *"),
        ("ini", "ERROR: ini option elizon_entry in *tox.ini={command: x}: not a process entry "
                "{command, cwd, env, output}: command: *"),
    ],
)
def test_a_bad_entry_option_or_ini_value_is_one_usage_error(
    packages: Packages, pytester: pytest.Pytester, where: str, expected: str
) -> None:
    """Text given to the whole session is checked once at start-up: one usage error, not
    an error per case."""
    packages.package(app=ECHO_APP, suite="cases:\n" + "".join(
        f"  - id: case-{n}\n    input: x\n" for n in range(3)))
    if where == "ini":
        pytester.makefile(".ini", tox="[pytest]\nelizon_entry = {command: x}\n")
    result = pytester.runpytest(*([where] if where != "ini" else []))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])
    output = result.stdout.str() + result.stderr.str()
    assert output.count("ERROR") == 1, output
    assert "ELIZON_ENTRY_INVALID" not in output


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_help_describes_the_entry_forms_and_the_ini_key_as_the_weakest_source(
    pytester: pytest.Pytester
) -> None:
    text = _flat(pytester.runpytest("--help").stdout.str())
    option = text[text.index("--elizon-entry=SPEC"):text.index("--elizon-timeout=")]
    assert "'module.path:attribute'" in option
    assert "{command: [" in option
    assert "{url: http" in option
    assert "output: text|json" in option
    ini = text[text.index("elizon_entry (string):"):text.index("elizon_timeout (string):")]
    assert "weakest source" in ini
    assert "overrid" not in ini  # it beats nothing
    assert "beating" not in ini
    judge_ini = text[text.index("elizon_judge (string):"):text.index("elizon_route_key")]
    assert "weakest source" in judge_ini
    assert "overrid" not in judge_ini


ENDLESS_APP = """
import os
import time

def note(path, count):  # whole or not at all: the test may read it at any moment
    with open(path + ".tmp", "w") as f:
        f.write(str(count))
    os.replace(path + ".tmp", path)

def endless(text):
    pulled = 0
    try:
        while pulled < 5000:  # ends by itself after a while, should nothing ever close it
            pulled += 1
            note(PULLED, pulled)
            time.sleep(0.005)
            yield "chunk "
    except GeneratorExit:  # closed by whoever reads it
        note(PULLED + ".closed", pulled)
        raise
"""


def test_an_endless_stream_times_out_and_is_closed(packages: Packages,
                                                   pytester: pytest.Pytester) -> None:
    """A generator that never ends is a timeout, and the reader closes it at the deadline
    instead of pulling chunks in an abandoned thread for ever."""
    pulled = pytester.path / "pulled"
    packages.package(app=f"PULLED = {str(pulled)!r}\n" + ENDLESS_APP, entry="app:endless",
                     suite="cases:\n  - id: streams\n    input: x\n")
    # 0.5 s: the generator must have made its first step (a stalled machine can delay it)
    result = pytester.runpytest("--elizon-timeout=0.5")
    assert result.parseoutcomes() == {"timeout": 1}
    closed = pulled.with_name("pulled.closed")
    for _ in range(100):  # the reader notices the deadline at the next chunk
        if closed.exists():
            break
        time.sleep(0.05)
    assert closed.exists(), f"the generator was not closed ({pulled.read_text()} chunks pulled)"
    count = int(closed.read_text())
    assert 0 < count < 5000
    assert int(pulled.read_text()) == count  # and no chunk was pulled after it


def test_a_session_fixture_is_set_up_once_and_a_function_fixture_for_every_case(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """Cases after the first take a session-scoped entry fixture's value as pytest caches
    it; what is not session-wide (an autouse function fixture, a fixture it depends on)
    still runs for every case, and a session fixture that raised errs every case."""
    packages.package(suite="cases:\n" + "".join(
        f"  - id: c{n}\n    input: x\n    expect: {{equals: session-1}}\n" for n in range(4)))
    packages.write("conftest.py", """
import itertools, pytest

made = itertools.count(1)

@pytest.fixture(scope="session")
def elizon_entry():
    name = f"session-{next(made)}"
    return lambda text: name

@pytest.fixture(autouse=True)
def every_case(request):
    print("CASE", request.node.name)
""")
    result = pytester.runpytest("-s", "-p", "no:cacheprovider", "--setup-show")
    result.assert_outcomes(passed=4)
    assert result.stdout.str().count("CASE c") == 4
    assert result.stdout.str().count("SETUP    S elizon_entry") == 1
    assert result.stdout.str().count("SETUP    F every_case") == 4

    packages.write("conftest.py", """
import pytest

@pytest.fixture(scope="session")
def elizon_entry():
    raise RuntimeError("no model today")
""")
    failed = pytester.runpytest("-p", "no:cacheprovider")
    failed.assert_outcomes(errors=4)
    assert failed.stdout.str().count("RuntimeError: no model today") >= 4


def test_a_session_fixture_a_test_set_up_again_with_its_own_parameter_is_not_reused(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """A Python test between two packages parametrizes the session-scoped entry fixture
    indirectly: pytest sets it up again for the cases after it, and they get that value,
    not the test's."""
    suite = "cases:\n  - id: c1\n    input: x\n    expect: {equals: plain}\n" \
            "  - id: c2\n    input: x\n    expect: {equals: plain}\n"
    packages.package("a_first", suite=suite)
    packages.package("c_last", suite=suite)
    packages.write("conftest.py", """
import pytest

@pytest.fixture(scope="session")
def elizon_entry(request):
    tag = getattr(request, "param", "plain")
    return lambda text: tag
""")
    packages.write("b_between_test.py", """
import pytest

@pytest.mark.parametrize("elizon_entry", ["theirs"], indirect=True)
def test_between(elizon_entry):
    assert elizon_entry("x") == "theirs"
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=5)
    assert result.stdout.str().index("a_first") < result.stdout.str().index("test_between") \
        < result.stdout.str().index("c_last/eval/suite.yaml::c1")
