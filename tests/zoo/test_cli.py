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
    from tests.zoo.test_hub import tiny_private_flow
    from zoo.hub import save_pretrained

    folder = save_pretrained(tiny_private_flow(), tmp_path / "m")
    assert main(["sample", str(folder), "--n", "0"]) == 2
    assert "n must be a positive integer" in capsys.readouterr().err


def test_the_command_line_starts_without_importing_torch():
    """`dpzoo --help` must answer at once: heavy libraries are imported by the command that needs them."""
    import subprocess
    import sys

    probe = (
        "import sys, zoo.cli; zoo.cli.build_parser(); "
        "print(sorted(m for m in ('torch', 'pytorch_lightning') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_evaluate_help_lists_every_metric_and_the_local_diagnostics(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for metric in ("fid_lenet", "cas_cnn", "ood_auroc", "knn_mse", "anomaly_auroc"):
        assert metric in out
    assert "Local diagnostics (never on a card): audit, dp_mog, dp_ad" in out


def test_sample_names_the_formats_it_writes_before_loading_anything(capsys):
    assert main(["sample", "no-such-model", "--out", "rows.txt"]) == 2
    assert "--out must end in .png, .jpg, .jpeg" in capsys.readouterr().err
