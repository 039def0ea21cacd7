"""The dpzoo command line: help and plain errors."""

import pytest

from zoo.cli import main


def test_help_at_every_level(capsys):
    for argv in (["--help"], ["sample", "--help"], ["push", "--help"], ["model-cards", "--help"], ["audit", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "write a sample grid" in out and "Hub repository, org/name" in out


def test_fit_help_comes_from_lightning_cli(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--save_pretrained" in out
    assert out.startswith("usage: dpzoo fit --config RECIPE.yaml")  # dpzoo's own usage first, before Lightning's


def test_bad_sample_count_is_a_plain_error(tmp_path, capsys):
    from tests.zoo.test_hub import tiny_private_flow
    from zoo.release.hub import save_pretrained

    folder = save_pretrained(tiny_private_flow(), tmp_path / "m")
    assert main(["sample", str(folder), "--n", "0"]) == 2
    assert "n must be a positive integer" in capsys.readouterr().err
    assert main(["sample", str(folder), "--labels", "three", "--out", str(tmp_path / "x.png")]) == 2
    assert "--labels must be comma-separated class indices" in capsys.readouterr().err


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


def test_sample_and_evaluate_never_replace_a_file_unasked(tmp_path, capsys):
    """An existing --out or --json is refused before the model is loaded; --overwrite replaces it."""
    from tests.zoo.test_hub import tiny_private_flow
    from zoo.release.hub import save_pretrained

    folder = save_pretrained(tiny_private_flow(), tmp_path / "m")
    grid, report = tmp_path / "grid.png", tmp_path / "report.json"
    grid.write_bytes(b"mine")
    report.write_text("mine")
    assert main(["sample", "no-such-model", "--out", str(grid)]) == 2
    assert f"--out {grid} exists: pass --overwrite" in capsys.readouterr().err
    assert main(["evaluate", "no-such-model", "--json", str(report)]) == 2
    assert f"--json {report} exists: pass --overwrite" in capsys.readouterr().err
    assert grid.read_bytes() == b"mine" and report.read_text() == "mine"
    assert main(["sample", str(folder), "--n", "4", "--out", str(grid), "--overwrite"]) == 0
    assert grid.read_bytes().startswith(b"\x89PNG")


def test_a_recipes_bad_value_is_answered_in_the_classs_own_words(capsys, tmp_path):
    """jsonargparse's union report (every member of ``Budget | None`` failed) gives way to the class's own error."""
    recipe = ["fit", "--config", "configs/dp_merf_mnist_eps1.yaml"]
    assert main([*recipe, "--privacy.init_args.target_epsilon", "-1"]) == 2
    err = capsys.readouterr().err
    assert "error: target_epsilon must be a finite number > 0, got -1.0" in err
    assert "Union subtypes" not in err and "NoneType" not in err
    assert main([*recipe, "--model.init_args.num_classes", "-3"]) == 2
    assert "num_classes must be an integer of at least 2, got -3" in capsys.readouterr().err
    missing = tmp_path / "missing"
    assert main([*recipe, "--images", str(missing)]) == 2
    assert f"error: no image folder at {missing}" in capsys.readouterr().err


def test_evaluate_compares_with_the_models_own_data_unless_told(monkeypatch, capsys):
    """--dataset defaults to the named dataset config.json's ledger records (a folder model must name its folder:
    tests/zoo/test_fast_refusals.py), and the help says so instead of naming mnist."""
    given = {}

    def recording_evaluate(model, dataset, **kwargs):
        given["dataset"] = dataset
        return {"results": {}}

    monkeypatch.setattr("zoo.metrics.evaluate", recording_evaluate)
    assert main(["evaluate", "dp-merf-fashion-mnist-eps1", "--metrics", "fid_lenet"]) == 0
    assert given["dataset"] == "fashion_mnist"
    assert "dataset: fashion_mnist, the data dp-merf-fashion-mnist-eps1 was trained on" in capsys.readouterr().out
    assert main(["evaluate", "dp-merf-fashion-mnist-eps1", "--dataset", "mnist", "--metrics", "fid_lenet"]) == 0
    assert given["dataset"] == "mnist" and "dataset:" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "default: mnist" not in out and "default: the named dataset the model was trained on" in out


def test_ctrl_c_outside_training_ends_in_one_line(monkeypatch, tmp_path, capsys):
    """Ctrl-C with no training under way: no traceback, the shell's status for an interrupted command (130)."""

    def pressed(name):
        raise KeyboardInterrupt

    monkeypatch.setattr("zoo.release.loading.resolve", pressed)
    assert main(["sample", "dp-merf-mnist-eps1", "--out", str(tmp_path / "grid.png")]) == 130
    assert capsys.readouterr().err == "dpzoo sample: interrupted; nothing was saved\n"


def test_sample_states_epsilon_with_the_digits_list_uses(tmp_path, capsys):
    assert main(["list"]) == 0
    listed = next(line for line in capsys.readouterr().out.splitlines() if "dp-merf-mnist-eps10 " in line)
    assert main(["sample", "dp-merf-mnist-eps10", "--n", "2", "--out", str(tmp_path / "s.png")]) == 0
    printed = capsys.readouterr().out
    assert "ε = 9.9957" in listed and "privacy: (ε = 9.9957, δ = 1e-05)-DP" in printed
