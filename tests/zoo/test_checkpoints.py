"""Every shipped checkpoint loads, samples, carries a card with its guarantee from its own ledger
((ε, δ), a PAC model's mutual-information bound, or none for a base that saw public data only), and
appears in MODEL_CARDS.md."""

import pytest
import torch
from huggingface_hub import ModelCard

import zoo
from zoo.metrics.publication import LOCAL_DIAGNOSTICS
from zoo.release.registry import checkpoints_dir

SHIPPED = sorted(p.parent.name for p in checkpoints_dir().glob("*/config.json"))


@pytest.mark.parametrize("model_id", SHIPPED)
def test_shipped_checkpoint(model_id):
    model = zoo.load(model_id)
    samples = model.sample(4 * (model.num_classes or 1), seed=0)
    assert samples.dtype == torch.float32 and torch.equal(samples, model.sample(len(samples), seed=0))
    if samples.dim() == 4:
        assert 0 <= samples.min() and samples.max() <= 1
    else:  # table rows: an exact, finite density at its own samples, and the evaluation's figures
        assert samples.shape[1] == model.hparams.features and torch.isfinite(model.log_prob(samples)).all()
        for figure in model.pretrained_config["evaluation"]["figures"]:
            assert (checkpoints_dir() / model_id / figure).is_file()
    privacy = ModelCard.load(checkpoints_dir() / model_id / "README.md").data.to_dict()["privacy"]
    if model.privacy_ledger.notion == "pac":  # a mutual-information bound, and no (ε, δ) anywhere
        ((release,), (guarantee,)) = model.privacy_ledger.pac_releases, privacy["guarantees"]
        assert guarantee["mi_bound_nats"] == release.mi_bound and "epsilon" not in privacy
    elif model.privacy_ledger.notion == "public":  # a base that saw declared-public data only: no guarantee
        assert privacy["guarantees"] == [] and "epsilon" not in privacy
        public = [use.dataset_id for use in model.privacy_ledger.public_data]
        assert [p["dataset"] for p in privacy["public_data"]] == public
    else:
        (guarantee,) = model.privacy_ledger.guarantees().values()
        assert privacy["epsilon"] == pytest.approx(guarantee["epsilon"], abs=1e-4)
        assert privacy["delta"] == guarantee["delta"]
    assert (
        f"[{model_id}](checkpoints/{model_id}/README.md)" in (checkpoints_dir().parent / "MODEL_CARDS.md").read_text()
    )
    assert model.pretrained_config["recipe"]["config"].startswith("configs/")


def test_at_least_one_checkpoint_is_shipped():
    assert SHIPPED


@pytest.mark.parametrize("model_id", SHIPPED)
def test_no_card_publishes_a_number_read_from_protected_records(model_id):
    evaluation = zoo.load(model_id).pretrained_config["evaluation"] or {}
    published = {r["metric_type"] for r in evaluation.get("results", [])} | set(
        evaluation.get("details", {}).get("results", {})
    )
    assert not published & set(LOCAL_DIAGNOSTICS)
    assert "not_publishable" not in evaluation.get("details", {}), "no number against the protected training split"
    assert "audit" not in (checkpoints_dir() / model_id / "README.md").read_text().split("## Evaluation")[-1]
