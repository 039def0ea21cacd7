"""The ledger round-trips, composes sequentially per dataset and in parallel across partitions, and composes
datasets that may share records (other splits of one source) whatever their names."""

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld

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
        ]
    )
    per_class_1 = epsilon_spent([(2.0, 0.1, 400)], 1e-5, "rdp")
    assert ledger.epsilon("all/class=1") == pytest.approx(per_class_1)
    guarantees = ledger.guarantees()
    assert guarantees["all"]["epsilon"] == pytest.approx(per_class_1)  # max over disjoint parts
    assert set(guarantees["all"]["partitions"]) == {"all/class=0", "all/class=1"}
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


MNIST_A, MNIST_B = "mnist/train[seed=0,minus-validation=10000]", "mnist/train[seed=0,minus-validation=5000]"


def pld_epsilon(entries, delta=1e-5):
    """dp-accounting's PLD over every entry's subsampled Gaussian steps: an accountant independent of Opacus."""
    events = [
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(e.sample_rate, dp_accounting.GaussianDpEvent(e.noise_multiplier)),
            e.steps,
        )
        for e in entries
    ]
    accountant = pld.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(dp_accounting.ComposedDpEvent(events))
    return accountant.get_epsilon(delta)


def records_entry(dataset_id, steps, records=None, partition_of=None):
    """DP-SGD steps at σ = 1, q = 0.01, PRV-accounted (300 steps: ε ≈ 1.08 alone)."""
    return LedgerEntry(
        "subsampled_gaussian", "B4", dataset_id, 10_000, 1.0, 1.0, 0.01, 1e-5, "prv", steps=steps,
        partition_of=partition_of, records_identity=records,
    )  # fmt: skip


def test_entries_on_overlapping_records_compose_whatever_their_dataset_ids():
    """Another validation size keeps most of the same images under another dataset id: the guarantee of each
    composes both (ε ≈ 1.5 for two ε ≈ 1.08 uses, checked with dp-accounting's PLD), not the larger alone. The
    first entry is from a shipped checkpoint, without records: its dataset id names its source."""
    first, second = records_entry(MNIST_A, 300), records_entry(MNIST_B, 300, "mnist/train#0123456789abcdef")
    other = records_entry("fashion_mnist/train[seed=0,minus-validation=5000]", 300, "fashion_mnist/train#0123")
    guarantees = PrivacyLedger([first, second, other]).guarantees()
    both = pld_epsilon([first, second])
    assert 1.4 < both and pld_epsilon([first]) < 1.1
    for mine, theirs in ((MNIST_A, MNIST_B), (MNIST_B, MNIST_A)):
        assert guarantees[mine]["epsilon"] == pytest.approx(both, rel=0.02) and guarantees[mine]["composed_with"] == [
            theirs
        ]
    assert guarantees[other.dataset_id]["epsilon"] == pytest.approx(pld_epsilon([other]), rel=0.02)
    assert guarantees[other.dataset_id]["composed_with"] == []


def test_partitions_of_one_split_stay_parallel_and_another_split_of_the_same_records_adds():
    parts = [records_entry(f"{MNIST_A}/class={k}", 100 * (k + 1), f"mnist/train#{k}", MNIST_A) for k in range(3)]
    whole = records_entry(MNIST_B, 200, "mnist/train#b")
    assert PrivacyLedger(parts).guarantees()[MNIST_A]["epsilon"] == pytest.approx(
        PrivacyLedger(parts).epsilon(f"{MNIST_A}/class=2")
    )
    ledger = PrivacyLedger([*parts, whole])
    guarantees = ledger.guarantees()
    expected = ledger.epsilon(MNIST_B) + ledger.epsilon(f"{MNIST_A}/class=2")  # basic composition with the max part
    assert guarantees[MNIST_A]["epsilon"] == guarantees[MNIST_B]["epsilon"] == pytest.approx(expected)
    assert guarantees[MNIST_A]["delta"] == pytest.approx(2e-5) and len(guarantees[MNIST_A]["partitions"]) == 3


def test_a_ledger_written_before_records_identities_loads_and_keeps_its_epsilon():
    data = PrivacyLedger([entry("a", 3)]).to_dict()
    del data["entries"][0]["records_identity"]
    ledger = PrivacyLedger.from_dict(data)
    assert ledger.entries[0].records_identity is None
    assert ledger.guarantees()["a"]["epsilon"] == pytest.approx(epsilon_spent([(2.0, 0.1, 3)], 1e-5, "rdp"))


def test_only_named_datasets_of_different_sources_stay_apart():
    """Two folders the local index shows disjoint still compose: whether they share an image is a fact about the
    images, and an ε that moved with it would tell whether they do. So do uses that name no records (written
    before identities were recorded, or named by the user), and a folder named by a digest of its files (before
    the local index)."""
    from zoo.privacy import record_index

    keys = [bytes([k]) * 32 for k in range(4)]
    mine = record_index.register(np.frombuffer(b"".join(keys[:2]), dtype=np.uint8))
    theirs = record_index.register(np.frombuffer(b"".join(keys[2:]), dtype=np.uint8))
    assert record_index.overlap(mine, theirs) is False
    uses = [
        records_entry("local:a/train[validation=0,seed=0]", 300, mine),
        records_entry("local:b/train[validation=0,seed=0]", 300, theirs),
        records_entry("toy", 300),
        records_entry("clinic[2024]", 300),  # a name of the user's choosing, in brackets: no named dataset
        records_entry("photos@sha256:00ff/train[seed=0,minus-validation=0]", 300, "photos@sha256:00ff/train#ab"),
        records_entry(MNIST_A, 300, "mnist/train#0123"),
    ]
    guarantees = PrivacyLedger(uses).guarantees()
    assert guarantees[MNIST_A]["epsilon"] == pytest.approx(pld_epsilon(uses), rel=0.02)
    assert {g["epsilon"] for g in guarantees.values()} == {guarantees[MNIST_A]["epsilon"]}
    named = [records_entry(MNIST_A, 300, "mnist/train#0123"), records_entry("fashion_mnist/train[x]", 300)]
    assert PrivacyLedger(named).guarantees()[MNIST_A]["composed_with"] == []
