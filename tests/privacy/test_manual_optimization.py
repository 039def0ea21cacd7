"""Manual optimisation with several optimisers: only the declared private module is privatised."""

import pytest
import pytorch_lightning as pl
import torch
from torch import nn

from tests.toys import GradientRecorder, ToyData, tiny_trainer, toy_images
from zoo.privacy import DPCallback, PrivacyConfigError


def clone_state(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in module.state_dict().items()}


def assert_dp_gradient_is_true_gradient(dp_grads, params, factor):
    """With C = ∞ and σ ≈ 0 the private gradient is the true gradient of the mean loss
    × B/(qN): nothing else leaked into it and nothing of it was dropped."""
    for dp_grad, p in zip(dp_grads, params, strict=True):
        torch.testing.assert_close(dp_grad, p.grad * factor, rtol=1e-4, atol=1e-6)


class ToyGAN(pl.LightningModule):
    """Generator (public) and critic (private, B2). The generator steps first, so its
    backward pass runs through the critic just before the critic's private step."""

    privacy_barrier = "B2"
    public_modules = {"generator": "trained only through the private critic's scores of generated samples"}

    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.generator = nn.Sequential(nn.Linear(4, 64), nn.Unflatten(1, (1, 8, 8)))
        self.critic = nn.Sequential(nn.Conv2d(1, 2, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(32, 1))
        self.critic_snapshots = []

    def private_modules(self):
        return [self.critic]

    def critic_loss(self, real, fake):
        scores = self.critic(torch.cat([real, fake]))  # one call: row i is example i
        return -scores[: len(real)].mean() + scores[len(real) :].mean()

    def training_step(self, batch, batch_idx):
        real, _ = batch
        critic_opt, generator_opt = self.optimizers()
        generator_opt.zero_grad()
        self.manual_backward(-self.critic(self.generator(torch.randn(8, 4))).mean())
        generator_opt.step()

        fake = self.generator(torch.randn(len(real), 4)).detach()
        self.critic_snapshots.append((clone_state(self.critic), real, fake))
        critic_opt.zero_grad()
        self.manual_backward(self.critic_loss(real, fake))
        critic_opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.critic.parameters(), lr=0.05), torch.optim.SGD(self.generator.parameters(), lr=0.05)


def test_only_the_critic_is_private_and_each_critic_step_is_one_accounted_step():
    gan = ToyGAN()
    generator_before = [p.clone() for p in gan.generator.parameters()]
    recorder = GradientRecorder()
    dp = DPCallback(noise_multiplier=1e-13, max_grad_norm=1e6, accountant="rdp", noise_seed=0)
    rate, data = 0.5, toy_images(40)
    tiny_trainer([dp, recorder], max_steps=6).fit(gan, ToyData(data, rate))

    assert dp.entry.steps == 3 and dp.entry.barrier == "B2"  # 3 batches, 3 critic steps (6 optimizer steps)
    assert any(not torch.equal(a, b) for a, b in zip(generator_before, gan.generator.parameters(), strict=True))

    critic_grads = recorder.grads[1::2]
    for (state, real, fake), dp_grads in zip(gan.critic_snapshots, critic_grads, strict=True):
        reference = ToyGAN()
        reference.critic.load_state_dict(state)
        reference.critic_loss(real, fake).backward()
        factor = 2 * len(real) / (rate * len(data))  # per-row scale of the mean loss over 2B rows, over q·N
        assert_dp_gradient_is_true_gradient(dp_grads, reference.critic.parameters(), factor)


class PrivateDecoderOnly(pl.LightningModule):
    """DP²-VAE's shape: a public encoder and a private decoder in two optimisers, one
    backward pass for both, the encoder stepping first."""

    privacy_barrier = "B4"
    public_modules = {"encoder": "a test of the decoder's gradient alone (DP²-VAE accounts for its encoders)"}

    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.encoder, self.decoder = nn.Linear(64, 3), nn.Linear(3, 64)
        self.snapshots = []

    def private_modules(self):
        return [self.decoder]

    def loss(self, x):
        return (self.decoder(self.encoder(x)) - x).square().mean()

    def training_step(self, batch, batch_idx):
        x = batch[0].flatten(1)
        self.snapshots.append((clone_state(self.encoder), clone_state(self.decoder), x))
        encoder_opt, decoder_opt = self.optimizers()
        encoder_opt.zero_grad()
        decoder_opt.zero_grad()
        self.manual_backward(self.loss(x))
        encoder_opt.step()
        decoder_opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.encoder.parameters(), lr=0.1), torch.optim.SGD(self.decoder.parameters(), lr=0.1)


def test_private_decoder_with_public_encoder_sharing_one_backward_pass():
    vae = PrivateDecoderOnly()
    recorder = GradientRecorder()
    dp = DPCallback(noise_multiplier=1e-13, max_grad_norm=1e6, accountant="rdp")
    rate, data = 0.5, toy_images(40)
    tiny_trainer([dp, recorder], max_steps=4).fit(vae, ToyData(data, rate))
    assert dp.entry.steps == 2
    for (encoder_state, decoder_state, x), dp_grads in zip(vae.snapshots, recorder.grads[1::2], strict=True):
        reference = PrivateDecoderOnly()
        reference.decoder.load_state_dict(decoder_state)
        reference.encoder.load_state_dict(encoder_state)
        reference.loss(x).backward()
        assert_dp_gradient_is_true_gradient(dp_grads, reference.decoder.parameters(), len(x) / (rate * len(data)))


class TwoPasses(pl.LightningModule):
    """Manual optimisation that runs the private module's backward pass twice per batch,
    optionally zeroing the private gradients in between, or steps only every other batch."""

    privacy_barrier = "B4"

    def __init__(self, zero_between: bool = False, step_every: int = 1, passes: int = 2, lr: float = 0.1):
        super().__init__()
        self.automatic_optimization = False
        self.zero_between, self.step_every, self.passes, self.lr = zero_between, step_every, passes, lr
        self.net = nn.Linear(64, 1)
        self.batches = []

    def private_modules(self):
        return [self.net]

    def training_step(self, batch, batch_idx):
        optimizer = self.optimizers()
        x = batch[0].flatten(1)
        self.batches.append(x)
        for index in range(self.passes):
            if index and self.zero_between:
                optimizer.zero_grad()
            self.manual_backward(self.net(x).mean())
        if (batch_idx + 1) % self.step_every == 0:
            optimizer.step()
            optimizer.zero_grad()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def test_a_second_private_backward_over_one_batch_is_refused():
    """Each example would enter the step twice (2·C) while the accountant counts it once."""
    dp = DPCallback(noise_multiplier=1.0, accountant="rdp")
    with pytest.raises(PrivacyConfigError, match="second backward pass through the private modules"):
        tiny_trainer([dp], max_steps=2).fit(TwoPasses(), ToyData(toy_images(40), 0.5))


def test_zeroing_between_passes_keeps_only_the_last_pass():
    recorder = GradientRecorder()
    dp = DPCallback(noise_multiplier=1e-13, max_grad_norm=1e6, accountant="rdp")
    model = TwoPasses(zero_between=True, lr=0.0)
    rate, data = 0.5, toy_images(40)
    tiny_trainer([dp, recorder], max_steps=3).fit(model, ToyData(data, rate, seed=3))
    assert dp.entry.steps == 3
    for x, dp_grads in zip(model.batches, recorder.grads, strict=True):
        model.net.zero_grad()
        model.net(x).mean().backward()
        assert_dp_gradient_is_true_gradient(dp_grads, model.net.parameters(), len(x) / (rate * len(data)))


def test_gradients_of_two_poisson_batches_in_one_private_step_are_refused():
    dp = DPCallback(noise_multiplier=1.0, accountant="rdp")
    with pytest.raises(PrivacyConfigError, match="two Poisson batches would enter one private step"):
        tiny_trainer([dp], max_steps=4).fit(TwoPasses(step_every=2, passes=1), ToyData(toy_images(40), 0.5))
