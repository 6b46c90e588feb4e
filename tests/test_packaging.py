"""What a user installs is the whole package: the sdist and the wheel built from it hold
every module and data file of the source tree, the wheel registers the plugin and the
command, and both artifacts' metadata renders.

An editable install imports from the checkout, so it hides a package the build leaves out
(issue 36: two sub-packages missing from the wheel, and every pytest run of an environment
with it installed failed to load the plugin). The tree is read from disk, so a module or
data file added later is checked without a word here.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest

import pytest_elizon_eval

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_elizon_eval"
# What the build reads besides the package: pyproject.toml names README.md and LICENSE.
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "setup.py", "setup.cfg")
# What a rebuild from the sdist needs besides the package.
SDIST_EXTRAS = ("pyproject.toml", "README.md", "LICENSE")

# .ci/run also runs these tests from a copy of tests/ against the installed wheel, where
# there is no source tree to build or compare with.
needs_source = pytest.mark.skipif(
    not ((ROOT / "pyproject.toml").is_file() and PACKAGE.is_dir()),
    reason=f"no source tree beside tests/ (no pyproject.toml or pytest_elizon_eval/ in {ROOT}):"
           " the tests run against an installed package, there is nothing to build")


def _is_tree_file(relative: Path) -> bool:
    # Byte code and tool caches are made by running the code, not part of it.
    return not (any(part == "__pycache__" or part.startswith(".") for part in relative.parts)
                or relative.suffix in (".pyc", ".pyo"))


def tree_files() -> list[str]:
    """The package's files on disk, relative to the package directory."""
    return sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*")
                  if path.is_file() and _is_tree_file(path.relative_to(PACKAGE)))


@dataclass(frozen=True)
class Artifacts:
    wheel: Path
    sdist: Path

    def wheel_names(self) -> set[str]:
        with zipfile.ZipFile(self.wheel) as wheel:
            return {name for name in wheel.namelist() if not name.endswith("/")}

    def sdist_names(self) -> set[str]:
        """The sdist's files, without its top directory (``pytest_elizon_eval-<version>/``)."""
        with tarfile.open(self.sdist) as sdist:
            names = [m.name for m in sdist.getmembers() if m.isfile()]
        top = self.sdist.name.removesuffix(".tar.gz") + "/"
        assert all(name.startswith(top) for name in names), names
        return {name.removeprefix(top) for name in names}


def _missing(expected: list[str], found: set[str], artifact: str) -> str:
    missing = [name for name in expected if name not in found]
    return f"in the source tree but not in the {artifact}: " + ", ".join(missing)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Artifacts:
    """The sdist and the wheel, built once, the wheel from the sdist (as pip builds one
    from PyPI's sdist), each in the isolated environment ``build`` makes."""
    if importlib.util.find_spec("build") is None:  # the test extra has it: no quiet skip
        pytest.fail("the 'build' module is not installed: pip install -e '.[test]'")
    tmp = tmp_path_factory.mktemp("packaging")
    # A clean copy, as a fresh clone would be: setuptools also lists the files an old
    # *.egg-info/SOURCES.txt in the checkout names, and a stale build/lib can reach a wheel.
    source = tmp / "source"
    shutil.copytree(PACKAGE, source / PACKAGE.name,
                    ignore=lambda _dir, names: [n for n in names if not _is_tree_file(Path(n))])
    for name in BUILD_INPUTS:
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, source / name)
    dist = tmp / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
                          capture_output=True, text=True, timeout=600, check=False, cwd=tmp)
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout}\n{done.stderr}"
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == len(sdists) == 1, sorted(dist.iterdir())
    return Artifacts(wheel=wheels[0], sdist=sdists[0])


@needs_source
def test_the_tree_is_read_from_disk() -> None:
    files = tree_files()
    # the reading finds modules in sub-packages and the data files, so the lists below mean it
    for name in ("__init__.py", "plugin.py", "py.typed", "results.schema.json"):
        assert name in files
    assert any(f.startswith("redteam/probes/") and f.endswith(".yaml") for f in files), files
    assert any(f.count("/") == 1 and f.endswith("/__init__.py") for f in files), files


@needs_source
def test_the_wheel_holds_every_module_and_data_file(artifacts: Artifacts) -> None:
    names = artifacts.wheel_names()
    expected = [f"{PACKAGE.name}/{name}" for name in tree_files()]
    assert set(expected) <= names, _missing(expected, names, "wheel")
    # and nothing beside the package (a tests/ package found by mistake, say)
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {PACKAGE.name}, tops


@needs_source
def test_the_sdist_holds_every_file_and_what_rebuilds_it(artifacts: Artifacts) -> None:
    names = artifacts.sdist_names()
    expected = [*SDIST_EXTRAS, *(f"{PACKAGE.name}/{name}" for name in tree_files())]
    assert set(expected) <= names, _missing(expected, names, "sdist")


@needs_source
def test_the_wheel_registers_the_plugin_and_the_command(artifacts: Artifacts) -> None:
    with zipfile.ZipFile(artifacts.wheel) as wheel:
        [info] = {n.split("/")[0] for n in wheel.namelist() if ".dist-info/" in n}
        # read as pytest and pip read an installed distribution's metadata
        distribution = metadata.PathDistribution(zipfile.Path(wheel, f"{info}/"))
        found = {(e.group, e.name, e.value) for e in distribution.entry_points}
    assert found == {("pytest11", "elizon_eval", "pytest_elizon_eval.plugin"),
                     ("console_scripts", "elizon-eval", "pytest_elizon_eval.cli:main")}


@needs_source
def test_twine_check_passes_on_both_artifacts(artifacts: Artifacts) -> None:
    if importlib.util.find_spec("twine") is None:  # the test extra has it: no quiet skip
        pytest.fail("the 'twine' module is not installed: pip install -e '.[test]'")
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                           str(artifacts.wheel), str(artifacts.sdist)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"twine check failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_tests_import_the_package_that_is_installed(pytestconfig: pytest.Config) -> None:
    """Not a copy beside the tests: for a wheel, its files in site-packages; for an editable
    install, the checkout it points at (what .ci/run and tox rely on to test the wheel)."""
    # The distribution pytest loaded the plugin from, found before tests/conftest.py put the
    # rootdir on sys.path (where a checkout's *.egg-info would answer importlib.metadata).
    found = [dist for _plugin, dist in pytestconfig.pluginmanager.list_plugin_distinfo()
             if dist.project_name == "pytest-elizon-eval"]
    assert len(found) == 1, "pytest did not load the plugin through its pytest11 entry point"
    distribution = found[0]
    direct_url = json.loads(distribution.read_text("direct_url.json") or "{}")
    if direct_url.get("dir_info", {}).get("editable"):
        installed = Path(url2pathname(urlparse(direct_url["url"]).path)) / PACKAGE.name
    else:
        installed = Path(str(distribution.locate_file(PACKAGE.name)))
    imported = Path(pytest_elizon_eval.__file__).parent
    assert imported.resolve() == installed.resolve()
