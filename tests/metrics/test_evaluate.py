"""zoo.evaluate: torch-fidelity metrics with the small extractor, CAS, and their errors."""

import json

import pytest
import torch

from tests.metrics.test_cas import Replay
from zoo.cli import main
from zoo.data import load_images
from zoo.metrics import FeatureWeightsUnavailable, evaluate, fidelity_metrics
from zoo.metrics.extractors import extractor_weights
from zoo.release.hub import load_config, save_pretrained

needs_extractor = pytest.mark.skipif(not extractor_weights("mnist").exists(), reason="LeNet weights not trained")


@pytest.mark.heavy
@needs_extractor
def test_fid_lenet_is_zero_against_itself_and_large_against_noise(data_dir):
    real, _ = load_images("mnist", train=False)
    same = fidelity_metrics(real[:2000], real[:2000], ("fid_lenet",), "mnist")["fid_lenet"]
    other_half = fidelity_metrics(real[:2000], real[2000:4000], ("fid_lenet",), "mnist")["fid_lenet"]
    noise = fidelity_metrics(torch.rand(2000, 1, 28, 28), real[:2000], ("fid_lenet",), "mnist")
    assert abs(same["value"]) < 1e-3
    assert noise["fid_lenet"]["value"] > 100 * max(other_half["value"], 1e-2)
    assert same["protocol"]["feature_extractor"].startswith("lenet-mnist")


def test_inception_metrics_without_weights_say_how_to_provide_them(tmp_path):
    images = torch.rand(10, 1, 28, 28)
    with pytest.raises(FeatureWeightsUnavailable, match="feature_extractor_weights_path"):
        fidelity_metrics(images, images, ("fid",), "mnist", weights_path=str(tmp_path / "missing.pth"))


@needs_extractor
def test_evaluate_returns_values_spreads_and_protocols(data_dir):
    images, labels = load_images("mnist", train=True)
    replay = Replay(images[:3000], labels[:3000])
    report = evaluate(
        replay, "mnist", metrics=("fid_lenet", "cas_mlp"), num_samples=1000, runs=2, epochs=2, progress=False
    )
    assert set(report["results"]) == {"fid_lenet", "kid_lenet", "cas_mlp"}, "below 10,000 samples KID comes with FID"
    assert "biased upwards" in report["results"]["fid_lenet"]["protocol"]["bias"]
    assert report["results"]["cas_mlp"]["value"] > 70 and report["results"]["cas_mlp"]["std"] >= 0
    assert report["results"]["fid_lenet"]["protocol"]["samples"] == 1000


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"metrics": ("fid", "sharpness")}, "unknown metrics for mnist: sharpness; known: "),
        ({"metrics": ("cas",), "dataset": "imagenet"}, "unknown dataset 'imagenet'"),
    ],
)
def test_bad_requests_fail_before_any_work(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate(Replay(torch.zeros(1, 1, 28, 28), torch.zeros(1)), **{"dataset": "mnist", **kwargs})


def test_cas_on_an_unconditional_model_is_refused():
    from tests.zoo.test_hub import tiny_private_flow

    with pytest.raises(ValueError, match="cas compare labels, but dp-lflow is unconditional; drop cas"):
        evaluate(tiny_private_flow(), "mnist", metrics=("cas",))


@needs_extractor
def test_cli_evaluate_writes_json_and_records_in_the_card(data_dir, tmp_path, capsys, monkeypatch):
    from huggingface_hub import ModelCard
    from torch.utils.data import TensorDataset

    from lightning_modules import DPLFlow
    from tests.toys import ToyData, tiny_trainer
    from zoo.privacy import DPCallback

    class NamedToy(ToyData):
        """Records of a named source (listed by ``named_sources``): a card may publish numbers against MNIST's test
        split, public and apart."""

        records_identity = "fashion_mnist/train#0123456789abcdef"

    model = DPLFlow(channels=(4, 8), latent_dim=4, flow_blocks=2, flow_hidden=16)
    data = NamedToy(TensorDataset(torch.rand(64, 1, 28, 28), torch.zeros(64)), 0.25, "toy-28")
    tiny_trainer([DPCallback(noise_multiplier=1.0, accountant="rdp")], 2).fit(model, data)
    folder = save_pretrained(model, tmp_path / "tiny-28")
    argv = [
        "evaluate",
        str(folder),
        "--dataset",
        "mnist",
        "--metrics",
        "fid_lenet",
        "--num-samples",
        "500",
        "--json",
        str(tmp_path / "report.json"),
        "--write-card",
    ]
    assert main(argv) == 0
    assert "fid_lenet" in capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    recorded = load_config(folder)["evaluation"]
    assert recorded["details"] == report and recorded["command"].startswith("dpzoo evaluate")
    assert "--json" not in recorded["command"] and str(tmp_path / "report.json") not in recorded["command"]
    fid, kid = ModelCard.load(folder / "README.md").data.eval_results  # KID beside FID at 500 samples
    assert fid.metric_type == "fid_lenet" and "lenet-mnist" in fid.metric_name and kid.metric_type == "kid_lenet"
    assert "biased upwards" in fid.metric_config
    assert main(["evaluate", str(folder), "--metrics", "nope"]) == 2
    unnamed = ToyData(TensorDataset(torch.rand(64, 1, 28, 28), torch.zeros(64)), 0.25, "toy-28")
    tiny_trainer([DPCallback(noise_multiplier=1.0, accountant="rdp")], 2).fit(model, unnamed)
    unchecked = save_pretrained(model, tmp_path / "unnamed")
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path / "another-machine"))  # its records named by content there
    assert main(["evaluate", str(unchecked), "--dataset", "mnist", "--metrics", "fid_lenet", "--write-card"]) == 2
    assert "nothing shows these images are not among them" in capsys.readouterr().err


def test_density_metrics_of_a_per_class_flow(data_dir):
    from lightning_modules import PerClassModel

    tiny28 = {"channels": (4, 8), "latent_dim": 4, "flow_blocks": 2, "flow_hidden": 16}
    model = PerClassModel("dp-lflow", tiny28, 10).eval()
    report = evaluate(model, "mnist", metrics=("ood_auroc", "log_likelihood"))
    ood, likelihood = report["results"]["ood_auroc"], report["results"]["log_likelihood"]
    assert len(ood["per_class"]) == 10 and 0 <= ood["value"] <= 1
    assert "nats per dimension (latent codes of the autoencoder, 4 dims)" == likelihood["unit"]


def test_density_metrics_need_a_density():
    with pytest.raises(ValueError, match=r"OOD AUROC needs a class-conditional density \(log_prob\(x, labels\)\)"):
        evaluate(Replay(torch.zeros(1, 1, 28, 28), torch.zeros(1)), "mnist", metrics=("ood_auroc",))


def test_audit_of_the_shipped_digit_model_rebuilds_its_member_split(data_dir):
    report = evaluate("dp-lflow-mnist-digit3-eps10", "mnist", metrics=("audit",), label=3, audit_size=200)
    audit = report["results"]["audit"]
    assert 0 <= audit["value"] <= 1 and "likelihood" in audit and audit["protocol"]["members"] == 200
    with pytest.raises(ValueError, match="the audit rebuilds the member split"):
        evaluate("dp-lflow-mnist-digit3-eps10", "mnist", metrics=("audit",), label=4, audit_size=10)


def test_write_card_refuses_the_membership_audit_before_any_work(tmp_path, capsys):
    """The audit scores the model's own training images: a local diagnostic, never a card number."""
    from tests.zoo.test_hub import tiny_private_flow

    folder = save_pretrained(tiny_private_flow(), tmp_path / "tiny")
    before = (folder / "config.json").read_text()
    assert main(["evaluate", str(folder), "--metrics", "fid_lenet,audit", "--write-card"]) == 2
    assert "audit: the membership attack scores the model's own training images" in capsys.readouterr().err
    assert (folder / "config.json").read_text() == before


def test_record_evaluation_refuses_a_result_read_from_protected_records(tmp_path):
    from tests.zoo.test_hub import tiny_private_flow
    from zoo.metrics import record_evaluation
    from zoo.metrics.publication import UnpublishableMetricError

    folder = save_pretrained(tiny_private_flow(), tmp_path / "tiny")
    audit = {"value": 0.5, "protocol": {}}
    with pytest.raises(UnpublishableMetricError, match="audit"):
        record_evaluation(folder, {"dataset": "mnist", "results": {"audit": audit}}, "dpzoo evaluate ...")


def _measured(value: float) -> dict:
    return {"value": value, "std": 0.5, "runs": [value - 0.5, value + 0.5], "protocol": {"classifier": "cnn"}}


def test_write_card_adds_metrics_of_the_same_protocol_and_refuses_another(tmp_path, capsys):
    """A slow metric measured later joins the card's evaluation and names its command; an evaluation under
    another protocol is refused before any work unless --replace-evaluation is given."""
    from huggingface_hub import ModelCard

    from tests.zoo.test_hub import tiny_private_flow
    from zoo.errors import TargetExistsError
    from zoo.metrics import record_evaluation

    folder = save_pretrained(tiny_private_flow(), tmp_path / "tiny")
    protocol = {"dataset": "mnist", "reference": "mnist official test split", "num_samples": 100, "seed": 0}
    record_evaluation(folder, {**protocol, "results": {"cas_cnn": _measured(30.0)}}, "dpzoo evaluate first")
    record_evaluation(folder, {**protocol, "results": {"cas_resnet": _measured(40.0)}}, "dpzoo evaluate second")
    evaluation = load_config(folder)["evaluation"]
    assert evaluation["command"] == "dpzoo evaluate first" and set(evaluation["details"]["results"]) == {
        "cas_cnn",
        "cas_resnet",
    }
    assert evaluation["added"] == [{"command": "dpzoo evaluate second", "metrics": ["cas_resnet"]}]
    card = (folder / "README.md").read_text()
    assert "cas_resnet measured with `dpzoo evaluate second`" in card
    results = ModelCard.load(folder / "README.md").data.eval_results
    assert {r.metric_type for r in results} == {"cas_cnn", "cas_resnet"}
    assert all("runs=2" in r.metric_config for r in results), "a mean ± std names its number of runs"

    before = (folder / "config.json").read_text()
    other = {**protocol, "num_samples": 200, "results": {"cas_cnn": _measured(31.0)}}
    with pytest.raises(TargetExistsError, match="num_samples 100 on the card, 200 now"):
        record_evaluation(folder, other, "dpzoo evaluate other")
    argv = ["evaluate", str(folder), "--metrics", "cas_cnn", "--num-samples", "200", "--write-card"]
    assert main(argv) == 2 and "--replace-evaluation" in capsys.readouterr().err  # refused before sampling
    assert (folder / "config.json").read_text() == before

    record_evaluation(folder, other, "dpzoo evaluate other", replace=True)
    assert load_config(folder)["evaluation"]["details"]["results"].keys() == {"cas_cnn"}
    again = {**other, "results": {"cas_cnn": _measured(32.0)}}
    record_evaluation(folder, again, "dpzoo evaluate again")  # every metric measured again: one command
    evaluation = load_config(folder)["evaluation"]
    assert evaluation["command"] == "dpzoo evaluate again" and "added" not in evaluation
