"""Under DP-SGD only the private modules' parameters learn from a private batch: a BatchNorm or a second
optimizer outside private_modules() is refused unless the module is declared public with a reason, and so is
a private module's buffer that keeps a statistic of its inputs, at whichever step it first changes."""

import pytest
import torch
from torch import nn

from tests.toys import ToyData, tiny_trainer, toy_images
from zoo.methods import DPGenerativeModel
from zoo.privacy import DPCallback, PrivacyConfigError, private_state
from zoo.privacy.private_state import FIRST_STEPS_WATCHED


class Encoded(DPGenerativeModel):
    """A private head over an encoder whose BatchNorm is outside private_modules()."""

    method = "test-private-modules-only"
    privacy_barrier = "B4"
    released_modules = ("encoder", "head")

    def __init__(self) -> None:
        super().__init__()
        self.encoder: nn.Module = nn.Sequential(nn.Flatten(), nn.BatchNorm1d(64))
        self.head: nn.Module = nn.Linear(64, 3)

    def private_modules(self):
        return [self.head]

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.head(self.encoder(x)), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.head.parameters(), lr=0.1)


class LateBatchNorm(Encoded):
    """The encoder's BatchNorm, in training mode, is first used at the fifth step."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.batches += 1
        features = self.encoder(x) if self.batches >= 5 else x.flatten(1)
        return nn.functional.cross_entropy(self.head(features), y)


class OnceAtStepFive(LateBatchNorm):
    """A buffer outside the private modules takes in the private batch once, at the fifth step."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("seen", torch.zeros(()))

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.batches += 1
        if self.batches == 5:
            self.seen += x.mean()
        return nn.functional.cross_entropy(self.head(x.flatten(1)), y)


class RunningMeanHead(nn.Module):
    """A private layer that keeps a running mean of its (private) inputs in a buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(64, 3)
        self.register_buffer("mean", torch.zeros(64))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.mean.mul_(0.9).add_(0.1 * x.mean(0))
        return self.linear(x - self.mean)


class PrivateRunningMean(Encoded):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Flatten()
        self.head = RunningMeanHead()


class PublicEncoder(Encoded):
    public_modules = {"encoder": "a test: its statistics are declared public"}


class FrozenEncoder(Encoded):
    """A frozen feature extractor: no optimizer, requires_grad False, BatchNorm in eval mode."""

    def on_train_start(self) -> None:
        self.encoder.requires_grad_(False).eval()


class SecondOptimizer(Encoded):
    """A second optimizer takes un-noised steps of a non-private module from the private batches."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(64, 64))
        self.automatic_optimization = False

    def step_optimizers(self):
        """(head's, encoder's) optimizer for this step."""
        return self.optimizers()

    def training_step(self, batch, batch_idx):
        x, y = batch
        head_optimizer, encoder_optimizer = self.step_optimizers()
        head_optimizer.zero_grad()
        encoder_optimizer.zero_grad()
        self.manual_backward(nn.functional.cross_entropy(self.head(self.encoder(x)), y))
        head_optimizer.step()
        encoder_optimizer.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.head.parameters(), lr=0.1), torch.optim.SGD(self.encoder.parameters(), lr=0.1)


class PublicSecondOptimizer(SecondOptimizer):
    public_modules = {"encoder": "a test: its steps are declared public"}


class InStepOptimizer(SecondOptimizer):
    """An optimizer built inside the step, which the trainer never sees: caught by the change of state."""

    def step_optimizers(self):
        return self.optimizers(), torch.optim.SGD(self.encoder.parameters(), lr=0.1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.head.parameters(), lr=0.1)


def fit(model: DPGenerativeModel, steps: int = 2) -> DPCallback:
    callback = DPCallback(noise_multiplier=1.0, accountant="rdp")
    tiny_trainer([callback], steps).fit(model, ToyData(toy_images(40), 0.5))
    return callback


def test_a_batch_norm_outside_the_private_modules_is_refused_by_name():
    with pytest.raises(PrivacyConfigError, match=r"buffer encoder\.1\.running_mean changed.*encoder\.1 is not among"):
        fit(Encoded())


def test_a_private_module_buffer_that_keeps_a_running_mean_of_its_inputs_is_refused_by_name():
    with pytest.raises(PrivacyConfigError, match=r"buffer head\.mean of the private module head changed during priv"):
        fit(PrivateRunningMean())


def test_a_batch_norm_first_used_after_the_first_steps_is_refused():
    with pytest.raises(PrivacyConfigError, match=r"buffer encoder\.1\.running_mean changed during private steps? "):
        fit(LateBatchNorm(), steps=8)


class ScriptedDraws:
    """The guard's draws, scripted: a later step is watched when its draw is 0."""

    def __init__(self, draws: list[float]) -> None:
        self.draws = iter(draws)

    def random(self) -> float:
        return next(self.draws, 0.0)


def test_a_change_at_an_unwatched_step_shows_at_the_next_watched_one(monkeypatch):
    monkeypatch.setattr(private_state, "GUARD_SHARE", 1e-12)  # as if the digests cost far more than a step
    monkeypatch.setattr(private_state, "SystemRandom", lambda: ScriptedDraws([0.0, 1.0, 1.0]))  # 5 and 6 unwatched
    with pytest.raises(PrivacyConfigError, match=r"buffer seen changed during private steps 5 to 7 but OnceAt"):
        fit(OnceAtStepFive(), steps=8)


def test_a_second_optimizer_on_a_module_outside_the_private_ones_is_refused_before_any_step():
    model = SecondOptimizer()
    before = [p.clone() for p in model.parameters()]
    with pytest.raises(PrivacyConfigError, match=r"optimizer 1 \(SGD\) steps parameters outside.*'encoder\.1\.weight'"):
        fit(model)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_an_optimizer_built_inside_a_step_is_refused_by_its_change():
    with pytest.raises(PrivacyConfigError, match=r"parameter encoder\.1\.weight changed during private step 1 "):
        fit(InStepOptimizer())


@pytest.mark.parametrize("model", [PublicEncoder, PublicSecondOptimizer, FrozenEncoder], ids=lambda c: c.__name__)
def test_modules_declared_public_with_a_reason_or_frozen_train(model):
    guard = fit(model(), steps=8).guard  # 8 optimizer steps: 4 or 8 private ones
    assert guard.steps > FIRST_STEPS_WATCHED and guard.watched_steps == guard.steps  # each step watched, and passed


def test_a_declaration_needs_a_reason_and_a_module_that_is_not_private():
    class NoReason(Encoded):
        public_modules = {"encoder": " "}

    class Unknown(Encoded):
        public_modules = {"decoder": "a test"}

    class Both(Encoded):
        public_modules = {"head": "a test"}

    with pytest.raises(PrivacyConfigError, match=r"public_modules\['encoder'\] needs a reason"):
        fit(NoReason())
    with pytest.raises(PrivacyConfigError, match="names 'decoder', which is not a submodule"):
        fit(Unknown())
    with pytest.raises(PrivacyConfigError, match="declares 'head' public, but it is or holds a module of private"):
        fit(Both())
