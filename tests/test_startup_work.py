"""Start-up and end-of-session work moved out of the way (docs/performance.md#measured-figures):
git is asked about the run's packages while the cases run, and what the results file says
about it is unchanged."""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

import pytest_elizon_eval
from pytest_elizon_eval.trust import provenance

from .conftest import ECHO_APP, Packages

SUITE = """
cases:
  - id: one
    input: {text: hello}
    expect: {contains: [hello]}
"""


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          cwd=folder, check=True, capture_output=True, text=True).stdout.strip()


def test_results_name_the_commit_and_whether_the_package_was_changed(
        packages: Packages, pytester: pytest.Pytester) -> None:
    folder = packages.package(suite=SUITE, app=ECHO_APP)
    packages.write(".gitignore", "__pycache__/\n.pytest_cache/\n.elizon/\n*.json\n")
    _git(pytester.path, "init", "-q")
    _git(pytester.path, "add", "-A")
    _git(pytester.path, "commit", "-q", "-m", "the package")
    commit = _git(pytester.path, "rev-parse", "HEAD")
    pytester.runpytest("--elizon-results=clean.json").assert_outcomes(passed=1)
    (package,) = json.loads((pytester.path / "clean.json").read_text())["provenance"]["packages"]
    assert package["git"] == {"commit": commit, "dirty": False}
    (folder / "app.py").write_text(ECHO_APP + "\n# edited\n")
    pytester.runpytest("--elizon-results=edited.json").assert_outcomes(passed=1)
    (package,) = json.loads((pytester.path / "edited.json").read_text())["provenance"]["packages"]
    assert package["git"] == {"commit": commit, "dirty": True}


def test_the_lookahead_answers_as_git_state_and_asks_now_for_a_folder_it_was_not_given(
        tmp_path: Path) -> None:
    repo, plain = tmp_path / "repo", tmp_path / "plain"
    repo.mkdir()
    plain.mkdir()
    _git(repo, "init", "-q")
    lookahead = provenance.GitLookahead([repo, tmp_path / "gone"])
    assert lookahead.state(repo) == provenance.git_state(repo) == {"commit": None,
                                                                   "dirty": False}
    assert lookahead.state(tmp_path / "gone") is None  # not a folder: no git asked
    assert lookahead.state(plain) is None  # outside any work tree, asked when wanted


def test_the_version_is_written_once_and_is_the_installed_one() -> None:
    # pyproject.toml reads it from the package, so the session never reads metadata for it
    assert pytest_elizon_eval.__version__ == metadata.version("pytest-elizon-eval")
    assert provenance.plugin_version() == pytest_elizon_eval.__version__

