"""The noise added per logical step has standard deviation σC/(qN) in the gradient."""

import pytest
import torch

from tests.toys import GradientRecorder, ToyData, ZeroGradient, tiny_trainer
from torch.utils.data import TensorDataset
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
