"""One model per class, released as a class-conditional model under parallel composition."""

import pytest
import torch
from torch.utils.data import TensorDataset

from lightning_modules import DPLFlow, PerClassModel
from tests.toys import ToyData, tiny_trainer
from tests.zoo.test_hub import TINY
from tests.zoo.test_zoo_api import FIT_RECIPE
from zoo.cli import main
from zoo.privacy import DPCallback, PrivacyConfigError
from zoo.release.hub import from_pretrained, save_pretrained


def trained_parts(classes: int = 3) -> list[DPLFlow]:
    parts = []
    for label in range(classes):
        part = DPLFlow(**TINY)
        callback = DPCallback(noise_multiplier=1.0 + label, max_grad_norm=0.1, accountant="rdp")
        data = TensorDataset(torch.rand(40, 1, 8, 8), torch.full((40,), label))
        tiny_trainer([callback], 2).fit(part, ToyData(data, 0.25, f"toy/class={label}", partition_of="toy"))
        parts.append(part.eval())
    return parts


@pytest.fixture(scope="module")
def per_class():
    parts = trained_parts()
    return parts, PerClassModel.from_parts(parts).eval()


def test_ledger_composes_the_parts_in_parallel(per_class):
    parts, model = per_class
    guarantee = model.privacy_ledger.guarantees()["toy"]
    per_part = [p.privacy_ledger.epsilon(f"toy/class={k}") for k, p in enumerate(parts)]
    assert guarantee["epsilon"] == pytest.approx(max(per_part))
    assert len(guarantee["partitions"]) == 3


def test_each_label_is_drawn_from_its_own_part(per_class):
    parts, model = per_class
    for label, part in enumerate(parts):
        torch.testing.assert_close(model.sample(5, labels=[label] * 5, seed=1), part.sample(5, seed=1))
    mixed = model.sample(6, seed=2)  # default labels cycle 0, 1, 2, 0, 1, 2
    assert mixed.shape == (6, 1, 8, 8)
    x = torch.rand(4, 1, 8, 8)
    labels = torch.tensor([2, 0, 2, 1])
    expected = torch.stack([parts[int(k)].log_prob(x[i : i + 1])[0] for i, k in enumerate(labels)])
    torch.testing.assert_close(model.log_prob(x, labels), expected)


def test_per_class_round_trip(per_class, tmp_path):
    _, model = per_class
    loaded = from_pretrained(save_pretrained(model, tmp_path / "per-class"))
    assert torch.equal(loaded.sample(6, seed=0), model.sample(6, seed=0))
    assert "dp-lflow (one model per class)" in (tmp_path / "per-class" / "README.md").read_text()


@pytest.mark.heavy
def test_fit_per_class_trains_each_partition_at_the_target(data_dir, tmp_path):
    (tmp_path / "recipe.yaml").write_text(FIT_RECIPE)  # --per_class overrides its label
    out = tmp_path / "two-digits"
    assert (
        main(["fit", "--config", str(tmp_path / "recipe.yaml"), "--per_class", "2", "--save_pretrained", str(out)]) == 0
    )
    model = from_pretrained(out)
    entries = model.privacy_ledger.entries
    assert [e.dataset_id.rsplit("=", 1)[1] for e in entries] == ["0", "1"]
    assert len({e.partition_of for e in entries}) == 1 and all(e.steps == 2 for e in entries)
    (guarantee,) = model.privacy_ledger.guarantees().values()
    assert guarantee["epsilon"] <= 5.0


class LabelledToyData(ToyData):
    """Toy images with labels 0..2 that can serve one class at a time."""

    def __init__(self, dataset_id: str, label: int | None = None):
        images = torch.rand(90, 1, 8, 8, generator=torch.Generator().manual_seed(5))
        labels = torch.arange(90) % 3
        keep = labels == label if label is not None else slice(None)
        whole = dataset_id
        super().__init__(
            TensorDataset(images[keep], labels[keep]),
            0.25,
            whole if label is None else f"{whole}/class={label}",
            partition_of=None if label is None else whole,
        )
        self.whole = whole

    def for_class(self, label: int) -> "LabelledToyData":
        return LabelledToyData(self.whole, label)


@pytest.mark.heavy
def test_a_per_class_model_fine_tunes_each_class_on_its_class_of_the_new_data(tmp_path):
    model = from_pretrained(save_pretrained(PerClassModel.from_parts(trained_parts()), tmp_path / "pretrained"))
    old = model.privacy_ledger.guarantees()["toy"]
    import zoo

    target = old["epsilon"] + 1.5  # nothing shows "toy" and "new" apart: the card's ε composes both
    tuned = zoo.finetune(
        model,
        LabelledToyData("new"),
        target,
        max_steps=2,
        accountant="rdp",
        accelerator="cpu",
        enable_progress_bar=False,
    )
    guarantees = tuned.privacy_ledger.guarantees()
    assert guarantees["toy"]["composed_with"] == ["new"] and guarantees["new"]["composed_with"] == ["toy"]
    assert target >= guarantees["new"]["epsilon"] == guarantees["toy"]["epsilon"] > old["epsilon"]
    assert len(guarantees["new"]["partitions"]) == 3 and max(guarantees["new"]["partitions"].values()) <= 1.5
    folder = save_pretrained(tuned, tmp_path / "out" / "tuned")
    card = (folder / "README.md").read_text()
    headline = card.split("## Usage")[0]
    delta, epsilon = guarantees["toy"]["delta"], round(guarantees["new"]["epsilon"], 4)
    assert f"δ = {delta:g}) for toy**" in headline and f"(ε = {epsilon}" in headline
    assert f'model = zoo.load("{folder.name}")' in card  # an absolute path is published by its name only
    assert torch.equal(zoo.load(str(folder)).sample(3, seed=0), tuned.sample(3, seed=0))


def test_fine_tuning_a_per_class_model_needs_data_that_serves_one_class():
    import zoo

    model = PerClassModel.from_parts(trained_parts(2))
    with pytest.raises(PrivacyConfigError, match=r"must offer for_class\(label\)"):
        zoo.finetune(model, ToyData(TensorDataset(torch.rand(8, 1, 8, 8)), 0.5, "new"), 1.0)
