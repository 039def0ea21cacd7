"""Poisson sampling: the batch distribution the accountant assumes."""

import torch
from torch.utils.data import TensorDataset

from zoo.privacy import PoissonBatches, sampling


def batch_sizes(batches) -> torch.Tensor:
    return torch.tensor([len(b[0]) for b in batches], dtype=torch.float)


def test_batch_sizes_are_binomial():
    n, q, steps = 1000, 0.05, 4000
    data = TensorDataset(torch.arange(n))
    sizes = batch_sizes(PoissonBatches(data, q, steps_per_epoch=steps, seed=1))
    assert abs(sizes.mean() - n * q) < 0.6  # sd of the mean ≈ 0.11
    assert abs(sizes.var() - n * q * (1 - q)) < 6  # sd of the variance ≈ 1.1


def test_each_example_joins_independently_with_probability_q():
    n, q, steps = 50, 0.3, 3000
    counts = torch.zeros(n)
    for (indices,) in PoissonBatches(TensorDataset(torch.arange(n)), q, steps_per_epoch=steps, seed=2):
        counts[indices] += 1
    assert (counts / steps - q).abs().max() < 0.04  # sd per example ≈ 0.008


def test_micro_batches_split_one_logical_sample():
    data = TensorDataset(torch.arange(200))
    whole = list(PoissonBatches(data, 0.2, steps_per_epoch=5, seed=3))
    split = list(PoissonBatches(data, 0.2, steps_per_epoch=5, micro_batches=3, seed=3))
    assert len(split) == 15
    for step, (indices,) in enumerate(whole):
        assert torch.equal(torch.cat([chunk[0] for chunk in split[3 * step : 3 * step + 3]]), indices)


def test_empty_batches_keep_their_structure():
    data = TensorDataset(torch.randn(10, 1, 4, 4), torch.arange(10))
    images, labels = next(iter(PoissonBatches(data, 1e-9, steps_per_epoch=1)))
    assert images.shape == (0, 1, 4, 4) and labels.shape == (0,)

    class ListData(torch.utils.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return {"x": torch.ones(3), "y": i}

    batch = next(iter(PoissonBatches(ListData(), 1e-9, steps_per_epoch=1)))
    assert batch["x"].shape == (0, 3) and batch["y"].shape == (0,)


def test_unseeded_epochs_draw_fresh_randomness_and_seeded_ones_repeat():
    data = TensorDataset(torch.arange(500))
    fresh = PoissonBatches(data, 0.5, steps_per_epoch=1)
    assert not torch.equal(next(iter(fresh))[0], next(iter(fresh))[0])
    assert torch.equal(
        next(iter(PoissonBatches(data, 0.5, steps_per_epoch=1, seed=7)))[0],
        next(iter(PoissonBatches(data, 0.5, steps_per_epoch=1, seed=7)))[0],
    )


def test_ranks_sample_disjoint_shards_that_cover_the_data(monkeypatch):
    data = TensorDataset(torch.arange(101))
    seen = []
    for rank in range(3):
        monkeypatch.setattr(sampling, "_rank_and_world_size", lambda rank=rank: (rank, 3))
        (indices,) = next(iter(PoissonBatches(data, 1.0, steps_per_epoch=1)))
        seen.append(set(indices.tolist()))
    assert sum(len(s) for s in seen) == 101 and set.union(*seen) == set(range(101))
