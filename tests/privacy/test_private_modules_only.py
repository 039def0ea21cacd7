"""Under DP-SGD only the private modules learn from a private batch: a BatchNorm or a second optimizer
outside private_modules() is refused unless the module is declared public with a reason."""

import pytest
import torch
from torch import nn

from tests.toys import ToyData, tiny_trainer, toy_images
from zoo.methods import DPGenerativeModel
from zoo.privacy import DPCallback, PrivacyConfigError
from zoo.privacy.private_state import WATCHED_STEPS


class Encoded(DPGenerativeModel):
    """A private head over an encoder whose BatchNorm is outside private_modules()."""

    method = "test-private-modules-only"
    privacy_barrier = "B4"
    released_modules = ("encoder", "head")

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Flatten(), nn.BatchNorm1d(64))
        self.head = nn.Linear(64, 3)

    def private_modules(self):
        return [self.head]

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.head(self.encoder(x)), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.head.parameters(), lr=0.1)


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


def test_a_second_optimizer_on_a_module_outside_the_private_ones_is_refused_before_any_step():
    model = SecondOptimizer()
    before = [p.clone() for p in model.parameters()]
    with pytest.raises(PrivacyConfigError, match=r"optimizer 1 \(SGD\) steps parameters outside.*'encoder\.1\.weight'"):
        fit(model)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_an_optimizer_built_inside_a_step_is_refused_by_its_change():
    with pytest.raises(PrivacyConfigError, match=r"parameter encoder\.1\.weight changed during a private step"):
        fit(InStepOptimizer())


@pytest.mark.parametrize("model", [PublicEncoder, PublicSecondOptimizer, FrozenEncoder], ids=lambda c: c.__name__)
def test_modules_declared_public_with_a_reason_or_frozen_train(model):
    callback = fit(model(), steps=8)  # 8 optimizer steps: 4 or 8 private ones
    assert callback.entry.steps > WATCHED_STEPS and callback.guard.steps_left == 0  # every watched step passed


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
