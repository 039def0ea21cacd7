"""The ledger round-trips, composes sequentially per dataset and in parallel across partitions."""

import pytest

from zoo.privacy import LedgerEntry, PrivacyLedger, epsilon_spent


def entry(dataset_id, steps, partition_of=None, sigma=2.0):
    return LedgerEntry(
        mechanism="subsampled_gaussian",
        barrier="B4",
        dataset_id=dataset_id,
        dataset_size=100,
        noise_multiplier=sigma,
        clip_norm=0.1,
        sample_rate=0.1,
        delta=1e-5,
        accountant="rdp",
        steps=steps,
        partition_of=partition_of,
    )


def test_round_trip_keeps_every_field():
    ledger = PrivacyLedger([entry("a", 3), entry("b", 4, partition_of="all")])
    again = PrivacyLedger.from_dict(ledger.to_dict())
    assert again == ledger and again.entries[0].library_versions["torch"]


def test_unknown_fields_and_formats_are_refused():
    data = PrivacyLedger([entry("a", 1)]).to_dict()
    data["entries"][0]["surprise"] = 1
    with pytest.raises(ValueError, match="unknown privacy ledger fields"):
        PrivacyLedger.from_dict(data)
    with pytest.raises(ValueError, match="unsupported privacy ledger format"):
        PrivacyLedger.from_dict({"format": 99, "entries": []})


def test_same_dataset_composes_sequentially_partitions_in_parallel():
    ledger = PrivacyLedger(
        [
            entry("all/class=0", 100, "all"),
            entry("all/class=1", 300, "all"),
            entry("all/class=1", 100, "all"),
            entry("other", 50),
        ]
    )
    per_class_1 = epsilon_spent([(2.0, 0.1, 400)], 1e-5, "rdp")
    assert ledger.epsilon("all/class=1") == pytest.approx(per_class_1)
    guarantees = ledger.guarantees()
    assert guarantees["all"]["epsilon"] == pytest.approx(per_class_1)  # max over disjoint parts
    assert set(guarantees["all"]["partitions"]) == {"all/class=0", "all/class=1"}
    assert guarantees["other"]["epsilon"] == pytest.approx(epsilon_spent([(2.0, 0.1, 50)], 1e-5, "rdp"))
    with pytest.raises(KeyError, match="no entry for dataset"):
        ledger.epsilon("missing")


def test_whole_dataset_and_partition_entries_add_their_deltas():
    """Basic composition of the whole-dataset guarantee with the parallel one: ε and δ both add."""
    ledger = PrivacyLedger([entry("all", 30), entry("all/class=0", 100, "all"), entry("all/class=1", 50, "all")])
    (guarantee,) = ledger.guarantees().values()
    assert guarantee["delta"] == pytest.approx(2e-5)
    assert guarantee["epsilon"] == pytest.approx(ledger.epsilon("all") + ledger.epsilon("all/class=0"))
    assert PrivacyLedger([entry("all/class=0", 5, "all"), entry("all/class=1", 5, "all")]).guarantees()["all"][
        "delta"
    ] == pytest.approx(1e-5)
