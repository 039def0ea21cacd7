"""DP-MEPF (Harder, Jalali Asadabadi, Sutherland, Park, TMLR 2023): DP-MERF's one-shot release with
perceptual features of a network trained on public data in place of random features of pixels.

Stages: (1) Release: E = Σ_i (w ⊙ φ(x_i)) ⊗ e_{y_i} over the private training records, noised once,
where φ (``PerceptualFeatures``) concatenates parts of norm ≤ 1 each (the chosen taps' outputs of the
frozen public network, its stem and blocks, spatial layout kept, average-pooled to a small grid or multiplied by a
public random Gaussian matrix (``project``) before they are normalised per tap; optionally their
squares, and DP-MERF's random Fourier features of the pixels) and w weights the parts with Σ w_k² = 1;
(2) PublicSteps: a conditional generator G is trained to minimise ‖Ẽ_k / (w_k n) − mean_j φ_k(G(z_j, y_j)) ⊗
e_{y_j}‖² summed over the parts k (each part's features at unit scale), reading only Ẽ (post-processing).

Theorem (add/remove-one neighbouring datasets, n public). Every record's term (w ⊙ φ(x)) ⊗ e_y has L2
norm ‖w ⊙ φ(x)‖ ≤ (Σ_k w_k²)^½ = 1, since each part of φ(x) has norm ≤ 1 (computed in float64 for the
release: within 1e-12), so adding or removing a record moves E by at most 1: E + N(0, σ²I) is the
Gaussian mechanism at noise multiplier σ with sensitivity 1, σ calibrated to spend the whole target ε.
The public network's weights, the part weights, the random frequencies and the random projections do not depend
on the private data; pooling and projection are linear maps applied before each tap's normalisation, so they leave
every term's norm ≤ 1. Splitting the budget between the parts is the choice of w: part k's mean carries noise σ/(w_k n),
one release, one ledger entry. (The paper releases each moment with its own Gaussian mechanism and
its replace-one sensitivity 2c/n; under add/remove with n public the sum's sensitivity is 1.)

With a part shared by all classes (``shared_weight`` s > 0, ``parts.shared_part``), the released statistic is
E_s = Σ_i [√(1 − s²)·(w ⊙ φ(x_i)) ⊗ e_{y_i}, s·(w ⊙ φ(x_i))]: each record's term has norm
(1 − s² + s²)^½·‖w ⊙ φ(x_i)‖ ≤ 1, so the theorem above holds unchanged (sensitivity 1, the same σ, one release, one
ledger entry); the shared column's mean over all n images carries noise σ/(s·w_k·n), the class columns
σ/(√(1 − s²)·w_k·n).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_modules.nets.generators import generator_from
from lightning_modules.nets.perceptual_features import PerceptualFeatures, taps_description
from lightning_modules.parts.mean_embedding import MeanEmbeddingGenerator
from lightning_modules.parts.shared_part import check_shared_weight, split_release, with_shared_part
from lightning_modules.parts.shrinkage import card_words
from zoo.methods import DPGenerativeModel, TinyRecipe, register_method
from zoo.privacy import DPBudget, PrivacyBarrier, PrivacyLedger
from zoo.privacy.ledger import PublicDataUse
from zoo.release_shapes import class_sigma, class_weight
from zoo.stages import PublicStatistic, PublicSteps, Release, Stage


@register_method
class DPMEPF(MeanEmbeddingGenerator, DPGenerativeModel):
    method = "dp-mepf"
    privacy_barrier = PrivacyBarrier.ONE_SHOT_RELEASE
    released_modules = ("generator",)

    def __init__(
        self,
        image_shape: Sequence[int] = (1, 28, 28),
        num_classes: int = 10,
        network: str = "efficientnet_lite0",
        blocks: Sequence[int] = (1, 2, 3, 4),
        input_size: int = 32,
        stem: bool = False,
        network_bf16: bool = False,
        mean_weight: float = 1.0,
        second_weight: float = 0.0,
        pixel_weight: float = 0.0,
        pixel_features: int = 10_000,
        pixel_kernel_width: float = math.sqrt(20),
        feature_seed: int = 0,
        pool: int = 0,
        project: int = 0,
        shared_weight: float = 0.0,
        shrink_to_common: bool = False,
        code_dim: int = 32,
        generator: str = "dcgan",
        generator_width: int = 32,
        hidden: int = 200,
        channels: Sequence[int] = (16, 8),
        kernel_size: int = 5,
        batch_norm: bool = False,
        batch_size: int = 100,
        learning_rate: float = 0.001,
        lr_decay: float = 0.9,
        decay_every: int = 500,
        balanced_labels: bool = False,
        residual_average_lr: float | None = None,
        final_decay: float | None = None,
        stop_when_flat: int | None = None,
    ) -> None:
        """``network``'s blocks ``blocks`` (EfficientNet-Lite0: 0–6), and its stem's output if ``stem``, read
        images resized to ``input_size`` (grey repeated to three channels); ``network_bf16`` runs the frozen
        network alone under bfloat16 autocast on a CUDA device (a no-op on the CPU: the release, which runs
        on the CPU, and the loss stay float64/float32, and the sensitivity rests on the normalisation after the
        network, never on its precision). The parts' weights (``mean_weight``, ``second_weight`` for the
        squared outputs, ``pixel_weight`` for ``pixel_features`` random Fourier features of the pixels at
        ``pixel_kernel_width``) are normalised to unit L2 norm: they split the one release's noise. ``pool`` > 0
        average-pools each tap to a ``pool`` × ``pool`` grid before its normalisation (0 keeps the layout);
        ``project`` > 0 multiplies each tap's layout by a public random Gaussian matrix to ``project`` coordinates
        (drawn from ``feature_seed``), also before its normalisation, so every record's term keeps norm ≤ 1.
        ``shared_weight`` s > 0 releases a part shared by all classes beside the class parts, each record's term split
        between them with weights s and √(1 − s²) (``parts.shared_part``; 0: class parts only). ``shrink_to_common``
        shrinks each class's released mean toward the mean of all classes by the release's noise
        (``parts.shrinkage``: post-processing) before the generator is fitted to it. The
        generator is built as DP-MERF's (``nets.generators.build_generator``; ``"upsampling"`` is the official
        DP-MEPF generator) and fitted as ``parts.mean_embedding`` describes (``balanced_labels``,
        ``residual_average_lr``, ``final_decay``, ``stop_when_flat``)."""
        super().__init__()
        check_shared_weight(shared_weight)
        self.save_hyperparameters()
        self.num_classes = num_classes
        self.features = PerceptualFeatures(
            image_shape,
            network,
            blocks,
            input_size,
            stem=stem,
            network_bf16=network_bf16,
            mean_weight=mean_weight,
            second_weight=second_weight,
            pixel_weight=pixel_weight,
            pixel_features=pixel_features,
            pixel_kernel_width=pixel_kernel_width,
            seed=feature_seed,
            pool=pool,
            project=project,
        )
        # channels_last: the same convolutions, 1.4× faster forward and backward on the CPU for the upsampling
        # generator (benchmarks/mepf_fit_rate.py), which dominates a step's time at the images' own input size
        self.generator = generator_from(self.hparams).to(memory_format=torch.channels_last)
        self.register_buffer("released_embedding", torch.zeros(self.features.features, num_classes))
        if shared_weight:
            self.register_buffer("released_shared", torch.zeros(self.features.features, 1))
        self.init_matching()

    def stages(self, datamodule: Any) -> list[Stage]:
        self.features.check_available()
        return [
            Release("perceptual mean embedding", self._release_embedding, calibrated=True),
            PublicSteps("fit the generator to the released embedding"),
        ]

    def public_stages(self, public: Any) -> list[Stage]:
        """Pretraining on data the user declared public: the generator fitted to its exact embedding."""
        self.features.check_available()
        return [
            PublicStatistic("public perceptual mean embedding", self._embed_public),
            PublicSteps("fit the generator to the public embedding"),
        ]

    @torch.no_grad()
    def _release_embedding(self, datamodule: Any, budget: DPBudget) -> None:
        total, count = self.embedding_sum(datamodule, self._weighted_features)
        shared = self.hparams.shared_weight
        statistic = with_shared_part(total, shared) if shared else total
        beside = (
            f", beside a part shared by all classes (weights {shared:g} shared, the rest by class)" if shared else ""
        )
        noisy = budget.release(
            statistic,
            1.0,
            dataset_size=count,
            note=(
                f"DP-MEPF: Σ (w ⊙ φ(x))⊗e_y over {self.features.features:,} features of {self.hparams.network} "
                f"(parts {self.features.part_sizes}, weights {self._rounded_weights()}{beside}; each term of norm ≤ 1)"
            ),
        )
        scale = count * self.features.part_weights[:, None]
        if shared:
            noisy, all_classes = split_release(noisy, shared)
            self.released_shared.copy_(all_classes / scale)
        self.released_embedding.copy_(self.shrunk(noisy, budget, class_sigma(1.0, shared)) / scale)
        self._record_public_network(budget.ledger)

    @torch.no_grad()
    def _embed_public(self, public: Any) -> None:
        total, count = self.embedding_sum(public, self.features)
        self.released_embedding.copy_(total / count)
        if self.hparams.shared_weight:
            self.released_shared.copy_(total.sum(dim=1, keepdim=True) / count)
        self._record_public_network(self.privacy_ledger)

    def _weighted_features(self, images: Tensor) -> Tensor:
        return self.features(images) * self.features.part_weights.to(images.dtype)

    def _record_public_network(self, ledger: PrivacyLedger) -> None:
        """Name the public network, its weights' digest and its training data in the ledger's public data."""
        features = self.features
        spec = features.network_spec
        size = features.input_size
        use = PublicDataUse(
            dataset_id=f"{spec.training_data_id} (through {spec.name})",
            records=spec.training_images,
            source=spec.source(),
            stage=(
                f"feature network of the release: {taps_description(features.blocks, features.stem)} at "
                f"{size}×{size} input (trained at {spec.input_size}×{spec.input_size})"
            ),
            records_identity=f"{spec.training_data_id}#{spec.sha256[:16]}",
            assumed_disjoint=True,  # no index holds a public network's training set: by convention, on the card
        )
        recorded = {(u.dataset_id, u.source, u.stage) for u in ledger.public_data}
        if (use.dataset_id, use.source, use.stage) not in recorded:
            ledger.check_public_use(use.dataset_id, use.records_identity, use.assumed_disjoint)
            ledger.public_data.append(use)

    def _rounded_weights(self) -> dict[str, float]:
        return {part: round(self.features.weights[part], 4) for part in self.features.part_sizes}

    def training_step(self, step: Tensor, batch_idx: int) -> Tensor:
        loss, distance = self.embedding_loss()
        self.follow_objective(distance)
        self.log("embedding_distance", distance, prog_bar=True)
        return loss

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        arch = config["architecture"]
        taps = taps_description(arch["blocks"], arch.get("stem", False))  # shipped configs predate the stem
        pool = arch.get("pool", 0)  # shipped configs predate pooling
        layout = f"average-pooled to {pool}×{pool}" if pool else "spatial layout kept"
        project = arch.get("project", 0)  # shipped configs predate the projection
        if project:
            layout += f", each block randomly projected to {project} coordinates (seed {arch['feature_seed']})"
        parts = [
            f"the outputs of {taps} of the public network {arch['network']} at "
            f"{arch['input_size']}×{arch['input_size']} input ({layout}, normalised per block)"
        ]
        if arch["second_weight"] > 0:
            parts.append("their squares")
        if arch["pixel_weight"] > 0:
            parts.append(f"{arch['pixel_features']:,} random Fourier features of the pixels")
        listed = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
        embedding = (
            f"class-conditional mean of {listed} (part weights: network {arch['mean_weight']}, squares "
            f"{arch['second_weight']}, pixels {arch['pixel_weight']}, scaled to unit norm together)"
        )
        shared = arch.get("shared_weight", 0.0)  # shipped configs predate the shared part
        if shared:
            embedding += (
                f", beside their mean over all classes (each record's term split between the two with weights "
                f"{class_weight(shared):.3g} and {shared:g})"
            )
        if not config["privacy_ledger"]["entries"]:
            return [f"Pretrained on the public data above: the generator fitted to the exact {embedding}."]
        return [
            f"Stages: the {embedding} of the private data released once{card_words(arch)}; then the generator "
            "fitted to it without reading the data again (post-processing). The released embedding is not part of "
            "this folder. The "
            "network's weights are public (named with their digest under public data); they are not released here."
        ]

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        return TinyRecipe(
            architecture=dict(
                image_shape=(1, 8, 8),
                num_classes=3,
                blocks=(0, 1),
                input_size=16,
                second_weight=0.5,
                pixel_weight=0.5,
                pixel_features=32,
                code_dim=4,
                generator="conv",
                hidden=16,
                channels=(4, 2),
                kernel_size=3,
                batch_size=12,
                decay_every=2,
            ),
            privacy=dict(target_epsilon=1.0),
        )
