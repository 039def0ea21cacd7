"""A metric declared in this file alone (a new extractor's FID) is computed by ``zoo.evaluate``, published on the
card, and shown by ``dpzoo list``, the model table and the results table: no other module names it."""

import pytest
import torch
from torch.utils.data import TensorDataset

from lightning_modules import DPLFlow
from tests.toys import ToyData, tiny_trainer
from zoo.cli import main
from zoo.metrics import evaluate, record_evaluation
from zoo.privacy import DPCallback
from zoo.release import metric_spec
from zoo.release.hub import save_pretrained
from zoo.release.layout import load_config
from zoo.release.metric_spec import Headline, Metric, register_metric
from zoo.release.model_table import headline_numbers
from zoo.release.results_table import results_table


def toy_fid(run, names):
    """A made-up distance: the gap between the mean pixels of the samples and of the real images."""
    gap = abs(float(run.samples.mean()) - float(run.test.images.mean()))
    protocol = {
        "feature_extractor": "toy features",
        "samples": run.num_samples,
        "reference": len(run.test.images),
        "reference_set": run.test.description,
    }
    return {"fid_toy": {"value": 100 * gap, "protocol": protocol}}


class NamedToy(ToyData):
    """Records of a named source (Fashion-MNIST's, listed by ``zoo.privacy.records.named_sources``): a card may publish
    numbers against MNIST's test split, public and apart."""

    records_identity = "fashion_mnist/train#0123456789abcdef"


@pytest.fixture
def toy_metric(monkeypatch):
    monkeypatch.setattr(metric_spec, "_METRICS", metric_spec.registered_metrics())
    return register_metric(
        Metric(
            name="fid_toy",
            compute={"images": toy_fid},
            reads_protected_records=False,
            headline=Headline(column="FID", measured_by="toy features"),
        )
    )


def test_a_metric_declared_here_reaches_the_card_the_list_and_the_tables(
    toy_metric, data_dir, tmp_path, monkeypatch, capsys
):
    model = DPLFlow(channels=(4, 8), latent_dim=4, flow_blocks=2, flow_hidden=16)
    data = NamedToy(TensorDataset(torch.rand(64, 1, 28, 28), torch.zeros(64)), 0.25, "toy-28")
    tiny_trainer([DPCallback(noise_multiplier=1.0, accountant="rdp")], 2).fit(model, data)
    folder = save_pretrained(model, tmp_path / "checkpoints" / "tiny-flow")
    evaluation = evaluate(folder, "mnist", metrics=("fid_toy",), num_samples=16, progress=False)
    value = evaluation["results"]["fid_toy"]["value"]
    record_evaluation(folder, evaluation, "dpzoo evaluate tiny-flow --metrics fid_toy")

    (row,) = load_config(folder)["evaluation"]["results"]
    assert row["metric_type"] == "fid_toy" and row["metric_name"] == "fid_toy (toy features)"
    assert "| fid_toy (toy features) |" in (folder / "README.md").read_text()

    monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(folder.parent))
    assert main(["list"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("tiny-flow ")]
    assert f"{value:.1f} toy features" in line

    assert headline_numbers(load_config(folder)) == f"FID {value:.1f} (toy features, 16 samples)"
    (table_row,) = [line for line in results_table([folder]) if line.startswith("| [tiny-flow]")]
    assert f"| {value:.1f} (toy features; 16 vs {evaluation['reference']}) |" in table_row
