"""The ``elizon-eval`` command against files arranged to mislead it: links where the importer
writes, shards edited after signing or never signed, case ids that reorder what a person reads.

One module-scoped pair of real signed shards (``pytest --elizon-results`` with
``$ELIZON_SIGN_KEY``, each shard a ``-k`` selection of one package, run in this process) is
the material; every test runs the command (``cli.main``, as the console script does) on
copies of it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_elizon_eval.reporting import results
from pytest_elizon_eval.trust import evidence, signing

from .conftest import ci_step_env  # the environment of a CI step: the plugins a user has
from .conftest import elizon_eval as run  # elizon-eval, in this process, in that environment


@dataclass
class Shards:
    folder: Path  # shard-greeting.json, shard-refund.json, their .sig files, the key pair

    @property
    def key(self) -> Path:
        return self.folder / "keys" / signing.KEY_FILE

    @property
    def public(self) -> Path:
        return self.folder / "keys" / signing.PUBLIC_KEY_FILE

    def copy(self, target: Path) -> Path:
        """The shards and their signatures in a folder of the test's own."""
        target.mkdir()
        for path in self.folder.glob("shard-*"):
            shutil.copy(path, target / path.name)
        return target


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Shards:
    """Two signed shards of a must-pass package: ``greeting`` passes, ``refund`` fails."""
    tmp = tmp_path_factory.mktemp("shards")
    (tmp / "pytest.ini").write_text("[pytest]\n")
    pkg = tmp / "shop"
    (pkg / "eval").mkdir(parents=True)
    (pkg / "elizon.yaml").write_text("name: shop\nentry: app:answer\nevaluation:\n"
                                     "  suite: ./eval/suite.yaml\n  gate: must-pass\n")
    (pkg / "app.py").write_text("def answer(question):\n    return 'Hello, ' + question\n")
    (pkg / "eval" / "suite.yaml").write_text(
        "cases:\n"
        "  - id: greeting\n    input: {question: there}\n    expect: {contains: [hello]}\n"
        "  - id: refund\n    input: {question: refund}\n    expect: {contains: [3 days]}\n")
    signing.generate(tmp / "keys")
    key = (tmp / "keys" / signing.KEY_FILE).read_text()
    for name, status in (("greeting", 0), ("refund", 1)):
        ret, out = _pytest_in_process("shop", "-p", "no:cacheprovider", "-k", name,
                                      f"--elizon-results=shard-{name}.json", cwd=tmp,
                                      ELIZON_SIGN_KEY=key)
        assert ret == status, out
        assert signing.signature_path(tmp / f"shard-{name}.json").exists()
    return Shards(tmp)


def _pytest_in_process(*args: str, cwd: Path, **env: str) -> tuple[int, str]:
    """``pytest *args`` run in ``cwd`` as a CI step runs it (conftest.ci_step_env, and ``env``), in
    this process, as pytester's in-process runs are (a module-scoped fixture has no pytester):
    the user's plugins given as ``-p`` does, and the modules the run imported (the package's
    app) dropped after it. Its exit status and output."""
    modules, path, meta_path = dict(sys.modules), list(sys.path), list(sys.meta_path)
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(out):
        patch.chdir(cwd)
        step = ci_step_env(**env)
        for name in os.environ:
            if name not in step:
                patch.delenv(name)
        for name, value in step.items():
            patch.setenv(name, value)
        try:
            plugins = [sys.modules[name] for name in step["PYTEST_PLUGINS"].split(",")]
            ret = pytest.main([*args, "-W", "ignore::pytest.PytestAssertRewriteWarning"],
                              plugins=plugins)
        finally:
            sys.modules.clear()
            sys.modules.update(modules)
            sys.path[:], sys.meta_path[:] = path, meta_path
    return int(ret), out.getvalue()


#: A terminal shows the text after U+202E reversed ("exe.png"): not what is there.
BIDI = "\u202egnp.exe\u2066x\u2069"


def _rebuilt(path: Path, edit: str) -> None:
    """Edit the results file as a forger would, with verdicts that follow from its cases (so
    only the signature can tell): ``pass`` turns every case into a pass, ``bidi`` gives the
    first case an id holding bidirectional controls."""
    data = json.loads(path.read_text())
    for suite in data["suites"]:
        for case in suite["cases"]:
            if edit == "pass":
                case["outcome"] = "passed"
                case["assertions"] = [dict(a, passed=True) for a in case["assertions"]]
    if edit == "bidi":
        case = data["suites"][0]["cases"][0]
        case["nodeid"] = case["nodeid"].replace(case["id"], case["id"] + BIDI)
        case["id"] += BIDI
    path.write_text(json.dumps(results.build(evidence.aggregate_of(data),
                                             provenance=data["provenance"])))


def test_merge_refuses_a_shard_edited_after_signing(shards: Shards, tmp_path: Path) -> None:
    folder = shards.copy(tmp_path / "in")
    forged = folder / "shard-refund.json"
    _rebuilt(forged, "pass")  # its .sig stays: it was made for the failing original
    for key_args in (["--sign-key", str(shards.key)], []):
        done = run("merge", "shard-greeting.json", "shard-refund.json", "-o", "all.json",
                   *key_args, cwd=folder)
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stderr.startswith("ELIZON_RESULTS_SIGNATURE_INVALID: shard-refund.json: "
                                      "the signature is for another document"), done.stderr
        assert not (folder / "all.json").exists()
    # the signing key may also come from the environment, as in CI
    done = run("merge", "shard-greeting.json", "shard-refund.json", "-o", "all.json",
               cwd=folder, ELIZON_SIGN_KEY=shards.key.read_text())
    assert done.returncode == 1
    assert "shard-refund.json: the signature is for another document" in done.stderr


def test_merge_signs_only_shards_a_given_key_vouches_for(shards: Shards,
                                                         tmp_path: Path) -> None:
    folder = shards.copy(tmp_path / "in")
    sign = ["--sign-key", str(shards.key)]
    # both shards signed with the signing key: checked with its public half, then signed
    done = run("merge", "shard-greeting.json", "shard-refund.json", "-o", "all.json", *sign,
               cwd=folder)
    assert done.returncode == 0, done.stderr
    assert run("verify", "all.json", "--public-key", str(shards.public),
               cwd=folder).returncode == 0
    # a shard without a signature is not signed over unless told
    signing.signature_path(folder / "shard-refund.json").unlink()
    refused = run("merge", "shard-greeting.json", "shard-refund.json", "-o", "unsigned.json",
                  *sign, cwd=folder)
    assert refused.returncode == 1
    assert refused.stderr == (
        "elizon-eval merge: not signing: no signature verifies shard-refund.json (no .sig "
        "beside it, or one by a key not given); sign the shards, give their signer's "
        "--public-key, or pass --allow-unsigned to sign over them anyway\n")
    assert not (folder / "unsigned.json").exists()
    allowed = run("merge", "shard-greeting.json", "shard-refund.json", "-o", "unsigned.json",
                  *sign, "--allow-unsigned", cwd=folder)
    assert allowed.returncode == 0, allowed.stderr
    assert ("signed over 1 shard no given key vouches for (--allow-unsigned): "
            "shard-refund.json") in allowed.stdout
    # without a key nothing is signed, so an unsigned shard merges as before
    assert run("merge", "shard-greeting.json", "shard-refund.json", "-o", "plain.json",
               cwd=folder).returncode == 0
    assert not signing.signature_path(folder / "plain.json").exists()
    # a shard signed by a key that is not given cannot be verified: not signed over either
    other = signing.SigningKey.from_file(_other_key(tmp_path), "other")
    refund = folder / "shard-refund.json"
    signing.signature_path(refund).write_text(signing.signature_text(refund.read_text(), other))
    refused = run("merge", "shard-greeting.json", "shard-refund.json", "-o", "other.json",
                  *sign, cwd=folder)
    assert refused.returncode == 1
    assert "no signature verifies shard-refund.json" in refused.stderr
    # a signature that names the signing key but does not verify with it is invalid
    sig = json.loads(signing.signature_path(refund).read_text())
    sig["public_key_fingerprint"] = signing.SigningKey.from_file(shards.key, "k").fingerprint
    signing.signature_path(refund).write_text(json.dumps(sig))
    bad = run("merge", "shard-greeting.json", "shard-refund.json", "-o", "other.json", *sign,
              cwd=folder)
    assert bad.returncode == 1
    assert bad.stderr == ("ELIZON_RESULTS_SIGNATURE_INVALID: shard-refund.json: the signature "
                          "does not match the document and the key\n")


def _other_key(tmp_path: Path) -> Path:
    signing.generate(tmp_path / "other")
    return tmp_path / "other" / signing.KEY_FILE


def test_bidi_controls_in_case_ids_are_shown_as_escapes(shards: Shards,
                                                        tmp_path: Path) -> None:
    folder = shards.copy(tmp_path / "in")
    doc = folder / "shard-refund.json"  # a failed case: `show` lists it too
    _rebuilt(doc, "bidi")
    for args in (["show", doc.name], ["acknowledge", doc.name, "--acknowledge-evaluation"]):
        done = run(*args, cwd=folder)
        assert done.returncode == 0, done.stderr
        printed = done.stdout + done.stderr
        for control in "\u202e\u2066\u2069":
            assert control not in printed
        assert "shop/eval/suite.yaml::refund\\u202egnp.exe\\u2066x\\u2069 — ✗ contains" \
            in done.stdout  # the failed cases
    assert "✗ failed  refund\\u202egnp.exe\\u2066x\\u2069" in done.stdout  # every case


CONFIG = """tests:
  - description: Greets
    vars: {name: Ann}
    assert:
      - type: icontains
        value: hello
"""


def test_import_replaces_links_and_never_writes_through_them(tmp_path: Path) -> None:
    (tmp_path / "promptfooconfig.yaml").write_text(CONFIG)
    out = tmp_path / "out"
    out.mkdir()
    (out / "suite.yaml").symlink_to("../victim.txt")  # dangling: nothing there yet
    done = run("import", "promptfoo", "promptfooconfig.yaml", "-o", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == ("elizon-eval import: out/suite.yaml exists (a symbolic link); use "
                           "--force to overwrite\n")
    assert not os.path.lexists(tmp_path / "victim.txt")
    assert not (out / "elizon.yaml").exists()
    (tmp_path / "victim.txt").write_text("kept\n")
    (out / "elizon.yaml").symlink_to(tmp_path / "victim.txt")
    done = run("import", "promptfoo", "promptfooconfig.yaml", "-o", "out", "--force",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "victim.txt").read_text() == "kept\n"
    for name in ("suite.yaml", "elizon.yaml"):
        assert not (out / name).is_symlink()
        assert (out / name).read_text().startswith("# Imported from promptfooconfig.yaml")
    assert sorted(p.name for p in out.iterdir()) == ["elizon.yaml", "suite.yaml"]
