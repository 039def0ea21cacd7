"""GS-WGAN: critics on per-record parts, never released; the generator learns only through the
sanitiser; its ε recomputed from what a run did."""

import copy
import json
from types import SimpleNamespace

import dp_accounting
import pytest
import pytorch_lightning as pl
import torch
from dp_accounting import pld, rdp
from huggingface_hub import ModelCard
from safetensors.torch import load_file

from lightning_modules.gs_wgan import GSWGAN, PRETRAINING, official_accounting_epsilon, step_only
from lightning_modules.nets.dcgan import DCGANCritic, DCGANGenerator, ResNetGenerator, transposed_convolution
from zoo.data import TensorDataModule
from zoo.methods import toy_images
from zoo.privacy import DPBudget, DPCallback, GradientSanitizer, PrivacyConfigError, PrivateHelpers, epsilon_spent
from zoo.release.hub import from_pretrained, save_pretrained
from zoo.release.registry import checkpoints_dir
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


def tiny_gs_wgan(**overrides) -> GSWGAN:
    torch.manual_seed(0)
    return GSWGAN(**{**GSWGAN.tiny_recipe().architecture, **overrides})


def toy_data():
    return GSWGAN.tiny_recipe().data()


def test_removing_a_record_changes_only_its_critics_part():
    images, labels = toy_data().train_set.tensors
    helpers, key = PrivateHelpers(4), b"k" * 16
    parts = helpers.split(images, labels, key)
    removed = 17
    keep = torch.arange(len(images)) != removed
    after = helpers.split(images[keep], labels[keep], key)
    owner = next(k for k, (members, _) in enumerate(parts) if (members == images[removed]).all((1, 2, 3)).any())
    for k, ((before_images, _), (after_images, _)) in enumerate(zip(parts, after, strict=True)):
        if k == owner:
            assert len(after_images) == len(before_images) - 1
        else:
            assert torch.equal(before_images, after_images)


def test_a_resumed_plan_gives_each_critic_the_same_part(tmp_path):
    """Critics keep training on their parts after a resume: the assignment key travels in the
    Lightning checkpoint (a fresh key would give a critic records of two parts)."""
    saved = tiny_gs_wgan(pretrain_steps=1)
    checkpoint = pl.callbacks.ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=2, save_top_k=-1)
    privacy = DPBudget(noise_multiplier=5.0, accountant="rdp")
    train(saved, toy_data(), privacy, callbacks=[checkpoint], max_steps=4, **{**QUIET, "enable_checkpointing": True})
    resumed = tiny_gs_wgan(pretrain_steps=1)
    last = sorted(tmp_path.glob("*.ckpt"))[-1]
    fresh = DPBudget(noise_multiplier=5.0, accountant="rdp")  # a resumed run builds its own budget
    train(resumed, toy_data(), fresh, ckpt_path=str(last), max_steps=6, **QUIET)
    for (before, _), (after, _) in zip(saved.helper_parts(), resumed.helper_parts(), strict=True):
        assert torch.equal(before, after)


def test_critics_never_appear_in_the_released_weights(tmp_path):
    model = tiny_gs_wgan()
    train(model, toy_data(), DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=3, **QUIET)
    released = load_file(str(save_pretrained(model, tmp_path / "m") / "model.safetensors"))
    assert set(released) == {f"generator.{key}" for key in model.generator.state_dict()}
    assert all(name not in key for key in released for name in ("critic", "scratch", "trained"))


def test_the_generator_learns_only_through_the_sanitiser(monkeypatch):
    """With the sanitiser's output replaced by zeros, private steps leave the generator exactly as
    it was while the critics keep training: no other path from the data reaches it."""
    monkeypatch.setattr(GradientSanitizer, "sanitize_gradient", lambda self, grad: torch.zeros_like(grad))
    at_private_start = {}
    original = GSWGAN.on_train_start

    def snapshot_then_start(self):
        original(self)
        if self.training_stage["name"] != PRETRAINING:
            at_private_start["generator"] = {k: v.clone() for k, v in self.trained_generator.state_dict().items()}
            at_private_start["critics"] = {k: v.clone() for k, v in self.critics.state_dict().items()}

    monkeypatch.setattr(GSWGAN, "on_train_start", snapshot_then_start)
    model = tiny_gs_wgan(pretrain_steps=1)
    train(model, toy_data(), DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=4, **QUIET)
    generator, critics = at_private_start["generator"], at_private_start["critics"]
    assert all(torch.equal(value, generator[key]) for key, value in model.trained_generator.state_dict().items())
    assert any(not torch.equal(value, critics[key]) for key, value in model.critics.state_dict().items())


def test_epsilon_recomputed_from_first_principles_by_a_second_accountant(monkeypatch):
    """From what the run did (rows per step, clip C, the noise it added, 1/K, T) and the theorem
    (every row of a step may move by 2C), Google's PLD accountant gives the ledger's ε; the official
    per-row composition is far lower."""
    received = []
    sanitize = GradientSanitizer.sanitize_gradient

    def recording(self, grad):
        out = sanitize(self, grad)
        received.append(out.detach() * len(grad))  # undo the mean reduction's 1/B
        return out

    monkeypatch.setattr(GradientSanitizer, "sanitize_gradient", recording)
    sigma_row, clip, critics, rows, steps = 8.0, 0.5, 3, 16, 20
    model = tiny_gs_wgan(critics=critics, batch_size=rows)
    privacy = DPBudget(noise_multiplier=sigma_row, max_grad_norm=clip, accountant="prv")
    train(model, toy_data(), privacy, max_steps=steps, **QUIET)
    (entry,) = model.privacy_ledger.entries
    assert entry.dataset_id == "toy-images" and entry.steps == steps == len(received)
    assert all(len(r) == rows for r in received)
    noise_std = torch.cat(received).std().item()
    assert noise_std == pytest.approx(sigma_row * clip, rel=0.03)
    event = dp_accounting.PoissonSampledDpEvent(
        1 / critics, dp_accounting.GaussianDpEvent(noise_std / (2 * clip * rows**0.5))
    )
    accountant = pld.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    reference = accountant.get_epsilon(1e-5)
    assert entry.sample_rate == pytest.approx(1 / critics)
    assert model.privacy_ledger.epsilon(entry.dataset_id, 1e-5, "prv") == pytest.approx(reference, rel=0.05)
    official = official_accounting_epsilon(entry.to_dict())
    assert official == pytest.approx(epsilon_spent([(sigma_row, 1 / critics, steps * rows)], 1e-5, "rdp"))
    assert official < reference / 3


def test_card_shows_the_official_accounting_beside_the_sound_guarantee(tmp_path):
    model = tiny_gs_wgan()
    train(model, toy_data(), DPBudget(target_epsilon=5.0, accountant="rdp"), max_steps=3, **QUIET)
    card = (save_pretrained(model, tmp_path / "m") / "README.md").read_text()
    (entry,) = model.privacy_ledger.entries
    official = official_accounting_epsilon(entry.to_dict())
    assert official < model.privacy_ledger.epsilon(entry.dataset_id, entry.delta, "rdp") <= 5.0
    assert f"would print ε = {official:.3g} for this run. That is not a guarantee" in card


def test_trainer_fit_alone_is_refused():
    with pytest.raises(PrivacyConfigError, match="trains in stages"):
        pl.Trainer(max_steps=1, callbacks=[DPCallback(noise_multiplier=1.0)], **QUIET).fit(tiny_gs_wgan(), toy_data())


def test_bad_settings_and_data_are_refused_clearly():
    with pytest.raises(ValueError, match="generator must be one of"):
        GSWGAN(generator="stylegan")
    with pytest.raises(ValueError, match="positive integers"):
        GSWGAN(critics=0)
    with pytest.raises(ValueError, match="image_shape must be"):
        GSWGAN(image_shape=(28, 28))
    with pytest.raises(ValueError, match=r"built for \(1, 28, 28\) images, got \(1, 8, 8\)"):
        train(tiny_gs_wgan(), toy_images(size=8), DPBudget(noise_multiplier=5.0), max_steps=2, **QUIET)


@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32), (3, 24, 40), (1, 21, 21), (1, 64, 64)])
def test_the_networks_take_images_of_any_shape(shape):
    code, labels = torch.rand(5, 10), torch.tensor([0, 1, 2, 0, 1])
    for network in (DCGANGenerator, ResNetGenerator):
        images = network(10, 3, 2, image_shape=shape)(code, labels)
        assert images.shape == (5, *shape) and 0 <= images.min() and images.max() <= 1
        assert DCGANCritic(3, 2, image_shape=shape)(images, labels).shape == (5,)


@pytest.mark.parametrize("stride, kernel, side", [(2, 8, 11), (1, 5, 7), (2, 3, 4)])
def test_the_cpus_transposed_convolution_is_the_layers_forward_and_backward(stride, kernel, side):
    layer = torch.nn.ConvTranspose2d(6, 3, kernel, stride=stride)
    x = torch.randn(4, 6, side, side + 2, requires_grad=True)
    expected = layer(x)
    (expected_grad,) = torch.autograd.grad(expected.square().sum(), x)
    ours = transposed_convolution(x, layer)
    (our_grad,) = torch.autograd.grad(ours.square().sum(), x)
    assert ours.shape == expected.shape
    assert torch.allclose(ours, expected, atol=1e-5) and torch.allclose(our_grad, expected_grad, rtol=1e-4, atol=1e-4)


def test_stepping_one_critic_is_the_shared_optimizers_step_on_it():
    """The critics' Adam steps the trained critic's parameters alone, with their own state: the same update
    and the same optimizer state as a step over all of them (where only that critic has gradients)."""
    torch.manual_seed(0)
    critics = torch.nn.ModuleList(DCGANCritic(3, 2) for _ in range(3))
    copies = copy.deepcopy(critics)
    everything = torch.optim.Adam(critics.parameters(), lr=1e-2)
    one_at_a_time = torch.optim.Adam(copies.parameters(), lr=1e-2)
    images, labels = torch.rand(4, 1, 28, 28), torch.tensor([0, 1, 2, 0])
    for index in (0, 2, 0, 1):
        everything.zero_grad(set_to_none=True)
        critics[index](images, labels).square().mean().backward()
        everything.step()
        copies[index].zero_grad(set_to_none=True)
        copies[index](images, labels).square().mean().backward()
        step_only(one_at_a_time, copies[index])
    for ours, theirs in zip(copies.state_dict().values(), critics.state_dict().values(), strict=True):
        assert torch.equal(ours, theirs)
    assert str(one_at_a_time.state_dict()) == str(everything.state_dict())


def test_the_28_by_28_networks_are_the_official_ones():
    """The official layer shapes (shipped weights keep loading): FC to 4×4×4w, deconvs 5, 5 and 8
    stride 2; the ResNet's FC to 4×4×4w; the critic's linear layers on 4×4×4w features."""
    generator = DCGANGenerator(10, 10, 64)
    shapes = {name: tuple(p.shape) for name, p in generator.named_parameters()}
    assert shapes == {
        "fc.weight": (4 * 4 * 4 * 64, 20),
        "fc.bias": (4 * 4 * 4 * 64,),
        "deconv1.weight": (4 * 64, 2 * 64, 5, 5),
        "deconv1.bias": (2 * 64,),
        "deconv2.weight": (2 * 64, 64, 5, 5),
        "deconv2.bias": (64,),
        "deconv3.weight": (64, 1, 8, 8),
        "deconv3.bias": (1,),
    }
    assert generator.deconv3.stride == (2, 2)
    assert ResNetGenerator(10, 10, 64).fc.weight.shape == (4 * 4 * 4 * 64, 20)
    critic = DCGANCritic(10, 64)
    assert critic.score.weight.shape == (1, 4 * 4 * 4 * 64)
    assert critic.label_embedding.weight.shape == (10, 4 * 4 * 4 * 64)


def test_too_small_images_for_the_dcgan_generator_are_refused_clearly():
    with pytest.raises(ValueError, match=r"at least 21×21 pixels, got 8×8: resize the data"):
        DCGANGenerator(image_shape=(1, 8, 8))
    with pytest.raises(ValueError, match=r"at least 21×21 pixels, got 20×32"):
        GSWGAN(image_shape=(3, 20, 32))


def test_a_run_on_colour_images_saves_and_reloads_its_shape(tmp_path):
    images = torch.rand(60, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    data = TensorDataModule(images, torch.arange(60) % 3, "toy-colour-images", sample_rate=0.25)
    model = tiny_gs_wgan(image_shape=(3, 32, 32), pretrain_steps=1)
    train(model, data, DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=3, **QUIET)
    reloaded = from_pretrained(save_pretrained(model, tmp_path / "m"))
    assert torch.equal(reloaded.sample(4, seed=0), model.sample(4, seed=0))
    assert reloaded.sample(4, seed=0).shape == (4, 3, 32, 32)


def test_several_processes_are_refused(monkeypatch):
    model = tiny_gs_wgan()
    monkeypatch.setattr(type(model), "trainer", SimpleNamespace(world_size=2))
    with pytest.raises(PrivacyConfigError, match="one device"):
        model.on_train_start()


GS_WGAN_CHECKPOINTS = sorted(p.parent.name for p in checkpoints_dir().glob("gs-wgan-*/config.json"))


@pytest.mark.parametrize("model_id", GS_WGAN_CHECKPOINTS)
def test_a_shipped_gs_wgan_epsilon_recomputes_from_its_ledger_with_dp_accounting(model_id):
    """One Poisson-subsampled Gaussian per step at rate 1/K, noise σ_row / (2√B), by dp-accounting's RDP or
    PLD (at a coarser grid than the zoo's: its pessimistic estimate is an upper bound at any grid)."""
    config = json.loads((checkpoints_dir() / model_id / "config.json").read_text())
    (entry,) = config["privacy_ledger"]["entries"]
    rows = config["architecture"]["batch_size"]
    assert entry["sample_rate"] == pytest.approx(1 / config["architecture"]["critics"])
    sigma = entry["parameters"]["row_noise_multiplier"] / (2 * rows**0.5)
    assert entry["noise_multiplier"] == pytest.approx(sigma)
    accountant = (
        rdp.RdpAccountant() if entry["accountant"] == "rdp" else pld.PLDAccountant(value_discretization_interval=1e-2)
    )
    event = dp_accounting.PoissonSampledDpEvent(entry["sample_rate"], dp_accounting.GaussianDpEvent(sigma))
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, entry["steps"]))
    card = ModelCard.load(checkpoints_dir() / model_id / "README.md").data.to_dict()["privacy"]
    assert card["epsilon"] == pytest.approx(accountant.get_epsilon(entry["delta"]), rel=1e-3)
