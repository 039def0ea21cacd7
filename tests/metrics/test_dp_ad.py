"""DP-AD: sample-and-aggregate votes released through the exponential mechanism."""

import math

import pytest
import torch

from zoo.metrics.dp_ad import dp_anomaly_detection_report, exponential_mechanism_votes, fit_partition_voters


@pytest.mark.parametrize("epsilon, votes", [(0.2, 10), (0.2, 6), (1.0, 3), (0.5, 0)])
def test_released_labels_follow_the_exponential_mechanism(epsilon, votes):
    generator = torch.Generator().manual_seed(0)
    released = exponential_mechanism_votes(torch.full((40_000,), votes), 10, epsilon, generator)
    expected = math.exp(epsilon * votes / 2) / (math.exp(epsilon * votes / 2) + math.exp(epsilon * (10 - votes) / 2))
    assert released.double().mean().item() == pytest.approx(expected, abs=0.01)


def test_one_changed_vote_moves_the_odds_by_at_most_e_to_the_epsilon():
    """The privacy statement itself: neighbouring vote counts give probabilities within e^ε."""
    epsilon = 0.7
    counts = torch.arange(11)
    utilities = torch.stack([10 - counts, counts], 1).double()
    p = (epsilon * utilities / 2).softmax(1)
    ratios = (p[1:] / p[:-1]).log().abs()
    assert ratios.max().item() <= epsilon + 1e-9


def test_easy_case_separates_anomalies():
    torch.manual_seed(0)
    rows = torch.randn(2000, 2)
    far = torch.full((300, 2), 6.0)
    report = dp_anomaly_detection_report(rows, torch.zeros(300, 2), far, epsilon=5.0, parts=4, steps=40)
    assert report["majority_tpr"] == 1.0 and report["majority_fpr"] == 0.0
    assert report["tpr"] > 0.99 and report["fpr"] < 0.01 and report["protocol"]["epsilon_per_query"] == 5.0


def test_each_part_flags_its_own_lowest_likelihoods():
    torch.manual_seed(0)
    rows = torch.randn(1000, 2)
    voters = fit_partition_voters(rows, parts=2, quantile=0.1, steps=20)
    flagged = voters.anomaly_votes(rows).double()
    # each flow flags 10% of its own part (and about as much of the other)
    assert 0.05 < flagged.mean().item() / 2 < 0.15


def test_bad_epsilon_is_refused():
    with pytest.raises(ValueError, match="epsilon"):
        exponential_mechanism_votes(torch.zeros(3), 10, -1.0)


def test_removing_one_row_changes_one_part_and_no_other():
    """Sensitivity 1 of every vote count: the other rows keep their parts when one row leaves."""
    rows = torch.randn(400, 2, generator=torch.Generator().manual_seed(0))
    key = b"fixed key for the test"
    before = fit_partition_voters(rows, parts=10, steps=0, partition_key=key).assignment
    for removed in (0, 137, 399):
        kept = torch.cat([rows[:removed], rows[removed + 1 :]])
        after = fit_partition_voters(kept, parts=10, steps=0, partition_key=key).assignment
        assert torch.equal(after, torch.cat([before[:removed], before[removed + 1 :]]))
        sizes_before, sizes_after = before.bincount(minlength=10), after.bincount(minlength=10)
        assert (sizes_before - sizes_after).abs().sum() == 1


def test_report_states_the_total_epsilon_of_all_released_labels():
    rows = torch.randn(600, 2, generator=torch.Generator().manual_seed(1))
    report = dp_anomaly_detection_report(rows, torch.zeros(30, 2), torch.ones(20, 2), epsilon=0.5, parts=3, steps=2)
    assert report["protocol"]["epsilon_total"] == pytest.approx(0.5 * 50)
