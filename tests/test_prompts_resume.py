"""A package's prompts are part of its application (docs/contract.md#resume): a prompt text
changed since an interrupted session means its stored cases run again under
``--elizon-resume``, as changed code does, and the fingerprint reads prompt files with the
guarantees it reads code with (regular files within the package, bounded bytes)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pytest_elizon_eval.load import application

from .conftest import Packages

PLUGIN = 'pytest_plugins = ["pytest_elizon_eval.collect.prompt_fixture"]\n'
#: The entry renders the registry's prompt for each input: what the model "says" is the
#: prompt's text, so a changed prompt changes what a case is scored on.
ENTRY_CONFTEST = PLUGIN + """
import pytest

@pytest.fixture
def elizon_entry(elizon_prompt):
    def answer(text):
        return elizon_prompt("support", question=text)
    return answer
"""
PROMPT = 'variables: [question]\nversions:\n  "1": "GOOD {{question}}"\n'
#: good passes on the GOOD prompt; stop fails whatever the prompt (the session stops there,
#: with -x); later never runs in the first session.
SUITE = """
cases:
  - id: good
    input: q1
    expect: {contains: [GOOD]}
  - id: stop
    input: q2
    expect: {equals: nope}
  - id: later
    input: q3
    expect: {contains: [GOOD]}
"""


def _outcomes(results: Path) -> dict[str, tuple[str, bool]]:
    data = json.loads(results.read_text(encoding="utf-8"))
    return {case["id"]: (case["outcome"], bool(case.get("resumed")))
            for suite in data["suites"] for case in suite["cases"]}


@pytest.mark.parametrize(("edit", "expected"), [
    # a new default version: a fresh run scores every case on BAD
    ({"prompts/support.yaml": PROMPT + '  "2": "BAD {{question}}"\n'},
     {"good": ("failed", False), "stop": ("failed", False), "later": ("failed", False)}),
    # version 1's text edited in place
    ({"prompts/support.yaml": PROMPT.replace("GOOD", "BAD")},
     {"good": ("failed", False), "stop": ("failed", False), "later": ("failed", False)}),
    # what is no prompt (docs/format.md#prompts: only prompts/*.yaml) changes nothing:
    # the finished cases are taken
    ({"prompts/README.md": "notes\n", "prompts/.draft.yaml": "versions: {'1': BAD}\n"},
     {"good": ("passed", True), "stop": ("failed", True), "later": ("passed", False)}),
], ids=["new-default-version", "version-text-edited", "not-a-prompt"])
def test_a_prompt_changed_since_the_interrupted_session_runs_its_cases_again(
        packages: Packages, pytester: pytest.Pytester, edit: dict[str, str],
        expected: dict[str, tuple[str, bool]]) -> None:
    packages.package(suite=SUITE, entry=None)
    packages.write("pkg/prompts/support.yaml", PROMPT)
    pytester.makeconftest(ENTRY_CONFTEST)
    first = pytester.runpytest("-x", "--elizon-history=h.sqlite")
    first.assert_outcomes(passed=1, failed=1)  # good, stop; later never ran
    for relative, text in edit.items():
        packages.write(f"pkg/{relative}", text)
    resumed = pytester.runpytest("--elizon-history=h.sqlite", "--elizon-resume",
                                 "--elizon-results=r.json")
    resumed.stdout.fnmatch_lines(["--elizon-resume: continuing run 1 of *"])
    assert _outcomes(pytester.path / "r.json") == expected


# -- the fingerprint itself ------------------------------------------------------------------

def _package(tmp_path: Path) -> Path:
    folder = tmp_path / "pkg"
    (folder / "prompts").mkdir(parents=True)
    (folder / "app.py").write_text("def answer(text):\n    return text\n")
    return folder


def test_a_package_without_prompts_keeps_the_fingerprint_it_had(tmp_path: Path) -> None:
    folder = _package(tmp_path)
    (folder / "prompts").rmdir()
    # the digest of version and app.py alone, as before prompts counted: a store's earlier
    # runs of a package without prompts stay the same application
    content = (folder / "app.py").read_bytes()
    digest = hashlib.sha256(b"version=1\n")
    digest.update(f"app.py\n{len(content)}\n".encode())
    digest.update(content)
    assert application.fingerprint(folder, "1") == f"code:{digest.hexdigest()[:16]}"
    (folder / "prompts").mkdir()
    (folder / "prompts" / "notes.md").write_text("not a prompt")
    assert application.fingerprint(folder, "1") == f"code:{digest.hexdigest()[:16]}"


def test_each_prompt_file_is_part_of_the_fingerprint(tmp_path: Path) -> None:
    folder = _package(tmp_path)
    (folder / "prompts" / "support.yaml").write_text(PROMPT)
    before = application.fingerprint(folder, "1")
    (folder / "prompts" / "support.yaml").write_text(PROMPT.replace("GOOD", "BAD"))
    edited = application.fingerprint(folder, "1")
    (folder / "prompts" / "support.yaml").write_text(PROMPT)
    assert application.fingerprint(folder, "1") == before  # the same text: the same app
    (folder / "prompts" / "other.yaml").write_text(PROMPT)
    added = application.fingerprint(folder, "1")
    (folder / "prompts" / "other.yaml").rename(folder / "prompts" / "renamed.yaml")
    renamed = application.fingerprint(folder, "1")
    assert len({before, edited, added, renamed}) == 4


def test_a_linked_prompts_folder_is_read_within_the_package_only(tmp_path: Path) -> None:
    folder = _package(tmp_path)
    (folder / "prompts").rmdir()
    (folder / "ext" / "prompts").mkdir(parents=True)
    target = folder / "ext" / "prompts" / "support.yaml"
    target.write_text(PROMPT)
    (folder / "prompts").symlink_to(folder / "ext" / "prompts", target_is_directory=True)
    before = application.fingerprint(folder, "1")
    target.write_text(PROMPT.replace("GOOD", "BAD"))  # read through the link
    assert application.fingerprint(folder, "1") != before
    # a prompts folder or file that resolves outside the package is none of its prompts (the
    # registry refuses it), and is never read
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.yaml").write_text(PROMPT)
    (folder / "prompts").unlink()
    (folder / "prompts").mkdir()
    plain = application.fingerprint(folder, "1")
    (folder / "prompts" / "leak.yaml").symlink_to(outside / "leak.yaml")
    assert application.fingerprint(folder, "1") == plain
    (folder / "prompts" / "leak.yaml").unlink()
    (folder / "prompts").rmdir()
    (folder / "prompts").symlink_to(outside, target_is_directory=True)
    assert application.fingerprint(folder, "1") == plain


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(),
                    reason="no named pipes or /dev/zero on this platform")
def test_a_prompt_that_is_no_regular_file_is_left_out_and_the_bytes_are_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a read past the limit stops there: a regression reads 1 MiB, not forever
    monkeypatch.setattr(application, "MAX_BYTES", 1 << 20)
    folder = _package(tmp_path)
    (folder / "prompts" / "support.yaml").write_text(PROMPT)
    plain = application.fingerprint(folder, "1")
    os.mkfifo(folder / "prompts" / "pipe.yaml")  # a read of it waits for ever
    os.symlink("/dev/zero", folder / "prompts" / "zero.yaml")  # a read of it never ends
    (folder / "prompts" / "folder.yaml").mkdir()
    assert application.fingerprint(folder, "1") == plain
    # the prompts' bytes count against the limit with the code's
    size = len((folder / "app.py").read_bytes()) + len(PROMPT)
    monkeypatch.setattr(application, "MAX_BYTES", size)
    assert application.fingerprint(folder, "1") == plain
    monkeypatch.setattr(application, "MAX_BYTES", size - 1)
    assert application.fingerprint(folder, "1") is None
    monkeypatch.setattr(application, "MAX_BYTES", 1 << 20)
    monkeypatch.setattr(application, "MAX_FILES", 1)  # app.py and support.yaml: two files
    assert application.fingerprint(folder, "1") is None
