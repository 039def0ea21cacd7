"""DP²-VAE: encoders on per-record parts, never released; the decoder learns only through clipped,
noised per-example gradients; its ε recomputed from what a run did, with the 2C·B sensitivity."""

from types import SimpleNamespace

import dp_accounting
import pytest
import pytorch_lightning as pl
import torch
from dp_accounting import pld
from huggingface_hub import ModelCard
from safetensors.torch import load_file

from lightning_modules.dp2_vae import DP2VAE, DP2VAEDPEncoder
from zoo.methods import toy_images
from zoo.privacy import DPBudget, DPCallback, PrivacyBarrier, PrivacyConfigError
from zoo.privacy.mechanisms import HelperQueryDPSGD, PerExampleDPSGD, training_mechanism
from zoo.privacy.mechanisms.helper_query_dp_sgd import paper_theorem_epsilon
from zoo.release.hub import save_pretrained
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


def tiny_dp2_vae(**overrides) -> DP2VAE:
    torch.manual_seed(0)
    return DP2VAE(**{**DP2VAE.tiny_recipe().architecture, **overrides})


def toy_data():
    return DP2VAE.tiny_recipe().data()


def recorded_decoder_gradients(monkeypatch) -> list[torch.Tensor]:
    """Every decoder gradient the mechanism writes, flattened and times B (the sum it noised)."""
    written = []
    privatise = HelperQueryDPSGD.privatise_step

    def recording(self, optimizer):
        privatise(self, optimizer)
        written.append(torch.cat([p.grad.reshape(-1) for p in self.engine.params]) * self.terms_per_step)

    monkeypatch.setattr(HelperQueryDPSGD, "privatise_step", recording)
    return written


def test_each_variant_gets_its_mechanism():
    assert training_mechanism(PrivacyBarrier.PRIVATE_MODEL, tiny_dp2_vae()) is HelperQueryDPSGD
    assert training_mechanism(PrivacyBarrier.PRIVATE_MODEL, DP2VAEDPEncoder()) is PerExampleDPSGD


def test_epsilon_recomputed_from_first_principles_by_a_second_accountant(monkeypatch):
    """From what the run did (B terms per step, clip C, the noise it added, 1/K, T) and the theorem
    (every term of a step may move by 2C), Google's PLD accountant gives the ledger's ε; the
    paper's Theorem 3.1 (sensitivity 2C) claims far less."""
    written = recorded_decoder_gradients(monkeypatch)
    sigma, clip, encoders, terms, steps = 40.0, 0.5, 3, 8, 20
    model = tiny_dp2_vae(encoders=encoders, batch_size=terms, pretrain_steps=1)
    train(model, toy_data(), DPBudget(noise_multiplier=sigma, max_grad_norm=clip), max_steps=steps, **QUIET)
    (entry,) = model.privacy_ledger.entries
    assert entry.mechanism == "helper_query_subsampled_gaussian" and entry.steps == steps == len(written)
    noise_std = torch.cat(written).std().item()  # the clipped sum (at most B·C in norm) is negligible
    assert noise_std == pytest.approx(sigma * clip, rel=0.05)  # ~190 decoder weights × 20 steps: 1.2% standard error
    event = dp_accounting.PoissonSampledDpEvent(
        1 / encoders, dp_accounting.GaussianDpEvent(noise_std / (2 * clip * terms))
    )
    accountant = pld.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    reference = accountant.get_epsilon(1e-5)
    assert entry.sample_rate == pytest.approx(1 / encoders)
    assert model.privacy_ledger.epsilon(entry.dataset_id, 1e-5, "prv") == pytest.approx(reference, rel=0.05)
    assert paper_theorem_epsilon(entry.to_dict()) < reference / 3


def test_each_decoder_step_is_the_clipped_mean_of_at_most_b_terms(monkeypatch):
    """At negligible noise the decoder's gradient is at most C in norm: every term was clipped (an
    unclipped ELBO gradient is hundreds of times larger)."""
    written = recorded_decoder_gradients(monkeypatch)
    clip, terms = 0.01, 4
    model = tiny_dp2_vae(batch_size=terms, pretrain_steps=1)
    privacy = DPBudget(noise_multiplier=1e-4, max_grad_norm=clip, accountant="rdp")
    train(model, toy_data(), privacy, max_steps=5, **QUIET)
    for summed in written:
        assert 0 < summed.norm() / terms <= clip * 1.01


def test_more_terms_than_declared_are_refused(monkeypatch):
    monkeypatch.setattr(DP2VAE, "helper_terms_per_step", property(lambda self: 2))
    model = tiny_dp2_vae(batch_size=4, pretrain_steps=1)
    with pytest.raises(PrivacyConfigError, match="4 per-example terms entered one step"):
        train(model, toy_data(), DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=3, **QUIET)


def test_encoders_keep_training_and_never_appear_in_the_released_weights(tmp_path):
    model = tiny_dp2_vae(pretrain_steps=1)
    before = {}
    original = DP2VAE.on_train_start

    def snapshot(self):
        original(self)
        if self.encoders:
            before.update({k: v.clone() for k, v in self.encoders.state_dict().items()})

    model.on_train_start = snapshot.__get__(model)
    train(model, toy_data(), DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=4, **QUIET)
    assert any(not torch.equal(value, before[key]) for key, value in model.encoders.state_dict().items())
    released = load_file(str(save_pretrained(model, tmp_path / "m") / "model.safetensors"))
    assert set(released) == {f"decoder.{key}" for key in model.decoder.state_dict()}


def test_a_resumed_plan_gives_each_encoder_the_same_part(tmp_path):
    saved = tiny_dp2_vae(pretrain_steps=1)
    checkpoint = pl.callbacks.ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=2, save_top_k=-1)
    privacy = DPBudget(noise_multiplier=5.0, accountant="rdp")
    train(saved, toy_data(), privacy, callbacks=[checkpoint], max_steps=4, **{**QUIET, "enable_checkpointing": True})
    resumed = tiny_dp2_vae(pretrain_steps=1)
    fresh = DPBudget(noise_multiplier=5.0, accountant="rdp")  # a resumed run builds its own budget
    train(resumed, toy_data(), fresh, ckpt_path=str(sorted(tmp_path.glob("*.ckpt"))[-1]), max_steps=6, **QUIET)
    for (before, _), (after, _) in zip(saved.helper_parts(), resumed.helper_parts(), strict=True):
        assert torch.equal(before, after)


@pytest.mark.heavy
def test_cards_name_the_variant_and_show_the_paper_claim_as_no_guarantee(tmp_path):
    model = tiny_dp2_vae()
    train(model, toy_data(), DPBudget(target_epsilon=5.0, accountant="rdp"), max_steps=3, **QUIET)
    card = (save_pretrained(model, tmp_path / "helpers") / "README.md").read_text()
    (entry,) = model.privacy_ledger.entries
    claim = paper_theorem_epsilon(entry.to_dict())
    assert claim < model.privacy_ledger.epsilon(entry.dataset_id, entry.delta, "rdp") <= 5.0
    assert "Variant: the paper's Algorithms 1 and 2" in card
    assert f"would claim ε = {claim:.3g} for this run. That is not a guarantee" in card

    recipe = DP2VAEDPEncoder.tiny_recipe()
    encoder_variant = DP2VAEDPEncoder(**recipe.architecture)
    train(encoder_variant, recipe.data(), DPBudget(**recipe.privacy), max_steps=2, **QUIET)
    folder = save_pretrained(encoder_variant, tmp_path / "dp-encoder")
    assert "Variant: DP encoder" in ModelCard.load(folder / "README.md").text
    assert {key.split(".")[0] for key in load_file(str(folder / "model.safetensors"))} == {"decoder"}


def test_trainer_fit_alone_is_refused():
    with pytest.raises(PrivacyConfigError, match="trains in stages"):
        pl.Trainer(max_steps=1, callbacks=[DPCallback(noise_multiplier=1.0)], **QUIET).fit(tiny_dp2_vae(), toy_data())


def test_bad_settings_and_data_are_refused_clearly():
    with pytest.raises(ValueError, match="positive integers"):
        DP2VAE(encoders=0)
    with pytest.raises(ValueError, match="pretrain_clip must be positive"):
        DP2VAE(pretrain_clip=0.0)
    with pytest.raises(ValueError, match="image_shape must be"):
        DP2VAEDPEncoder(image_shape=(28, 28))
    with pytest.raises(ValueError, match=r"built for \(1, 8, 8\) images, got \(1, 28, 28\)"):
        train(tiny_dp2_vae(), toy_images(size=28), DPBudget(noise_multiplier=5.0), max_steps=2, **QUIET)
    with pytest.raises(ValueError, match=r"built for \(1, 8, 8\) images, got \(1, 28, 28\)"):
        encoder_variant = DP2VAEDPEncoder(**DP2VAEDPEncoder.tiny_recipe().architecture)
        train(encoder_variant, toy_images(size=28), DPBudget(noise_multiplier=5.0), max_steps=2, **QUIET)


def test_several_processes_are_refused(monkeypatch):
    model = tiny_dp2_vae()
    monkeypatch.setattr(type(model), "trainer", SimpleNamespace(world_size=2))
    with pytest.raises(PrivacyConfigError, match="one device"):
        model.on_train_start()
