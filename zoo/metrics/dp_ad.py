"""DP-AD (DP-NF §5): differentially private anomaly detection by sample-and-aggregate.

The private rows are split into k disjoint parts and one flow is trained on each, without
privacy and never released. Each flow votes "anomaly" for a query whose log-likelihood falls
below the ``quantile`` of its own part's log-likelihoods.

Theorem (add/remove-one neighbouring tables). Each row's part is a keyed hash of the row
alone (``zoo.privacy.partition.assign_parts``), so adding or removing one row changes one
part and no other: every vote count has sensitivity 1, and the exponential mechanism that
releases "anomaly" with probability ∝ exp(ε·count/2) is ε-DP per query (pure DP, δ = 0).
m queries against the same voters compose to m·ε (basic composition), the total a report
states. The voters read the protected rows, so a report is a local diagnostic: a model card
never publishes it (``zoo.metrics.publication``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from tqdm.auto import tqdm

from zoo.errors import UserError
from zoo.privacy.parameters import check_epsilon
from zoo.privacy.partition import assign_parts
from zoo.privacy.randomness import private_generator


def exponential_mechanism_votes(
    anomaly_votes: Tensor, voters: int, epsilon: float, generator: torch.Generator | None = None
) -> Tensor:
    """Release anomaly (True) or normal for each query from its count of anomaly votes."""
    epsilon = check_epsilon(epsilon)
    utilities = torch.stack([voters - anomaly_votes, anomaly_votes], 1).double()
    probability_anomaly = (epsilon * utilities / 2).softmax(1)[:, 1]
    uniform = torch.rand(len(anomaly_votes), generator=generator or private_generator(), dtype=torch.float64)
    return uniform < probability_anomaly


class StandardisedFlow(torch.nn.Module):
    """DP-NF's default MAF (5 blocks of width 100, ActNorm) on rows standardised by one part's own mean and
    std, trained without privacy: a voter, not a release."""

    def __init__(self, mean: Tensor, std: Tensor) -> None:
        from lightning_modules.nets.maf import MAF  # lightning_modules imports zoo, which imports this module

        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.flow = MAF(len(mean), blocks=5, hidden=100, actnorm=True, prior_components=0)

    def log_prob(self, x: Tensor) -> Tensor:
        """Log-density of each row in the table's units."""
        return self.flow.log_prob((x - self.mean) / self.std) - self.std.log().sum()


@dataclass
class PartitionVoters:
    """The k flows of sample-and-aggregate, the log-likelihood threshold of each, and the part
    each training row was assigned to."""

    flows: list[StandardisedFlow]
    thresholds: Tensor
    assignment: Tensor

    @torch.no_grad()
    def anomaly_votes(self, queries: Tensor) -> Tensor:
        scores = torch.stack([flow.log_prob(queries.float()) for flow in self.flows], 1)
        return (scores < self.thresholds).sum(1)


def fit_partition_voters(
    rows: Tensor,
    parts: int = 10,
    quantile: float = 0.05,
    steps: int = 500,
    batch_size: int = 256,
    seed: int = 0,
    progress: bool = False,
    partition_key: bytes | None = None,
) -> PartitionVoters:
    """Train one MAF per disjoint part of ``rows`` with Adam (no privacy: only votes leave).

    Rows go to parts by ``assign_parts`` (a fresh secret key unless ``partition_key``);
    ``seed`` fixes the flows' initialisation and mini-batches."""

    generator = torch.Generator().manual_seed(seed)
    assignment = assign_parts(rows, parts, partition_key)
    flows, thresholds = [], []
    for part in tqdm(range(parts), desc="DP-AD: one flow per part", disable=not progress):
        data = rows[assignment == part].float()
        if len(data) < 2:
            raise UserError(f"DP-AD part {part} holds {len(data)} rows; use fewer parts for {len(rows)} rows")
        with torch.random.fork_rng():  # seeded initialisation without touching the caller's RNG
            torch.manual_seed(seed + len(flows))
            flow = StandardisedFlow(data.mean(0), data.std(0))
        optimizer = torch.optim.Adam(flow.parameters(), lr=1e-3)
        for _ in range(steps):
            optimizer.zero_grad()
            batch = data[torch.randint(len(data), (batch_size,), generator=generator)]
            (-flow.log_prob(batch).mean()).backward()
            optimizer.step()
        with torch.no_grad():
            thresholds.append(torch.quantile(flow.eval().log_prob(data), quantile))
        flows.append(flow)
    return PartitionVoters(flows, torch.stack(thresholds), assignment)


def dp_anomaly_detection_report(
    train_rows: Tensor,
    normal: Tensor,
    anomalies: Tensor,
    epsilon: float,
    seed: int = 0,
    parts: int = 10,
    steps: int = 500,
    progress: bool = False,
) -> dict[str, Any]:
    """Detection rates of DP-AD on real test rows (``normal``) and synthetic ``anomalies``, with
    the total ε of all released labels, next to the non-private majority vote of the same
    ``parts`` flows (``steps`` Adam steps each; a local diagnostic, like the whole report)."""
    voters = fit_partition_voters(train_rows, parts, steps=steps, seed=seed, progress=progress)
    k = len(voters.flows)
    votes_normal, votes_anomalous = voters.anomaly_votes(normal), voters.anomaly_votes(anomalies)
    released_normal = exponential_mechanism_votes(votes_normal, k, epsilon)
    released_anomalous = exponential_mechanism_votes(votes_anomalous, k, epsilon)
    true_positive = released_anomalous.double().mean().item()
    false_positive = released_normal.double().mean().item()
    return {
        "value": (true_positive + 1 - false_positive) / 2,
        "unit": "balanced accuracy of the released labels",
        "tpr": true_positive,
        "fpr": false_positive,
        "majority_tpr": (votes_anomalous > k / 2).double().mean().item(),
        "majority_fpr": (votes_normal > k / 2).double().mean().item(),
        "protocol": {
            "score": f"DP-AD: {k} non-private MAFs on disjoint parts, 5% log-likelihood threshold each",
            "epsilon_per_query": epsilon,
            "epsilon_total": epsilon * (len(normal) + len(anomalies)),
            "composition": "basic composition of pure ε-DP answers (δ = 0)",
            "queries": f"{len(normal)} test rows + {len(anomalies)} tail anomalies",
        },
    }
