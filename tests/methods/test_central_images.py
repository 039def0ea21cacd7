"""Central images (lightning_modules.parts.central_images): the release's reach of a planted record, one
ledger for the release and the private stage, and a warm start that reads only the release."""

import math

import dp_accounting
import pytest
import torch
from dp_accounting import pld

from lightning_modules.dp_kernel import DPKernel
from lightning_modules.dp_merf import DPMERF
from lightning_modules.parts.central_images import COUNT_WEIGHT, WarmStart, release_central_images
from zoo.data import TensorDataModule
from zoo.privacy import DPBudget
from zoo.release.hub import save_pretrained
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
WARM = dict(noise_multiplier=4.0, clip_norm=3.0, steps=3, batch_size=6, features=16, kernel_widths=[1.0, 2.0])


def toy_data(images: torch.Tensor | None = None) -> TensorDataModule:
    images = torch.rand(120, 1, 8, 8, generator=torch.Generator().manual_seed(0)) if images is None else images
    return TensorDataModule(images, torch.arange(len(images)) % 3, "toy-images", sample_rate=0.25)


class RecordingBudget:
    """Stands in for the plan's budget: keeps the statistic and adds no noise, so neighbours compare exactly."""

    def release(self, statistic, l2_sensitivity, dataset_size, noise_multiplier=None, note=""):
        self.statistic, self.sensitivity = statistic, l2_sensitivity
        return statistic


@pytest.mark.parametrize("subsets", [1, 4])
@pytest.mark.parametrize("planted", [1e6, -1e3, 0.5])
def test_a_planted_record_moves_the_released_sums_by_at_most_the_stated_sensitivity(subsets, planted):
    images = torch.rand(30, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    labels = torch.arange(30) % 3
    settings = WarmStart(clip_norm=2.0, subsets=subsets)
    without, plus = RecordingBudget(), RecordingBudget()
    key = b"k" * 16  # one release draws one key; neighbours are compared under the same one
    release_central_images(images, labels, 3, settings, without, key)
    extreme = torch.full((1, 1, 8, 8), planted)
    release_central_images(torch.cat([images, extreme]), torch.cat([labels, labels[:1]]), 3, settings, plus, key)
    assert plus.sensitivity == pytest.approx(2.0 * math.sqrt(1 + COUNT_WEIGHT**2))
    assert (plus.statistic - without.statistic).norm() <= plus.sensitivity * (1 + 1e-9)


def test_without_noise_the_central_images_are_the_class_means():
    images = torch.rand(30, 1, 8, 8, generator=torch.Generator().manual_seed(2)) * 0.1  # norms below R
    labels = torch.arange(30) % 3
    means = release_central_images(images, labels, 3, WarmStart(clip_norm=5.0), RecordingBudget())
    assert torch.allclose(means, torch.stack([images[labels == c].mean(0) for c in range(3)]), atol=1e-6)


@pytest.mark.parametrize("method", [DPKernel, DPMERF])
def test_one_ledger_holds_the_release_and_the_private_stage_within_the_target(method, tmp_path):
    model = method(**{**method.tiny_recipe().architecture, "warm_start": WARM})
    train(model, toy_data(), DPBudget(target_epsilon=3.0), max_steps=4, **QUIET)
    card = (save_pretrained(model, tmp_path / "m") / "README.md").read_text()
    assert "central images" in card and "σ = 4" in card
    central, private = model.privacy_ledger.entries
    assert central.mechanism == "gaussian" and central.noise_multiplier == 4.0 and central.steps == 1
    assert central.dataset_id == private.dataset_id == "toy-images"
    assert 2.9 < model.privacy_ledger.epsilon("toy-images", 1e-5, "prv") <= 3.0
    assert model.central_images.shape == (3, 1, 8, 8) and model.central_images.abs().sum() > 0
    assert "central_images" in model.state_dict()  # Lightning checkpoints keep them for a resume mid-plan
    assert "central_images" not in method(**method.tiny_recipe().architecture).state_dict()
    accountant = pld.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(dp_accounting.GaussianDpEvent(central.noise_multiplier))
    accountant.compose(
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(
                private.sample_rate, dp_accounting.GaussianDpEvent(private.noise_multiplier)
            ),
            private.steps,
        )
    )
    assert accountant.get_epsilon(1e-5) == pytest.approx(3.0, rel=0.05)


def test_the_warm_start_moves_the_generator_and_reads_only_the_release(monkeypatch):
    model = DPKernel(**{**DPKernel.tiny_recipe().architecture, "warm_start": WARM})
    before = {k: v.clone() for k, v in model.generator.state_dict().items()}
    seen = []
    original = DPKernel.warm_start_step

    def recording(self, step):
        seen.append(step)
        return original(self, step)

    monkeypatch.setattr(DPKernel, "warm_start_step", recording)
    train(model, toy_data(), DPBudget(target_epsilon=3.0), max_steps=2, **QUIET)
    assert seen == list(range(WARM["steps"]))  # step indices, never images
    assert any(not torch.equal(v, model.generator.state_dict()[k]) for k, v in before.items())


def test_bad_warm_start_settings_fail_before_training():
    with pytest.raises(ValueError, match="unknown settings"):
        DPKernel(**{**DPKernel.tiny_recipe().architecture, "warm_start": {"sigma": 3}})
    with pytest.raises(ValueError, match="must be > 0"):
        DPKernel(**{**DPKernel.tiny_recipe().architecture, "warm_start": {"clip_norm": 0}})


@pytest.mark.heavy
def test_dp_lflow_warm_starts_each_class_model_on_its_own_central_image(tmp_path, monkeypatch):
    """Unconditional, one model per class: each part releases its class's mean and fits it by its own loss."""
    from lightning_modules.dp_lflow import DPLFlow
    from lightning_modules.partitioned import PerClassModel

    losses = []
    original = DPLFlow.warm_start_step

    def recording(self, step):
        loss = original(self, step)
        losses.append(loss.item())
        return loss

    monkeypatch.setattr(DPLFlow, "warm_start_step", recording)
    base = {**DPLFlow.tiny_recipe().architecture, "warm_start": {**WARM, "steps": 20}}
    model = PerClassModel("dp-lflow", base, num_classes=3)
    train(model, toy_data(), DPBudget(target_epsilon=3.0, max_grad_norm=0.1), max_steps=2, **QUIET)
    assert len(losses) == 3 * 20 and all(losses[k * 20 + 19] < losses[k * 20] for k in range(3))  # each part fits
    for part in model.parts:
        assert part.central_images.shape == (1, 1, 8, 8) and part.central_images.abs().sum() > 0
    releases = [e for e in model.privacy_ledger.entries if e.mechanism == "gaussian"]
    assert len(releases) == 3 and all(e.partition_of == "toy-images" for e in releases)
    card = (save_pretrained(model, tmp_path / "m") / "README.md").read_text()
    assert "central images" in card
