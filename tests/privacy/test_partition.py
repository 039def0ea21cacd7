"""Per-record part assignment: what sample-and-aggregate and private helpers stand on."""

import pytest
import torch

from zoo.privacy import PrivacyConfigError
from zoo.privacy.partition import assign_parts


def test_each_record_keeps_its_part_whatever_the_other_records():
    records = torch.rand(500, 1, 4, 4, generator=torch.Generator().manual_seed(0))
    key = b"k" * 16
    parts = assign_parts(records, 7, key)
    shuffled = torch.randperm(500, generator=torch.Generator().manual_seed(1))
    assert torch.equal(assign_parts(records[shuffled], 7, key), parts[shuffled])
    assert torch.equal(assign_parts(records[100:], 7, key), parts[100:])
    assert parts.min() >= 0 and parts.max() < 7


def test_parts_are_balanced_and_keys_differ():
    records = torch.rand(7000, 3, generator=torch.Generator().manual_seed(0))
    counts = assign_parts(records, 7, b"a" * 16).bincount(minlength=7)
    assert counts.min() > 850 and counts.max() < 1150  # 1000 each, binomial spread ~30
    assert not torch.equal(assign_parts(records, 7, b"a" * 16), assign_parts(records, 7, b"b" * 16))


@pytest.mark.parametrize("parts", [0, -1, 2.5, True])
def test_bad_part_counts_are_refused(parts):
    with pytest.raises(PrivacyConfigError, match="parts must be a positive integer"):
        assign_parts(torch.zeros(3, 2), parts)
