"""A DP-NF recipe end to end on a synthetic table: fit → save → evaluate → card with figures."""

import json

import numpy as np
import pytest
import torch

from zoo.cli import main
from zoo.data import TableDataModule
from zoo.metrics import evaluate
from zoo.release.hub import load_config
from zoo.release.loading import load

DATASET_ID = "half_moons/train[split=0/10,test=0.1,minus-validation=0.1]"  # the recipe holds validation rows out


@pytest.fixture(scope="module")
def half_moons_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models") / "nf"
    argv = [
        "fit",
        "--config",
        "configs/dp_nf_half_moons_eps1.yaml",
        "--model.init_args.blocks=1",
        "--model.init_args.hidden=8",
        "--trainer.max_steps=5",
        "--trainer.accelerator=cpu",
        "--trainer.enable_progress_bar=false",
        f"--save_pretrained={folder}",
    ]
    assert main(argv) == 0
    return folder


def test_recipe_releases_standardisation_then_trains_within_the_target(half_moons_model):
    ledger = load_config(half_moons_model)["privacy_ledger"]["entries"]
    assert [e["mechanism"] for e in ledger] == ["gaussian", "subsampled_gaussian"]
    model = load(half_moons_model)
    (guarantee,) = model.privacy_ledger.guarantees().values()
    assert 0.99 < guarantee["epsilon"] <= 1.0
    assert (half_moons_model / "samples.png").is_file()


def test_evaluate_command_writes_numbers_and_figures_into_the_card(half_moons_model, capsys):
    argv = ["evaluate", str(half_moons_model), "--dataset", "half_moons", "--num-samples", "3000", "--write-card"]
    argv += ["--metrics", "log_likelihood,knn_mse,anomaly_auroc"]
    assert main(argv) == 0
    assert "knn_mse" in capsys.readouterr().out
    evaluation = load_config(half_moons_model)["evaluation"]
    results = evaluation["details"]["results"]
    assert results["knn_mse"]["real_data_reference"] < results["knn_mse"]["value"] * 10
    assert 0 <= results["anomaly_auroc"]["value"] <= 1
    card = (half_moons_model / "README.md").read_text()
    assert "![real_vs_synthetic.png](real_vs_synthetic.png)" in card and "density-estimation" in card
    assert "Standardisation of the features: private" in card and "Barrier B4" in card
    assert (half_moons_model / "real_vs_synthetic.png").is_file() and "![anomaly_roc.png](anomaly_roc.png)" in card
    json.dumps(evaluation)  # stored as JSON


@pytest.mark.parametrize("metric", ["dp_mog", "dp_ad"])
def test_write_card_refuses_metrics_that_read_protected_records(half_moons_model, metric, capsys):
    before = (half_moons_model / "config.json").read_text()
    argv = ["evaluate", str(half_moons_model), "--dataset", "half_moons", "--metrics", f"knn_mse,{metric}"]
    assert main([*argv, "--write-card"]) == 2
    assert "read the protected training records outside the model's privacy ledger" in capsys.readouterr().err
    assert (half_moons_model / "config.json").read_text() == before


def test_local_diagnostics_still_run_and_state_their_cost(half_moons_model):
    results = evaluate(half_moons_model, "half_moons", metrics=("dp_mog",), num_samples=500)["results"]
    guarantee = load(half_moons_model).privacy_ledger.guarantees()[DATASET_ID]
    assert results["dp_mog"]["protocol"]["epsilon"] == pytest.approx(guarantee["epsilon"], abs=1e-4)


def test_publishable_table_metrics_never_read_the_training_rows(half_moons_model, monkeypatch):
    """Replacing the protected rows by noise must leave every number a card may publish unchanged."""
    metrics = ("log_likelihood", "knn_mse", "anomaly_auroc")
    honest = evaluate(half_moons_model, "half_moons", metrics=metrics, num_samples=500)["results"]
    setup = TableDataModule.setup

    def setup_with_other_training_rows(self, stage=None):
        setup(self, stage)
        self.train_rows = torch.randn_like(self.train_rows) * 100

    monkeypatch.setattr(TableDataModule, "setup", setup_with_other_training_rows)
    tampered = evaluate(half_moons_model, "half_moons", metrics=metrics, num_samples=500)["results"]
    assert json.dumps(tampered, sort_keys=True) == json.dumps(honest, sort_keys=True)


def test_evaluating_on_another_split_is_refused(half_moons_model):
    with pytest.raises(ValueError, match="pass the split it was trained on"):
        evaluate(half_moons_model, "half_moons", metrics=("log_likelihood",), split=3)


def test_image_metrics_are_refused_for_tables(half_moons_model):
    with pytest.raises(ValueError, match="unknown metrics for half_moons"):
        evaluate(half_moons_model, "half_moons", metrics=("fid_lenet",))


def test_log_likelihood_matches_the_model(half_moons_model):
    model = load(half_moons_model)
    result = evaluate(model, "half_moons", metrics=("log_likelihood",))["results"]["log_likelihood"]
    data = TableDataModule("half_moons", standardisation="public")
    data.setup()
    assert result["value"] == pytest.approx(model.log_prob(data.test_rows).mean().item(), rel=1e-6)
    assert torch.isfinite(torch.tensor(result["value"]))


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".png"])
def test_sample_command_writes_table_rows(half_moons_model, tmp_path, suffix):
    out = tmp_path / f"rows{suffix}"
    assert main(["sample", str(half_moons_model), "--n", "50", "--out", str(out)]) == 0
    if suffix == ".csv":
        assert out.read_text().splitlines()[0] == "feature_0,feature_1"
        assert np.loadtxt(out, delimiter=",", skiprows=1).shape == (50, 2)
    elif suffix == ".npy":
        assert np.load(out).shape == (50, 2)
    else:
        assert out.stat().st_size > 0


def test_sample_command_refuses_an_unknown_row_format(half_moons_model, tmp_path, capsys):
    assert main(["sample", str(half_moons_model), "--n", "5", "--out", str(tmp_path / "rows.txt")]) == 2
    assert "--out must end in .png, .jpg, .jpeg (a picture) or, for table models, .csv, .npy" in capsys.readouterr().err
