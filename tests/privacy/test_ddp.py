"""Under Lightning DDP (2 CPU processes, gloo) the noise per logical step has std σC in
total, every rank applies the same update, and the ranks' batches form one Poisson sample."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.heavy
def test_ddp_adds_noise_once_and_samples_disjoint_shards(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "privacy" / "ddp_noise_run.py"), str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]

    for step in range(3):
        for a, b in zip(ranks[0]["grads"][step], ranks[1]["grads"][step], strict=True):
            assert torch.equal(a, b)  # one update, identical on every rank
    noise = torch.cat([g.flatten() for g in ranks[0]["grads"][0]])
    expected = 2.0 * 0.5 / (0.25 * 400)  # σC/(qN), N over all ranks
    assert ranks[0]["expected_batch_size"] == pytest.approx(100)
    assert noise.std().item() == pytest.approx(expected, rel=0.03)  # √2 too large if each rank added noise

    for step in range(3):
        first, second = (set(r["indices"][step].tolist()) for r in ranks)
        assert not first & second
        assert all(i % 2 == 0 for i in first) and all(i % 2 == 1 for i in second)
    assert ranks[0]["steps"] == ranks[1]["steps"] == 3
    assert ranks[0]["epsilon"] == ranks[1]["epsilon"] > 0
