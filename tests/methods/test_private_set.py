"""Private Set Generation: the set and its classifier see the private data only through the DP-SGD-
sanitised gradients of the probe; the accounting of a run is DP-SGD's; S is the release and sampling
returns it."""

import dp_accounting
import pytest
import torch
from dp_accounting import rdp
from safetensors.torch import load_file

from lightning_modules.dp_merf import DPMERF
from lightning_modules.private_set import PrivateSet, SanitisedGradients
from zoo.data import TensorDataModule
from zoo.methods import toy_images
from zoo.metrics.set_accuracy import convnet_accuracy, set_accuracy
from zoo.privacy import DPBudget, DPCallback
from zoo.release.hub import save_pretrained
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


def tiny_set(**overrides) -> PrivateSet:
    torch.manual_seed(0)
    return PrivateSet(**{**PrivateSet.tiny_recipe().architecture, **overrides})


def trained_set(data, steps: int = 2, privacy: DPCallback | None = None, **overrides) -> PrivateSet:
    model = tiny_set(**overrides)
    torch.manual_seed(1)  # the classifier's re-draws
    train(model, data, privacy or DPBudget(noise_multiplier=1.0, max_grad_norm=0.1), max_steps=steps, **QUIET)
    return model


def toy_data(seed: int) -> TensorDataModule:
    images = torch.rand(120, 1, 8, 8, generator=torch.Generator().manual_seed(seed))
    return TensorDataModule(images, torch.arange(120) % 3, "toy-images", sample_rate=0.25)


def released_state(model: PrivateSet) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items() if not k.startswith("gradient_probe")}


def test_the_set_and_classifier_see_private_data_only_through_the_sanitised_gradients(monkeypatch):
    """Two runs on different private images end with different sets; with the sanitised gradients
    fixed, the same two runs end with identical sets and classifiers: nothing else reads the data."""
    assert not _states_equal(released_state(trained_set(toy_data(1))), released_state(trained_set(toy_data(2))))

    def fixed(self, closure=None):
        self.gradients = [torch.full_like(p, 0.01) for group in self.param_groups for p in group["params"]]

    monkeypatch.setattr(SanitisedGradients, "step", fixed)
    first, second = released_state(trained_set(toy_data(1))), released_state(trained_set(toy_data(2)))
    assert _states_equal(first, second)


def _states_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def recorded_batches(monkeypatch) -> list[tuple]:
    """Each private batch with the classifier's weights it met and the sanitised gradient it gave."""
    records = []
    sanitised = PrivateSet.sanitised_gradients

    def recording(self, images, labels):
        weights = {k: v.clone() for k, v in self.classifier.state_dict().items()}
        gradients = sanitised(self, images, labels)
        records.append((images.clone(), labels.clone(), weights, gradients))
        return gradients

    monkeypatch.setattr(PrivateSet, "sanitised_gradients", recording)
    return records


def test_the_sanitised_gradient_is_the_noised_sum_of_clipped_per_record_gradients(monkeypatch):
    """At negligible noise and a large C, the sanitised gradient points along the batch gradient of
    θ; at a small C its norm is at most C per record over the expected batch q·N."""
    records = recorded_batches(monkeypatch)
    trained_set(toy_data(1), steps=2, privacy=DPBudget(noise_multiplier=1e-6, max_grad_norm=1e3))
    for images, labels, weights, gradients in records:
        network = tiny_set().classifier
        network.load_state_dict(weights)
        loss = torch.nn.functional.cross_entropy(network(images), labels, reduction="sum")
        expected = torch.cat([g.flatten() for g in torch.autograd.grad(loss, list(network.parameters()))])
        got = torch.cat([g.flatten() for g in gradients])
        assert torch.nn.functional.cosine_similarity(got, expected, dim=0) > 0.9999
        assert got.norm() == pytest.approx(expected.norm().item() / 30, rel=1e-3)  # the sum over q·N = 30
    records.clear()
    clip = 1e-3
    trained_set(toy_data(1), steps=2, privacy=DPBudget(noise_multiplier=1e-6, max_grad_norm=clip))
    for images, _, _, gradients in records:
        assert torch.cat([g.flatten() for g in gradients]).norm() <= clip * len(images) / 30 * 1.001


def test_epsilon_recomputed_from_the_ledger_by_a_second_accountant():
    """R·T·K steps, each one Poisson-subsampled Gaussian at the datamodule's rate: Google's RDP
    accountant gives the ledger's ε from (q, σ, steps) alone."""
    model = trained_set(toy_data(1), steps=6, privacy=DPBudget(target_epsilon=3.0, accountant="rdp"))
    (entry,) = model.privacy_ledger.entries
    assert entry.mechanism == "subsampled_gaussian" and entry.steps == 6 and entry.sample_rate == 0.25
    event = dp_accounting.PoissonSampledDpEvent(
        entry.sample_rate, dp_accounting.GaussianDpEvent(entry.noise_multiplier)
    )
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, entry.steps))
    reference = accountant.get_epsilon(1e-5)
    assert model.privacy_ledger.epsilon(entry.dataset_id, 1e-5, "rdp") == pytest.approx(reference, rel=0.02)
    assert reference <= 3.0 * 1.01


def test_sampling_returns_the_released_set(tmp_path):
    """The first spc·K default samples are S in class order; more repeat it; only S is written, and the
    card says so."""
    model = trained_set(toy_data(1))
    images, labels = model.released_set()
    assert torch.equal(labels, torch.tensor([0, 0, 1, 1, 2, 2]))
    samples = model.sample(12, labels=labels.repeat(2), seed=0)
    assert torch.equal(samples, images.repeat(2, 1, 1, 1))
    assert torch.equal(model.sample(3, seed=5)[2], images[4])  # class 2's first image
    folder = save_pretrained(model, tmp_path / "model")
    assert set(load_file(str(folder / "model.safetensors"))) == {"synthetic_set.images", "synthetic_set.labels"}
    assert "The release is the synthetic set S: 2 images per class, free pixels" in (folder / "README.md").read_text()


def test_the_generator_prior_trains_the_generator_and_keeps_s_in_range():
    settings = dict(prior=True, image_shape=(1, 28, 28), generator_width=4, width=4, depth=2)
    before = tiny_set(**settings).synthetic_set().detach()
    model = trained_set(toy_images(size=28, records=60), steps=2, **settings)
    images, _ = model.released_set()
    assert images.shape == (6, 1, 28, 28) and 0 <= images.min() and images.max() <= 1
    assert not torch.equal(images, before)


def test_the_generator_prior_makes_colour_images():
    images = torch.rand(60, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    data = TensorDataModule(images, torch.arange(60) % 3, "toy-colour-images", sample_rate=0.25)
    model = trained_set(data, prior=True, image_shape=(3, 32, 32), generator_width=2, width=4, depth=2)
    images, labels = model.released_set()
    assert images.shape == (6, 3, 32, 32) and labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert model.sample(4, seed=0).shape == (4, 3, 32, 32)


def test_clear_errors_for_bad_settings_and_data():
    with pytest.raises(ValueError, match="at least 21×21 pixels, got 8×8"):
        PrivateSet(prior=True, image_shape=(1, 8, 8))
    with pytest.raises(ValueError, match="positive"):
        PrivateSet(images_per_class=0)
    with pytest.raises(ValueError, match="pools"):
        PrivateSet(image_shape=(1, 4, 4), depth=3)
    with pytest.raises(ValueError, match=r"built for \(1, 8, 8\) images"):
        trained_set(toy_images(size=10))


def test_the_papers_protocol_trains_its_convnet_on_the_set_and_refuses_a_generator():
    """A separable toy set is learnt by the paper's ConvNet (the metric can tell a good set)."""
    images = torch.cat([torch.zeros(10, 1, 8, 8), torch.ones(10, 1, 8, 8)])
    labels = torch.arange(2).repeat_interleave(10)
    noisy = (images + 0.1 * torch.randn(images.shape, generator=torch.Generator().manual_seed(0))).clamp(0, 1)
    assert convnet_accuracy((images, labels), (noisy, labels), 2, seed=0, epochs=20) == 100.0
    with pytest.raises(ValueError, match="releases a generator"):
        set_accuracy(DPMERF(), "mnist")
