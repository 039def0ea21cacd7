"""Per-example clipping really bounds each example's contribution, in every engine."""

import pytest
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import TensorDataset

from tests.toys import GradientRecorder, TinyClassifier, ToyData, tiny_trainer, toy_images
from zoo.privacy import DPCallback
from zoo.privacy.per_example import GhostClipping, OpacusGradSample

MODES = ["ghost", "hooks", "functorch"]
CLIP = 0.5


def clipped_sum(dataset: TensorDataset, mode: str, clip: float = CLIP, accumulate: int = 1) -> list[torch.Tensor]:
    """Σ_i clip(g_i) (+ noise of std 1e-13·C) from one full-batch DP step (q = 1) through DPCallback,
    the batch split into ``accumulate`` micro-batches."""
    torch.manual_seed(0)
    module = TinyClassifier()
    recorder = GradientRecorder()
    callback = DPCallback(noise_multiplier=1e-13, max_grad_norm=clip, per_example_mode=mode, noise_seed=0)
    trainer = tiny_trainer([callback, recorder], 1, accumulate_grad_batches=accumulate)
    trainer.fit(module, ToyData(dataset, sample_rate=1.0))
    return [g * len(dataset) for g in recorder.grads[0]]  # undo the division by q·N


@pytest.mark.parametrize("mode", MODES)
def test_one_planted_example_moves_the_sum_by_at_most_C(mode):
    base = toy_images(30)
    planted = TensorDataset(
        torch.cat([base.tensors[0], 1e4 * torch.randn(1, 1, 8, 8, generator=torch.Generator().manual_seed(7))]),
        torch.cat([base.tensors[1], torch.tensor([1])]),
    )
    without, with_planted = clipped_sum(base, mode), clipped_sum(planted, mode)
    difference = torch.sqrt(sum((a - b).square().sum() for a, b in zip(with_planted, without, strict=True)))
    assert difference <= CLIP * (1 + 1e-4)
    assert difference > 0.9 * CLIP  # the planted example was clipped, not dropped


@pytest.mark.parametrize("mode, accumulate", [(m, 1) for m in MODES] + [("ghost", 3)])
def test_without_clipping_the_update_is_the_ordinary_mean_gradient(mode, accumulate):
    data = toy_images(25)
    dp_sum = clipped_sum(data, mode, clip=1e6, accumulate=accumulate)
    torch.manual_seed(0)
    module = TinyClassifier()
    x, y = data.tensors
    nn.functional.cross_entropy(module.net(x), y).backward()
    for dp_grad, p in zip(dp_sum, module.parameters(), strict=True):
        torch.testing.assert_close(dp_grad / len(data), p.grad, rtol=1e-4, atol=1e-6)


class Everything(nn.Module):
    """Layers and shapes the ghost engine must handle: strided/dilated/padded convs,
    a convolution whose Gram path is cheaper, Linear on 2-D and on sequence inputs."""

    def __init__(self):
        super().__init__()
        self.conv_strided = nn.Conv2d(2, 3, 3, stride=2, padding=1)
        self.conv_dilated = nn.Conv2d(3, 4, 3, dilation=2, padding=2, bias=False)
        self.conv_wide = nn.Conv2d(4, 64, 3, padding=1)  # weight larger than positions²: Gram path
        self.sequence = nn.Linear(4, 5)
        self.head = nn.Linear(5 * 16, 2)

    def forward(self, x):
        x = torch.relu(self.conv_strided(x))
        x = torch.relu(self.conv_dilated(x))
        x = self.conv_wide(x)[:, :4]  # (B, 4, 4, 4)
        x = self.sequence(x.flatten(2).transpose(1, 2))  # (B, 16, 4) -> (B, 16, 5)
        return self.head(x.flatten(1))


def test_ghost_norms_and_sums_match_opacus_per_example_gradients():
    torch.manual_seed(0)
    model = Everything()
    x = torch.randn(7, 2, 8, 8)

    def run(engine):
        model.zero_grad()
        model(x).square().sum().backward()
        norms, sums = engine.squared_norms(), engine.weighted_sum(torch.linspace(0.1, 1.0, 7))
        engine.close()
        return norms, sums

    ghost_norms, ghost_sums = run(GhostClipping([model]))
    opacus_norms, opacus_sums = run(OpacusGradSample([model], force_functorch=False))
    torch.testing.assert_close(ghost_norms, opacus_norms, rtol=1e-4, atol=1e-5)
    for a, b in zip(ghost_sums, opacus_sums, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_auto_mode_picks_ghost_when_supported_and_hooks_otherwise():
    from zoo.privacy.per_example import create_engine

    assert create_engine([nn.Linear(2, 2)], "auto").mode == "ghost"
    assert create_engine([nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2))], "auto").mode == "hooks"


def test_linear_subclasses_go_to_opacus_because_their_gradients_may_differ():
    from zoo.privacy.per_example import create_engine

    class MaskedLinear(nn.Linear):
        def forward(self, x):
            return nn.functional.linear(x, self.weight.tril(), self.bias)

    assert create_engine([MaskedLinear(3, 3)], "auto").mode == "hooks"


def test_ghost_is_exact_for_masked_and_rowwise_layers_of_a_maf():
    """Against a loop over examples: covers masked weights and ActNorm's parameter-only log-det."""
    from lightning_modules.nets.maf import MAF
    from zoo.privacy.layers import MaskedLinear

    torch.manual_seed(0)
    flow = MAF(dim=3, blocks=2, hidden=8, actnorm=True)
    sequence = MaskedLinear(3, 2, torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]))
    x = torch.randn(5, 3)
    params = [*flow.parameters(), *sequence.parameters()]

    def per_example_loss(rows):
        return -flow.log_prob(rows) + sequence(rows[:, None, :].repeat(1, 4, 1)).square().sum((1, 2))

    engine = GhostClipping([flow, sequence])
    per_example_loss(x).sum().backward()
    weights = torch.linspace(0.2, 1.0, 5)
    norms, sums = engine.squared_norms(), engine.weighted_sum(weights)
    engine.close()
    expected = [torch.autograd.grad(per_example_loss(x[i : i + 1]).sum(), params) for i in range(5)]
    expected_norms = torch.stack([sum(g.square().sum() for g in grads) for grads in expected])
    torch.testing.assert_close(norms, expected_norms, rtol=1e-4, atol=1e-5)
    for index, total in enumerate(sums):
        expected_sum = sum(w * grads[index] for w, grads in zip(weights, expected, strict=True))
        torch.testing.assert_close(total, expected_sum, rtol=1e-4, atol=1e-5)
    assert all(layer.row_capture is None for layer in engine.rowwise_layers)


def test_opacus_modes_refuse_layers_they_cannot_handle_with_a_pointer_to_auto():
    from lightning_modules.nets.maf import MAF
    from zoo.privacy.errors import PrivacyConfigError
    from zoo.privacy.per_example import create_engine

    assert create_engine([MAF(dim=2, blocks=1, hidden=4)], "auto").mode == "ghost"
    with pytest.raises(PrivacyConfigError, match="per_example_mode='auto'"):
        create_engine([MAF(dim=2, blocks=1, hidden=4)], "hooks")


class SumOfOutputs(pl.LightningModule):
    """loss = Σ_i w·x_i, so example i's gradient is exactly x_i."""

    privacy_barrier = "B4"

    def __init__(self, features: int):
        super().__init__()
        self.layer = nn.Linear(features, 1, bias=False)

    def private_modules(self):
        return [self.layer]

    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


@pytest.mark.parametrize("mode", MODES)
def test_accumulated_clipped_sums_survive_a_micro_batch_whose_raw_gradient_cancels(mode):
    """Micro-batch {2v, 2v, 2v, -6v} sums to a zero raw gradient; its clipped sum (C = 1) is 2v
    and must still reach the step, whatever p.grad looks like afterwards."""
    v = torch.tensor([1.0, 0.0, 0.0])
    others = torch.tensor([[0.0, 3.0, 0.0], [0.0, 0.0, 0.5], [0.2, 0.2, 0.2], [0.0, -4.0, 1.0]])
    rows = torch.cat([torch.stack([2 * v, 2 * v, 2 * v, -6 * v]), others])
    recorder = GradientRecorder()
    callback = DPCallback(
        noise_multiplier=1e-13, max_grad_norm=1.0, per_example_mode=mode, loss_reduction="sum", noise_seed=0
    )
    trainer = tiny_trainer([callback, recorder], 1, accumulate_grad_batches=2)
    trainer.fit(SumOfOutputs(3), ToyData(TensorDataset(rows), sample_rate=1.0))
    expected = (rows / rows.norm(dim=1, keepdim=True).clamp(min=1.0)).sum(0)
    (released,) = recorder.grads[0]
    torch.testing.assert_close(released.flatten() * len(rows), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["ghost", "hooks"])  # Opacus' functorch samplers fail on an empty batch
def test_an_empty_poisson_batch_is_a_step_of_noise_alone(mode):
    """Small per-class folders give empty Poisson batches often; the step adds noise to a zero sum."""
    torch.manual_seed(0)
    module = TinyClassifier()
    recorder = GradientRecorder()
    callback = DPCallback(noise_multiplier=1.0, max_grad_norm=CLIP, per_example_mode=mode, noise_seed=0)
    empty_batches = ToyData(toy_images(2), sample_rate=1e-9)  # every batch draws no record
    tiny_trainer([callback, recorder], 2).fit(module, empty_batches)
    assert len(recorder.grads) == 2
    assert all(torch.isfinite(g).all() and g.abs().sum() > 0 for step in recorder.grads for g in step)
