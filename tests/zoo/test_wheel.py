"""The zoo as a user installs it: a wheel, not this checkout, finds and samples its shipped models."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from zoo.release.registry import CHECKPOINTS_ENV, CHECKPOINTS_PACKAGE, checkpoints_dir

ROOT = Path(__file__).resolve().parents[2]
#: building the 68 MB wheel takes a while: `make test` runs it after the default suite
pytestmark = pytest.mark.heavy


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of what the distribution reads (setuptools' build/ stays out of the checkout)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in ("zoo", "lightning_modules", "checkpoints"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", str(source)]
    subprocess.run([*build, "--wheel-dir", str(out)], check=True, capture_output=True)
    (built,) = out.glob("dpzoo-*.whl")
    print(f"{built.name}: {built.stat().st_size / 2**20:.1f} MiB")
    return built


def test_wheel_holds_the_package_and_the_shipped_checkpoints_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"zoo", "lightning_modules", CHECKPOINTS_PACKAGE}
    assert not [n for n in names if n.split("/")[0] in ("tests", "benchmarks", "configs", "data") or ".pyc" in n]
    packed = {n.split("/")[1] for n in names if n.startswith(f"{CHECKPOINTS_PACKAGE}/") and n.endswith("/config.json")}
    assert packed == {path.parent.name for path in checkpoints_dir().glob("*/config.json")}
    statistics = {p.relative_to(ROOT).as_posix() for p in (ROOT / "zoo/metrics/statistics").glob("*.safetensors")}
    assert statistics <= set(names), "the shipped reference statistics are package data"


def test_an_installed_wheel_loads_and_samples_a_shipped_model(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)]
    subprocess.run(install, check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import zoo\nfrom zoo.release.registry import checkpoints_dir\n"
        "images = zoo.load('dp-merf-mnist-eps1').sample(4, seed=0)\n"
        "print(zoo.__file__, checkpoints_dir(), tuple(images.shape), sep='\\n')"
    )
    env = {key: value for key, value in os.environ.items() if key != CHECKPOINTS_ENV} | {"PYTHONPATH": str(site)}
    run = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    module, shipped, shape = run.stdout.strip().splitlines()[-3:]
    assert Path(module).is_relative_to(site) and Path(shipped) == site / CHECKPOINTS_PACKAGE
    assert shape == "(4, 1, 28, 28)"
