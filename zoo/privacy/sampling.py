"""Poisson sampling of private data, the subsampling scheme the accountants assume.

Every logical step includes each example independently with probability q, so batch
sizes vary (and may be 0). Under DDP, rank r samples from the examples with index ≡ r
(mod world size): the shards partition the data with no padding, so the union over
ranks is exactly one Poisson sample of the whole dataset at rate q.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, default_collate

from zoo.errors import UserError
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.parameters import check_sample_rate
from zoo.privacy.randomness import private_generator


class PoissonBatches(IterableDataset):
    """Yields ``steps_per_epoch`` Poisson batches, each split into ``micro_batches`` chunks.

    Splitting one Poisson sample into chunks (for gradient accumulation) keeps the
    logical step a single subsampled mechanism; drawing each chunk separately would not.
    Without a ``seed`` every epoch draws fresh OS entropy, so a resumed run never replays
    the subsets of the run it continues.
    """

    def __init__(
        self,
        dataset: Dataset,
        sample_rate: float,
        steps_per_epoch: int | None = None,
        micro_batches: int = 1,
        seed: int | None = None,
    ) -> None:
        self.dataset = dataset
        self.dataset_size = len(dataset)  # type: ignore[arg-type]
        if self.dataset_size == 0:
            raise UserError("cannot sample private batches from an empty dataset")
        self.sample_rate = check_sample_rate(sample_rate)
        self.steps_per_epoch = steps_per_epoch or max(1, round(1 / sample_rate))
        if micro_batches < 1:
            raise UserError(f"micro_batches must be >= 1, got {micro_batches}")
        self.micro_batches = micro_batches
        self.seed = seed
        self._epochs_started = 0

    @property
    def expected_batch_size(self) -> float:
        """Expected size of one logical batch over all ranks: q·N."""
        return self.sample_rate * self.dataset_size

    def __len__(self) -> int:
        return self.steps_per_epoch * self.micro_batches

    def __iter__(self):
        rank, world_size = _rank_and_world_size()
        seed = None if self.seed is None else hash((self.seed, self._epochs_started, rank)) % 2**63
        generator = private_generator(seed)
        self._epochs_started += 1
        shard = torch.arange(rank, self.dataset_size, world_size)
        for _ in range(self.steps_per_epoch):
            chosen = shard[torch.rand(len(shard), generator=generator) < self.sample_rate]
            for chunk in torch.tensor_split(chosen, self.micro_batches):
                yield self._fetch(chunk)

    def _fetch(self, indices: torch.Tensor) -> Any:
        take = getattr(self.dataset, "take", None)  # a whole batch at once (zoo.data.ByteImages)
        if take is not None:
            return take(indices)
        if isinstance(self.dataset, TensorDataset):
            return tuple(t[indices] for t in self.dataset.tensors)
        if len(indices) == 0:
            # keep the structure and dtypes of a real batch, with zero rows
            return _take_rows(default_collate([self.dataset[0]]), 0)
        return default_collate([self.dataset[int(i)] for i in indices])


def poisson_loader(
    dataset: Dataset,
    sample_rate: float,
    *,
    steps_per_epoch: int | None = None,
    micro_batches: int = 1,
    seed: int | None = None,
) -> DataLoader:
    """A train loader for private data. It runs in the main process (``num_workers=0``)
    so that the sampling randomness is drawn in one place."""
    batches = PoissonBatches(dataset, sample_rate, steps_per_epoch, micro_batches, seed)
    return DataLoader(batches, batch_size=None, num_workers=0)


def poisson_batches_of(loader: Any) -> PoissonBatches | None:
    """The PoissonBatches behind a loader, or None when it is not a Poisson loader."""
    dataset = getattr(loader, "dataset", None)
    return dataset if isinstance(dataset, PoissonBatches) else None


def required_poisson_batches(loader: Any) -> PoissonBatches:
    """The PoissonBatches behind the train loader of a private step, or a clear refusal of any other loader."""
    batches = poisson_batches_of(loader)
    if batches is None:
        raise PrivacyConfigError(
            "DPCallback needs a Poisson-sampled train loader (the sampling the accountant assumes); "
            "got a plain DataLoader. Build it with zoo.privacy.poisson_loader(dataset, sample_rate) "
            "or use a zoo.data datamodule."
        )
    return batches


def _take_rows(batch: Any, n: int) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch[:n]
    if isinstance(batch, (list, tuple)):
        return type(batch)(_take_rows(b, n) for b in batch)
    if isinstance(batch, dict):
        return {k: _take_rows(v, n) for k, v in batch.items()}
    return batch


def _rank_and_world_size() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1
