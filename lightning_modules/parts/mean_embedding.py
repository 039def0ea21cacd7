"""What DP-MERF and DP-MEPF share: the sum of a class-conditional embedding φ(x) ⊗ e_y over the
training records (the statistic their one release noises), and a conditional generator fitted to the
released mean embedding by Adam with a step decay, reading nothing but that release."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from tqdm.auto import tqdm

from lightning_modules.nets.generators import generate_conditional, generated_embedding
from lightning_modules.nets.random_features import labelled_embedding

#: records embedded at a time (n × features floats)
EMBEDDING_CHUNK = 1000


class MeanEmbeddingGenerator:
    """Mixin for a DPGenerativeModel with ``generator``, ``features`` (the feature map φ), a
    ``released_embedding`` buffer (features × classes), ``num_classes`` and the hyperparameters
    ``code_dim``, ``batch_size``, ``learning_rate``, ``lr_decay`` and ``decay_every``."""

    def embedding_sum(self, datamodule: Any, feature_map: Callable[[Tensor], Tensor]) -> tuple[Tensor, int]:
        """Σ feature_map(x) ⊗ e_y over the data's training records, in float64, and their count."""
        datamodule.setup("fit")
        images, labels = datamodule.train_set.tensors
        total = torch.zeros_like(self.released_embedding, dtype=torch.float64)
        chunks = range(0, len(images), EMBEDDING_CHUNK)
        for start in tqdm(chunks, desc=f"embedding {len(images):,} records", unit="chunk", leave=False):
            chunk = slice(start, start + EMBEDDING_CHUNK)
            total += labelled_embedding(feature_map(images[chunk].double()), labels[chunk], self.num_classes)
        return total, len(images)

    def embedding_distance(self) -> Tensor:
        """‖released − mean φ(G(z, c)) ⊗ e_c‖² over a batch of codes and uniformly drawn labels."""
        arch = self.hparams
        fitted = generated_embedding(
            self.generator, arch.code_dim, self.num_classes, arch.batch_size, self.features, self.device
        )
        return (self.released_embedding - fitted).square().sum()

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(self.generator.parameters(), lr=self.hparams.learning_rate)
        schedule = torch.optim.lr_scheduler.StepLR(optimizer, self.hparams.decay_every, self.hparams.lr_decay)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        assert labels is not None
        return generate_conditional(self.generator, self.hparams.code_dim, labels, generator)
