"""Tabular data for DP-NF: the Life Science table, seeded synthetic sets, checked user tables."""

import numpy as np
import pytest
import torch

from zoo.data.tables import SYNTHETIC, load_table, read_table


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_tables_are_seeded_and_sized(name):
    table = load_table(name)
    assert table.shape == (30_000, 2) and table.dtype == torch.float64
    torch.testing.assert_close(table, load_table(name))
    assert not torch.equal(table, SYNTHETIC[name](seed=1))


def test_gaussians_have_eight_modes_on_a_circle():
    radius = load_table("gaussians").norm(dim=1)
    assert radius.mean().item() == pytest.approx(4.0, abs=0.1)


def test_lifesci_has_its_ten_features(data_dir):
    table = load_table("lifesci")
    assert table.shape == (26_733, 10)
    assert table[0, 0].item() == pytest.approx(-4.1929)


@pytest.mark.parametrize(
    "content, message",
    [
        ("1,2\n3,nan\n", "NaN"),
        ("1,5\n2,5\n3,5\n", "constant columns \\[1\\]"),
        ("1,2\n", "at least 2 rows"),
        ("a,b\n1,2\n", "not a numeric table"),
    ],
)
def test_bad_tables_fail_clearly(tmp_path, content, message):
    path = tmp_path / "table.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        read_table(path)


def test_numpy_tables_and_missing_files(tmp_path):
    np.save(tmp_path / "t.npy", np.arange(6.0).reshape(3, 2))
    assert read_table(tmp_path / "t.npy").shape == (3, 2)
    with pytest.raises(FileNotFoundError, match="no table"):
        read_table(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match="unknown table"):
        load_table("power")
