"""Every shipped checkpoint loads, samples, carries a card with (ε, δ) from its own ledger,
and appears in MODEL_CARDS.md."""

import pytest
import torch
from huggingface_hub import ModelCard

import zoo
from zoo.registry import checkpoints_dir

SHIPPED = sorted(p.parent.name for p in checkpoints_dir().glob("*/config.json"))


@pytest.mark.parametrize("model_id", SHIPPED)
def test_shipped_checkpoint(model_id):
    model = zoo.load(model_id)
    images = model.sample(4 * (model.num_classes or 1), seed=0)
    assert images.dtype == torch.float32 and 0 <= images.min() and images.max() <= 1
    assert torch.equal(images, model.sample(len(images), seed=0))
    privacy = ModelCard.load(checkpoints_dir() / model_id / "README.md").data.to_dict()["privacy"]
    (guarantee,) = model.privacy_ledger.guarantees().values()
    assert privacy["epsilon"] == pytest.approx(guarantee["epsilon"], abs=1e-4)
    assert privacy["delta"] == guarantee["delta"]
    assert (
        f"[{model_id}](checkpoints/{model_id}/README.md)" in (checkpoints_dir().parent / "MODEL_CARDS.md").read_text()
    )
    assert model.pretrained_config["recipe"]["config"].startswith("configs/")


def test_at_least_one_checkpoint_is_shipped():
    assert SHIPPED
