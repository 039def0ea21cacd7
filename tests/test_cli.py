"""The dpzoo command line: the quick-start demo and its errors."""

import json

import pytest

from zoo.cli import main


def test_demo_trains_privately_and_writes_grid_and_ledger(data_dir, tmp_path, capsys):
    assert main(["demo", "--steps", "2", "--out", str(tmp_path)]) == 0
    ledger = json.loads((tmp_path / "privacy_ledger.json").read_text())
    (entry,) = ledger["entries"]
    assert entry["steps"] == 2 and entry["dataset_id"].startswith("mnist/train") and entry["accountant"] == "prv"
    assert (tmp_path / "samples.png").stat().st_size > 0
    assert "ε = " in capsys.readouterr().out


def test_bad_epsilon_is_a_plain_error(capsys):
    assert main(["demo", "--epsilon", "-1"]) == 2
    assert "target_epsilon must be a finite number > 0" in capsys.readouterr().err


def test_help_at_every_level(capsys):
    for argv in (["--help"], ["demo", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
    assert "DP-SGD steps" in capsys.readouterr().out
