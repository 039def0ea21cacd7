"""What a metric's computation reads (``zoo.release.metric_spec.Compute``): one evaluation of a model against one
family of data, with its options. What several computations share (the samples, the tail anomalies) is computed
once, when the first of them asks."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import Tensor

from zoo.data.table_datamodule import TableDataModule
from zoo.methods import DPGenerativeModel
from zoo.metrics.reference import ReferenceImages
from zoo.metrics.tabular import tail_anomalies


@dataclass
class ImageRun:
    """An image evaluation (``zoo.metrics.image_evaluate``): the model, the real images it is compared with
    (``zoo.metrics.reference``) and the evaluation's options."""

    model: DPGenerativeModel
    dataset: str
    test: ReferenceImages
    label: int | None
    num_samples: int
    seed: int
    progress: bool
    runs: int
    epochs: int | None
    weights_path: str | None
    audit_size: int

    @functools.cached_property
    def samples(self) -> Tensor:
        """``num_samples`` samples (each class in turn for a conditional model), for every metric that reads them."""
        return self.model.sample(self.num_samples, seed=self.seed, progress=self.progress)

    @property
    def device(self) -> torch.device:
        """Where the model is: its samples, classifiers and feature passes run there."""
        return self.model.device


@dataclass
class TableRun:
    """A table evaluation (``zoo.metrics.table_evaluate``) on the test rows of the split the model was trained on."""

    model: DPGenerativeModel
    table: str
    split: int
    data: TableDataModule
    num_samples: int
    seed: int
    progress: bool
    dp_ad_epsilon: float
    row_norm_bound: float | None

    @property
    def test(self) -> Tensor:
        return self.data.test_rows

    @functools.cached_property
    def anomalies(self) -> Tensor:
        """As many tail anomalies as test rows (DP-NF §5), for the anomaly detectors."""
        return tail_anomalies(self.test, len(self.test), seed=self.seed)
