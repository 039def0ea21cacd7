"""The noise added per logical step has standard deviation σC/(qN) in the gradient."""

import pytest
import torch
from torch.utils.data import TensorDataset

from tests.toys import GradientRecorder, ToyData, ZeroGradient, tiny_trainer
from zoo.privacy import DPCallback


@pytest.mark.parametrize("accumulate", [1, 3])
def test_zero_gradient_step_carries_exactly_one_noise_draw(accumulate):
    sigma, clip, rate, n = 2.0, 0.7, 0.2, 500
    data = TensorDataset(torch.randn(n, 300), torch.zeros(n))
    recorder = GradientRecorder()
    callback = DPCallback(noise_multiplier=sigma, max_grad_norm=clip, dataset_id="zero")
    trainer = tiny_trainer([callback, recorder], 2, accumulate_grad_batches=accumulate)
    trainer.fit(ZeroGradient(), ToyData(data, rate))
    assert len(recorder.grads) == 2 and callback.entry.steps == 2
    noise = torch.cat([g.flatten() for g in recorder.grads[0]])  # 90,300 draws
    expected = sigma * clip / (rate * n)
    assert abs(noise.mean()) < 0.02 * expected
    assert noise.std().item() == pytest.approx(expected, rel=0.02)
    assert not torch.equal(recorder.grads[0][0], recorder.grads[1][0])  # fresh noise every step


def test_empty_poisson_batches_still_take_a_noise_only_accounted_step():
    sigma, clip, rate, n = 1.0, 1.0, 1e-6, 100  # every batch empty
    recorder = GradientRecorder()
    callback = DPCallback(noise_multiplier=sigma, max_grad_norm=clip, accountant="rdp", dataset_id="empty")
    trainer = tiny_trainer([callback, recorder], 3)
    trainer.fit(ZeroGradient(), ToyData(TensorDataset(torch.randn(n, 300), torch.zeros(n)), rate))
    assert callback.entry.steps == 3 and len(recorder.grads) == 3
    noise = torch.cat([g.flatten() for g in recorder.grads[0]])
    assert torch.isfinite(noise).all()
    assert noise.std().item() == pytest.approx(sigma * clip / (rate * n), rel=0.02)
    assert trainer.callback_metrics["epsilon"] == pytest.approx(callback.epsilon)


def test_noise_does_not_repeat_when_runs_are_seeded_alike():
    """One model per class, each after seed_everything(0): shared noise would cancel in differences."""
    import pytorch_lightning as pl

    draws = []
    for _ in range(2):
        pl.seed_everything(0, verbose=False)
        recorder = GradientRecorder()
        callback = DPCallback(noise_multiplier=1.0, accountant="rdp", dataset_id="seeded")
        data = ToyData(TensorDataset(torch.randn(50, 300), torch.zeros(50)), 0.5, seed=0)
        tiny_trainer([callback, recorder], 1).fit(ZeroGradient(), data)
        draws.append(recorder.grads[0][0])
    assert not torch.equal(*draws)
