"""The name under which torch-fidelity caches a reference's features names the weights by their bytes."""

import torch

from zoo.metrics.fidelity import _reference_cache_name


def test_weights_replaced_at_the_same_path_get_a_new_cache_name(tmp_path):
    reference = torch.rand(4, 1, 8, 8)
    weights = tmp_path / "extractor.safetensors"
    weights.write_bytes(b"first training")
    first = _reference_cache_name(reference, str(weights))
    assert _reference_cache_name(reference, str(weights)) == first
    weights.write_bytes(b"retrained")
    assert _reference_cache_name(reference, str(weights)) != first
    assert _reference_cache_name(reference, None) not in (first, _reference_cache_name(reference, str(weights)))
    assert _reference_cache_name(torch.rand(4, 1, 8, 8), None) != _reference_cache_name(reference, None)
