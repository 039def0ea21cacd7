"""The membership audit tells a memorising generator from one that never saw the members."""

import pytest
import torch

from tests.metrics.test_cas import Replay
from zoo.metrics.audit import membership_audit


def toy_digits(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(n, 1, 8, 8, generator=generator), torch.randint(0, 10, (n,), generator=generator)


def test_replaying_members_is_caught_and_a_model_of_other_data_is_not():
    members, non_members, unrelated = toy_digits(300, 0), toy_digits(300, 1), toy_digits(300, 2)
    memorised = membership_audit(Replay(*members), members, non_members, num_samples=3000)
    blind = membership_audit(Replay(*unrelated), members, non_members, num_samples=3000)
    assert memorised["nearest_neighbour"]["auroc"] > 0.9 and memorised["nearest_neighbour"]["tpr_at_1pct_fpr"] > 0.5
    assert blind["nearest_neighbour"]["auroc"] == pytest.approx(0.5, abs=0.07)
    assert "lower bound" in blind["protocol"]["note"]


def test_likelihood_attack_runs_for_models_with_log_prob():
    from tests.zoo.test_hub import tiny_private_flow

    members, non_members = toy_digits(50, 0), toy_digits(50, 1)
    report = membership_audit(tiny_private_flow(), members, non_members, num_samples=200)
    assert 0 <= report["likelihood"]["auroc"] <= 1


def test_empty_member_sets_are_refused():
    with pytest.raises(ValueError, match="at least one member"):
        membership_audit(Replay(*toy_digits(5, 0)), toy_digits(0, 0), toy_digits(5, 1))
