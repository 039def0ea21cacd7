import os
import warnings
from pathlib import Path

import pytest
import torch

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_configure(config):
    torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else 2)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Prepared data goes to a per-session cache, never into the source folder."""
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "dpzoo-cache"))


@pytest.fixture
def data_dir(monkeypatch):
    """The read-only real data folder (DPZOO_DATA_DIR, or ../shared/data beside the project)."""
    path = Path(os.environ.get("DPZOO_DATA_DIR", SHARED_DATA))
    if not (path / "MNIST" / "raw").is_dir():
        pytest.skip(f"real MNIST not found under {path}; set DPZOO_DATA_DIR")
    monkeypatch.setenv("DPZOO_DATA_DIR", str(path))
    return path
