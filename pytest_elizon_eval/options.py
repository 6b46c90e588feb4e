"""Command-line options and ini keys, resolved once into frozen :class:`Settings`.

Each setting's help text is written once and shared by ``addoption`` and
``addini`` (the entry and the judge have two: on the command line they beat
every other source, in an ini file they are the weakest). :func:`resolve`
reads them in one documented order (command line, then ini, then the
default), checks every value once — an entry or judge given as text
included — and says where a bad value came from.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .binding import ENTRY, JUDGE, Kind, Source, parse_text
from .cassette import Cassette
from .concurrency import MAX_CONCURRENCY
from .retrying import RetryPolicy

if TYPE_CHECKING:  # types only: signing is imported when a results file is to be signed
    from .signing import SigningKey

__all__ = ["HARD_LIMIT_S", "SETTINGS", "Settings", "register", "resolve"]

#: Elizon's hard per-case limit; options may lower it, never raise it
#: (docs/contract.md#time-limits).
HARD_LIMIT_S = 90.0

_HELP = {
    "entry": "Entry point for every case, beating fixtures, manifests and ini: "
             "'module.path:attribute', '{command: [argv, ...], output: text|json}' or "
             "'{url: http://..., headers: {...}, output: text|json}'.",
    "entry_ini": "Entry point for the cases nothing else binds one for (the weakest source: "
                 "--elizon-entry, an elizon_entry fixture and a manifest's entry: all win); "
                 "the same forms as --elizon-entry.",
    "timeout": f"Per-case time limit in seconds; may only lower the {HARD_LIMIT_S:g} s hard limit.",
    "judge": "Judge for 'judge:' assertions, beating fixtures, manifests and ini: "
             "'module.path:attribute' or '{url: ..., model: ..., apiKeyEnv: ...}'.",
    "judge_ini": "Judge for the cases nothing else binds one for (the weakest source: "
                 "--elizon-judge, an elizon_judge fixture and a manifest's judge: all win).",
    "route_key": "Key of the route in structured output for 'route:' (a dotted path for "
                 "nested keys; default: route).",
    "junit": "Write JUnit XML of every case to PATH (one testsuite per suite).",
    "markdown": "Write the markdown summary to PATH (it is also appended to "
                "$GITHUB_STEP_SUMMARY when that is set).",
    "results": "Write every result, metric and the verdict as JSON to PATH.",
    "html": "Write one self-contained HTML page of the run (verdict, charts, every case) "
            "to PATH.",
    "baseline": "An earlier --elizon-results file: report what regressed, improved or stayed.",
    "annotations": "GitHub Actions annotations for cases that did not pass: auto (when "
                   "GITHUB_ACTIONS=true), on or off.",
    "record": "Record every case's entry-point result into the cassette file PATH.",
    "replay": "Answer every case from the cassette file PATH instead of calling the entry point.",
    "concurrency": "Run up to N cases at once in this process (1-64; per worker with -n), "
                   "for I/O-bound model calls (default 1); 'auto' or 'auto:MAX' adapts per "
                   "entry point (per host for HTTP) to its rate limit, up to MAX (default 64).",
    "retries": "Retries of a call refused with 429/502/503/504, a connection reset or "
               "RateLimited, within the case's time limit (default 4; 0: none).",
    "retry_on": "Further exception classes that mean 'rate limited', by dotted name (e.g. "
                "openai.RateLimitError); their retry_after or response.headers are read.",
    "retry_backoff": "Backoff without a hint from the server: 'BASE CAP' in seconds "
                     "(default '0.5 8'); the wait is uniform in [0, min(CAP, BASE*2^n)].",
    "strict": "Treat advisory suites as must-pass: their failures fail the run.",
    "prices": "Prices to cost token usage that reports no cost: one 'MODEL INPUT OUTPUT' line "
              "per model, in US dollars per 1M input and output tokens (a manifest's "
              "prices: wins for its package).",
    "suite_files": "Glob patterns of stand-alone suite files to collect (default: *.eval.yaml).",
    "sign_key": "Sign the --elizon-results file with the Ed25519 private key in the PEM file "
                "PATH (written beside it as RESULTS.sig); else ini elizon_sign_key, else the "
                "PEM in $ELIZON_SIGN_KEY. Create keys with 'elizon-eval keygen DIR'.",
}


@dataclass(frozen=True)
class Settings:
    """Every elizon setting of a session, validated."""

    #: ``--elizon-entry`` / ``--elizon-judge`` by key (``entry``, ``judge``): the strongest
    #: sources, checked (a value is a spec string or a validated mapping, or None).
    cli: dict[str, Source]
    #: ini ``elizon_entry`` / ``elizon_judge`` by key: the weakest sources, checked.
    ini: dict[str, Source]
    route_key: str
    timeout_s: float
    timeout_source: str
    strict: bool
    suite_globs: tuple[str, ...]
    junit: Path | None
    markdown: Path | None
    results: Path | None
    baseline: Path | None
    annotations: bool
    #: ``$GITHUB_STEP_SUMMARY``, where the markdown summary is appended.
    step_summary: Path | None
    concurrency: int
    record: Path | None
    #: The cassette replayed, read once per process.
    replay: Cassette | None
    #: ini ``elizon_prices``: US dollars per 1M input and output tokens, by model name.
    prices: dict[str, tuple[float, float]]
    #: ``--elizon-html`` / ini ``elizon_html``: the HTML report's path.
    html: Path | None = None
    #: ``--elizon-sign-key`` / ini ``elizon_sign_key`` / ``$ELIZON_SIGN_KEY``: signs the
    #: results file (docs/contract.md#signatures). Its repr shows the fingerprint only.
    sign_key: SigningKey | None = None
    #: ``--elizon-concurrency=auto[:MAX]``: ``concurrency`` is MAX, found per entry point.
    concurrency_auto: bool = False
    #: ``--elizon-retries`` / ini ``elizon_retries``, ``elizon_retry_on``,
    #: ``elizon_retry_backoff`` (docs/contract.md#retries).
    retry: RetryPolicy = field(default_factory=RetryPolicy)


SETTINGS = pytest.StashKey[Settings]()


def register(parser: pytest.Parser) -> None:
    """Add the ``--elizon-*`` options and ``elizon_*`` ini keys."""
    group = parser.getgroup("elizon", "Elizon evaluation suites")
    group.addoption("--elizon-entry", metavar="SPEC", default=None, help=_HELP["entry"])
    group.addoption("--elizon-timeout", metavar="SECONDS", default=None, help=_HELP["timeout"])
    group.addoption("--elizon-judge", metavar="SPEC", default=None, help=_HELP["judge"])
    group.addoption("--elizon-junit", metavar="PATH", default=None, help=_HELP["junit"])
    group.addoption("--elizon-markdown", metavar="PATH", default=None, help=_HELP["markdown"])
    group.addoption("--elizon-results", metavar="PATH", default=None, help=_HELP["results"])
    group.addoption("--elizon-html", metavar="PATH", default=None, help=_HELP["html"])
    group.addoption("--elizon-baseline", metavar="PATH", default=None, help=_HELP["baseline"])
    group.addoption("--elizon-annotations", choices=("auto", "on", "off"), default="auto",
                    help=_HELP["annotations"])
    group.addoption("--elizon-record", metavar="PATH", default=None, help=_HELP["record"])
    group.addoption("--elizon-replay", metavar="PATH", default=None, help=_HELP["replay"])
    group.addoption("--elizon-concurrency", metavar="N", default=None,
                    help=_HELP["concurrency"])
    group.addoption("--elizon-retries", metavar="N", default=None, help=_HELP["retries"])
    group.addoption("--elizon-strict", action="store_true", default=False, help=_HELP["strict"])
    group.addoption("--elizon-sign-key", metavar="PATH", default=None, help=_HELP["sign_key"])
    parser.addini("elizon_entry", _HELP["entry_ini"], default=None)
    parser.addini("elizon_timeout", _HELP["timeout"], default=None)
    parser.addini("elizon_judge", _HELP["judge_ini"], default=None)
    parser.addini("elizon_route_key", _HELP["route_key"], default="route")
    parser.addini("elizon_concurrency", _HELP["concurrency"], default=None)
    parser.addini("elizon_retries", _HELP["retries"], default=None)
    parser.addini("elizon_retry_on", _HELP["retry_on"], type="args", default=[])
    parser.addini("elizon_retry_backoff", _HELP["retry_backoff"], default=None)
    parser.addini("elizon_strict", _HELP["strict"], type="bool", default=False)
    parser.addini("elizon_html", _HELP["html"], default=None)
    parser.addini("elizon_prices", _HELP["prices"], type="linelist", default=[])
    parser.addini("elizon_sign_key", _HELP["sign_key"], default=None)
    parser.addini("elizon_suite_files", _HELP["suite_files"], type="args",
                  default=["*.eval.yaml"])


def _ini_source(config: pytest.Config, name: str) -> str:
    where = f" in {config.inipath}" if config.inipath else ""
    return f"ini option {name}{where}"


def _option_or_ini(config: pytest.Config, name: str) -> tuple[str | None, str]:
    """The value of ``--name`` or else of ini ``name``, and where it came from."""
    raw = config.getoption(name)
    if raw is not None:
        return raw, f"--{name.replace('_', '-')}={raw}"
    raw = config.getini(name)
    return (raw or None), f"{_ini_source(config, name)} ({raw!r})"


def _timeout(config: pytest.Config) -> tuple[float, str]:
    raw, source = _option_or_ini(config, "elizon_timeout")
    if raw is None:
        return HARD_LIMIT_S, f"the {HARD_LIMIT_S:g} s hard limit"
    try:
        value = float(raw)
    except ValueError:
        raise pytest.UsageError(f"{source}: not a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= HARD_LIMIT_S):
        raise pytest.UsageError(
            f"{source}: the time limit must be more than 0 and at most {HARD_LIMIT_S:g} seconds "
            "(it can lower the hard limit, never raise it)")
    return value, source


def _route_key(config: pytest.Config) -> str:
    key = str(config.getini("elizon_route_key") or "route").strip()
    if not all(part.strip() for part in key.split(".")):
        raise pytest.UsageError(f"{_ini_source(config, 'elizon_route_key')} ({key!r}): "
                                "expected a key or a dotted path such as 'decision.route'")
    return key


def _path(config: pytest.Config, name: str) -> Path | None:
    value = config.getoption(name)
    if not value:
        return None
    return Path(config.invocation_params.dir, os.path.expanduser(value))


def _html_path(config: pytest.Config) -> Path | None:
    """``--elizon-html``, else ini ``elizon_html``; relative to where pytest was started, like
    every report path."""
    raw, _ = _option_or_ini(config, "elizon_html")
    if not raw or not str(raw).strip():
        return None
    return Path(config.invocation_params.dir, os.path.expanduser(str(raw).strip()))


def _annotations(config: pytest.Config) -> bool:
    choice = config.getoption("elizon_annotations")
    if choice == "auto":
        return os.environ.get("GITHUB_ACTIONS") == "true"
    return bool(choice == "on")


def _concurrency(config: pytest.Config) -> tuple[int, bool]:
    """(N or MAX, whether it adapts): ``N`` or ``auto[:MAX]``."""
    raw, source = _option_or_ini(config, "elizon_concurrency")
    if raw is None:
        return 1, False
    text = str(raw).strip()
    auto = text == "auto" or text.startswith("auto:")
    if text == "auto":
        return MAX_CONCURRENCY, True
    try:
        value = int(text[len("auto:"):] if auto else text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_CONCURRENCY:
        raise pytest.UsageError(f"{source}: expected a whole number from 1 to "
                                f"{MAX_CONCURRENCY}, or auto, or auto:MAX with MAX from 1 to "
                                f"{MAX_CONCURRENCY}")
    return value, auto


def _dotted_name(name: str) -> bool:
    """``package.module.Class``: names Python could import (``not.a.Class`` is none)."""
    import keyword

    parts = name.split(".")
    return len(parts) > 1 and all(p.isidentifier() and not keyword.iskeyword(p) for p in parts)


def _installed(package: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def _retry_on(config: pytest.Config) -> tuple[type[BaseException], ...]:
    """ini ``elizon_retry_on``: exception classes by dotted name, imported now. A class of a
    package that is not installed is skipped with one warning: it can never be raised, and
    one ini serves environments with different SDKs installed."""
    import importlib

    found: list[type[BaseException]] = []
    skipped: list[str] = []
    for name in config.getini("elizon_retry_on"):
        module, _, attribute = str(name).rpartition(".")
        value: object = None
        why = ""
        if _dotted_name(str(name)):
            if not _installed(module.split(".")[0]):
                skipped.append(name)
                continue
            try:
                value = getattr(importlib.import_module(module), attribute, None)
            except Exception as exc:  # any import failure is the same usage error
                why = f"; importing {module} failed: {type(exc).__name__}: {exc}"
        if not (isinstance(value, type) and issubclass(value, BaseException)):
            raise pytest.UsageError(
                f"{_ini_source(config, 'elizon_retry_on')}: {name!r} is not an importable "
                f"exception class (expected a dotted name such as openai.RateLimitError){why}")
        found.append(value)
    if skipped and not hasattr(config, "workerinput"):  # once per run, not per xdist worker
        packages = ", ".join(sorted({n.split(".")[0] for n in skipped}))
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"{_ini_source(config, 'elizon_retry_on')}: skipped {', '.join(skipped)}: "
            f"not installed here ({packages}), so nothing can raise "
            f"{'them' if len(skipped) > 1 else 'it'}"), stacklevel=2)
    return tuple(found)


def _retry(config: pytest.Config) -> RetryPolicy:
    raw, source = _option_or_ini(config, "elizon_retries")
    retries = 4
    if raw is not None:
        try:
            retries = int(str(raw).strip())
        except ValueError:
            retries = -1
        if not 0 <= retries <= 100:
            raise pytest.UsageError(f"{source}: expected a whole number of retries from 0 "
                                    "to 100 (0 turns retries off)")
    backoff = config.getini("elizon_retry_backoff")
    base, cap = 0.5, 8.0
    if backoff:
        try:
            base, cap = (float(part) for part in str(backoff).split())
            if not (math.isfinite(base + cap) and 0 < base <= cap):
                raise ValueError
        except ValueError:
            raise pytest.UsageError(
                f"{_ini_source(config, 'elizon_retry_backoff')} ({backoff!r}): expected "
                "'BASE CAP' in seconds with 0 < BASE <= CAP, e.g. '0.5 8'") from None
    return RetryPolicy(retries=retries, base_s=base, cap_s=cap, retry_on=_retry_on(config))


def _sources(config: pytest.Config, kind: Kind) -> tuple[Source, Source]:
    """(command line, ini) sources of ``kind``, each checked now: a bad value is one usage
    error naming where it came from, not one error per case."""
    name = f"elizon_{kind.key}"
    found = []
    for raw, where in ((config.getoption(name), kind.option),
                       (config.getini(name) or None, _ini_source(config, name))):
        value: object = None
        if raw is not None:
            try:
                value = parse_text(str(raw), kind)
            except ValueError as exc:
                raise pytest.UsageError(f"{where}={raw}: {exc}") from None
        found.append(Source(value, where))
    return found[0], found[1]


def _strict(config: pytest.Config) -> bool:
    if config.getoption("elizon_strict"):
        return True
    try:
        return bool(config.getini("elizon_strict"))
    except (ValueError, pytest.UsageError) as exc:  # pytest 8 raises the first, 9 the second
        reason = str(exc).rsplit(": ", 1)[-1]
        raise pytest.UsageError(f"{_ini_source(config, 'elizon_strict')}: {reason}; expected "
                                "true or false") from None


def _prices(config: pytest.Config) -> dict[str, tuple[float, float]]:
    """ini ``elizon_prices``: one ``MODEL INPUT OUTPUT`` line per model (US dollars per 1M
    input and output tokens)."""
    prices: dict[str, tuple[float, float]] = {}
    for line in config.getini("elizon_prices"):
        parts = line.split()
        try:
            model, per_input, per_output = parts[0], float(parts[1]), float(parts[2])
            if len(parts) != 3 or min(per_input, per_output) < 0 \
                    or not math.isfinite(per_input + per_output):
                raise ValueError
        except (ValueError, IndexError):
            raise pytest.UsageError(
                f"{_ini_source(config, 'elizon_prices')}: {line!r}: expected 'MODEL INPUT "
                "OUTPUT' (US dollars per 1M input and output tokens, e.g. "
                "'gpt-4o-mini 0.15 0.60')") from None
        prices[model] = (per_input, per_output)
    return prices


def _cassette(config: pytest.Config) -> Cassette | None:
    path = _path(config, "elizon_replay")
    if path is None:
        return None
    if config.getoption("elizon_record"):
        raise pytest.UsageError("--elizon-record and --elizon-replay cannot be used together")
    try:
        return Cassette.load(path)
    except ValueError as exc:
        raise pytest.UsageError(f"--elizon-replay={path}: {exc}") from None


def _sign_key(config: pytest.Config, results: Path | None) -> SigningKey | None:
    """The key that signs the results file: a PEM file named by the option or the ini key,
    else the PEM held by ``$ELIZON_SIGN_KEY``. Errors name the source, never the key."""
    raw = config.getoption("elizon_sign_key")
    if raw is not None and results is None:
        raise pytest.UsageError("--elizon-sign-key signs the results file: give "
                                "--elizon-results=PATH too")
    if results is None:  # an ini key or a CI-wide variable: nothing to sign in this run
        return None
    from .signing import SigningKey  # deferred: only a run that writes a results file signs

    ini = config.getini("elizon_sign_key")
    for value, where in ((raw, "--elizon-sign-key"), (ini, "ini option elizon_sign_key")):
        if value and ("PRIVATE KEY" in str(value) or "\n" in str(value)):
            # Never echoed: a key pasted where a path belongs must not reach a log.
            raise pytest.UsageError(f"{where} takes the path of a key file, not the key "
                                    "itself; put the key's PEM in $ELIZON_SIGN_KEY instead")
    try:
        if raw is not None:
            path = Path(config.invocation_params.dir, os.path.expanduser(raw))
            return SigningKey.from_file(path, f"--elizon-sign-key={path}")
        if ini:
            base = config.inipath.parent if config.inipath else config.rootpath
            path = Path(base, os.path.expanduser(str(ini).strip()))
            return SigningKey.from_file(path, f"{_ini_source(config, 'elizon_sign_key')} "
                                              f"({path})")
        env = os.environ.get("ELIZON_SIGN_KEY", "")
        if env.strip():
            return SigningKey.from_pem(env.encode("utf-8", "replace"),
                                       "$ELIZON_SIGN_KEY (it holds the PEM of the key itself)")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return None


def resolve(config: pytest.Config) -> Settings:
    """Read and check every setting; a bad value is a usage error naming its source."""
    timeout_s, timeout_source = _timeout(config)
    globs = tuple(config.getini("elizon_suite_files"))
    entry, judge = _sources(config, ENTRY), _sources(config, JUDGE)
    concurrency, auto = _concurrency(config)
    return Settings(
        cli={ENTRY.key: entry[0], JUDGE.key: judge[0]},
        ini={ENTRY.key: entry[1], JUDGE.key: judge[1]},
        route_key=_route_key(config),
        timeout_s=timeout_s,
        timeout_source=timeout_source,
        strict=_strict(config),
        suite_globs=globs,
        junit=_path(config, "elizon_junit"),
        markdown=_path(config, "elizon_markdown"),
        results=_path(config, "elizon_results"),
        baseline=_path(config, "elizon_baseline"),
        annotations=_annotations(config),
        step_summary=Path(os.environ["GITHUB_STEP_SUMMARY"])
        if os.environ.get("GITHUB_STEP_SUMMARY") else None,
        concurrency=concurrency,
        concurrency_auto=auto,
        retry=_retry(config),
        record=_path(config, "elizon_record"),
        replay=_cassette(config),
        html=_html_path(config),
        prices=_prices(config),
        sign_key=_sign_key(config, _path(config, "elizon_results")),
    )
