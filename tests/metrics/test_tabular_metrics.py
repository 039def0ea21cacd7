"""kNN-regression utility, tail anomalies and likelihood-threshold AUROC (DP-NF §4-5)."""

import pytest
import torch

from zoo.metrics.tabular import anomaly_auroc, knn_regression_mse, tail_anomalies


def linear_table(rows, seed, shuffle_target=False):
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(rows, 3, generator=generator, dtype=torch.float64)
    target = inputs.sum(1, keepdim=True)
    if shuffle_target:
        target = target[torch.randperm(rows, generator=generator)]
    return torch.cat([inputs, target], 1)


def test_knn_utility_rewards_synthetic_data_that_keeps_the_relation():
    test = linear_table(500, 0)
    faithful = knn_regression_mse(linear_table(3000, 1), test)
    broken = knn_regression_mse(linear_table(3000, 1, shuffle_target=True), test)
    assert faithful < 0.3 < 2.5 < broken


def test_knn_utility_rejects_mismatched_tables():
    with pytest.raises(ValueError, match="equal numbers of columns"):
        knn_regression_mse(torch.zeros(10, 3), torch.zeros(10, 4))
    with pytest.raises(ValueError, match="input column"):
        knn_regression_mse(torch.zeros(10, 1), torch.zeros(10, 1))


def test_tail_anomalies_lie_in_the_tails_of_every_feature():
    reference = torch.randn(20_000, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    anomalies = tail_anomalies(reference, 5000)
    q = torch.quantile(reference, torch.tensor([0.05, 0.30, 0.70, 0.95], dtype=torch.float64), dim=0)
    lower = (anomalies >= q[0]) & (anomalies <= q[1])
    upper = (anomalies >= q[2]) & (anomalies <= q[3])
    assert bool((lower | upper).all())
    assert 0.45 < upper.double().mean().item() < 0.55
    torch.testing.assert_close(anomalies, tail_anomalies(reference, 5000))


def test_anomaly_auroc_is_one_when_separable_and_half_when_not():
    assert anomaly_auroc(torch.tensor([0.0, 1.0]), torch.tensor([-5.0, -4.0]))["auroc"] == 1.0
    same = torch.randn(4000, generator=torch.Generator().manual_seed(1))
    assert anomaly_auroc(same[:2000], same[2000:])["auroc"] == pytest.approx(0.5, abs=0.03)
