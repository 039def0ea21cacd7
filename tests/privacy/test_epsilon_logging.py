"""ε is logged at the logging steps while its computations take a small share of the training time (after
a first second), and always at the end: an exact PRV evaluation costs 0.1-0.2 s, more than a fast GPU's steps
between two logs."""

import time

import pytest
import torch
from torch.utils.data import TensorDataset

from tests.toys import ToyData, ZeroGradient, tiny_trainer
from zoo.privacy import DPCallback, PrivacyLedger


def test_a_slow_epsilon_is_logged_in_the_first_second_then_only_at_the_end(monkeypatch):
    exact = PrivacyLedger.epsilon

    def slow(self, *args, **kwargs):
        time.sleep(0.3)
        return exact(self, *args, **kwargs)

    monkeypatch.setattr(PrivacyLedger, "epsilon", slow)
    logged_at = []

    class LogSpy(ZeroGradient):
        def log(self, name, value, *args, **kwargs):
            if name == "epsilon":
                logged_at.append(self.trainer.global_step)
            super().log(name, value, *args, **kwargs)

    callback = DPCallback(noise_multiplier=1.0, max_grad_norm=1.0, accountant="rdp", dataset_id="toy")
    trainer = tiny_trainer([callback], 12, log_every_n_steps=1)
    trainer.fit(LogSpy(), ToyData(TensorDataset(torch.randn(400, 300), torch.zeros(400)), 0.05))  # 20 steps an epoch
    *first, last = logged_at
    assert first == list(range(1, len(first) + 1)) and 2 <= len(first) <= 4  # at every step, until ε took 1 s
    assert last == 12  # then not before ε is within 5% of the time (about 24 s), but at the last step
    assert trainer.callback_metrics["epsilon"] == pytest.approx(callback.epsilon)
