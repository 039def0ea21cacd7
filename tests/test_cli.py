"""The dpzoo command line: help and plain errors."""

import pytest

from zoo.cli import main


def test_help_at_every_level(capsys):
    for argv in (["--help"], ["sample", "--help"], ["push", "--help"], ["model-cards", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "write a sample grid" in out and "Hub repository, org/name" in out


def test_fit_help_comes_from_lightning_cli(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", "--help"])
    assert exit_info.value.code == 0
    assert "--save_pretrained" in capsys.readouterr().out


def test_bad_sample_count_is_a_plain_error(tmp_path, capsys):
    from tests.test_hub import tiny_private_flow
    from zoo.hub import save_pretrained

    folder = save_pretrained(tiny_private_flow(), tmp_path / "m")
    assert main(["sample", str(folder), "--n", "0"]) == 2
    assert "n must be a positive integer" in capsys.readouterr().err
