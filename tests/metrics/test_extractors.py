"""The shipped LeNet extractors are releases: they must not have learnt from protected images."""

import json

import pytest
import torch
from safetensors.torch import load_file

from zoo.data import load_images, train_validation_split
from zoo.metrics.extractors import LeNet, extractor_weights


@pytest.mark.heavy
@pytest.mark.parametrize("dataset", ["mnist", "fashion_mnist"])
def test_extractor_learnt_from_the_held_out_validation_images_only(data_dir, dataset):
    """A net fits its own training images better than unseen ones: the extractor must fit the
    held-out validation images clearly better than the images every shipped model protects."""
    record = json.loads(extractor_weights(dataset).with_suffix(".json").read_text())
    assert "held out for validation" in record["trained_on"]
    network = LeNet()
    network.load_state_dict(load_file(str(extractor_weights(dataset))))
    images, labels = load_images(dataset, train=True)
    protected, validation = train_validation_split(len(labels), 10_000, 0)
    with torch.no_grad():

        def accuracy(indices: torch.Tensor) -> float:
            return (network.eval()(images[indices]).argmax(1) == labels[indices]).double().mean().item() * 100

        assert accuracy(validation) > accuracy(protected[:10_000]) + 1.0
