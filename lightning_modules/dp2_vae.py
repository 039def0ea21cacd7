"""DP²-VAE (Jiang, Sun, Yu 2022): a conditional VAE whose released decoder learns with DP-SGD from
codes given by encoders pretrained on the private data, and the zoo's sound variant of it.

``DP2VAE`` (method ``dp2-vae``) is the paper's Algorithms 1 and 2. The data is split into K parts
by a keyed hash of each record alone (``PrivateHelpers``). (1) HelperSteps: each encoder θ_k is
pretrained on part k with a throwaway decoder of its own, without DP (Adam on batch gradients
clipped to C). (2) PrivateSteps: step t first trains θ_(t mod K) one step without DP on a batch of
its part, through a copy of the current decoder (a public schedule: the paper trains the drawn
encoder on the decoder's batch instead, see ``zoo.privacy.mechanisms.private_helpers`` for why the
zoo does not); then it draws k uniformly (secret randomness), takes a batch of part k, clips each
example's decoder gradient through θ_k to C and adds N(0, σ²C²) to their sum (DP-SGD). Only the
decoder is released.

Theorem (add/remove-one): θ_k depends on all of part k, so one record can move every term of a
step that queries its part: sensitivity 2C·B, not the 2C of the paper's Theorem 3.1. Each step
is one subsampled Gaussian at rate 1/K with noise multiplier σ/(2B)
(``zoo.privacy.mechanisms.helper_query_dp_sgd``); the paper's claim for the same run is
``paper_theorem_epsilon``, shown on the card beside the sound ε and never as a guarantee.

``DP2VAEDPEncoder`` (method ``dp2-vae-dp-encoder``) keeps the paper's split of a trained encoder
and a released decoder, but trains the encoder with DP-SGD in the same clipped, noised steps as
the decoder (Poisson batches of the whole data). Each example's gradient then depends on that
example and on DP-trained weights only, so the standard DP-SGD theorem (B4,
``zoo.privacy.mechanisms.dp_sgd``) holds with sensitivity C, and the encoder's training is in
the same ledger entry. It is the paper's "DP-VAE" baseline; it is here because the sound
accounting of the helper version costs a factor B in noise.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_modules.nets.cvae import ConditionalDecoder, ConditionalEncoder, negative_elbo
from lightning_modules.parts.helper_parts import HelperParts
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel, TinyRecipe, register_method, toy_images
from zoo.privacy import PrivacyBarrier, PrivateHelpers
from zoo.privacy.mechanisms.helper_query_dp_sgd import paper_theorem_epsilon
from zoo.stages import PrivateSteps, Stage

PRETRAINING = "pretrain each encoder on its part"


class _ConditionalVAE(DPGenerativeModel):
    """What both variants share: the released conditional decoder and how it samples."""

    privacy_barrier = PrivacyBarrier.PRIVATE_MODEL
    released_modules = ("decoder",)

    def __init__(
        self,
        num_classes: int,
        image_shape: Sequence[int],
        channels: Sequence[int],
        latent_dim: int,
    ) -> None:
        super().__init__()
        if len(image_shape) != 3:
            raise UserError(f"image_shape must be (channels, height, width), got {tuple(image_shape)}")
        self.num_classes = num_classes
        self.decoder = ConditionalDecoder(image_shape, list(reversed(channels)), latent_dim, num_classes)

    def new_encoder(self) -> ConditionalEncoder:
        arch = self.hparams
        return ConditionalEncoder(arch.image_shape, arch.channels, arch.latent_dim, arch.num_classes)

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        """The decoder's Bernoulli means at codes drawn from the prior N(0, I)."""
        assert labels is not None
        codes = torch.randn(n, self.hparams.latent_dim, generator=generator).to(self.device)
        return torch.sigmoid(self.decoder(codes, labels.to(self.device)))

    @classmethod
    def display_name(cls, config: dict[str, Any]) -> str:
        return "DP²-VAE"

    @classmethod
    def card_tags(cls, config: dict[str, Any]) -> list[str]:
        return ["dp2-vae", str(config["method"])]


@register_method
class DP2VAE(HelperParts, _ConditionalVAE):
    method = "dp2-vae"
    never_released = ("encoders", "scratch_decoder")
    pretraining = PRETRAINING
    helper_networks = "encoders"

    def __init__(
        self,
        num_classes: int = 10,
        image_shape: Sequence[int] = (1, 28, 28),
        channels: Sequence[int] = (512, 256),
        latent_dim: int = 8,
        encoders: int = 1000,
        batch_size: int = 32,
        pretrain_steps: int = 100,
        pretrain_clip: float = 1.0,
        learning_rate: float = 1e-4,
    ) -> None:
        """Paper defaults: K = 1000 encoders, 2 conv layers (512, 256), latent 8, Adam 1e-4. The paper
        gives neither B nor the pretraining length; ``pretrain_clip`` is Algorithm 1's batch-gradient
        clip, also used for the encoders' non-private updates in stage 2."""
        super().__init__(num_classes, image_shape, channels, latent_dim)
        if min(encoders, batch_size, pretrain_steps) < 1:
            raise UserError("encoders, batch_size and pretrain_steps must be positive integers")
        if pretrain_clip <= 0:
            raise UserError(f"pretrain_clip must be positive, got {pretrain_clip}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.init_helper_parts(encoders)
        self.encoders = torch.nn.ModuleList()  # built for training only (configure_model): sampling needs none
        self.scratch_decoder = copy.deepcopy(self.decoder)
        self._scratch_start = copy.deepcopy(self.scratch_decoder.state_dict())

    # -------------------------------------------------- what the mechanism accounts
    @property
    def queried_helpers(self) -> PrivateHelpers:
        return self.helpers

    @property
    def helper_terms_per_step(self) -> int:
        return self.hparams.batch_size

    def private_modules(self) -> list[torch.nn.Module]:
        return [self.decoder]

    # ------------------------------------------------------------- the plan
    def stages(self, datamodule: Any) -> list[Stage]:
        return [
            self.pretraining_stage(),
            PrivateSteps("decoder steps through one encoder each", through_helpers=True),
        ]

    def configure_model(self) -> None:
        if not self.encoders:
            self.encoders.extend(self.new_encoder() for _ in range(self.hparams.encoders))

    # -------------------------------------------------------------- training
    def pretraining_step(self, index: int, iteration: int) -> None:
        """Algorithm 1: one iteration of an encoder with its throwaway decoder (the step counts at the
        decoder's update, also when the part is empty and the encoder stays as it is)."""
        _, _, scratch_optimizer = self.optimizers()
        if iteration == 0:
            self.scratch_decoder.load_state_dict(self._scratch_start)
            scratch_optimizer.optimizer.state.clear()
        scratch_optimizer.zero_grad(set_to_none=True)
        if not self.part_is_empty(index):
            self._encoder_step(index, self.scratch_decoder)
        self._clipped_step(self.scratch_decoder, scratch_optimizer)

    def train_helper(self, index: int) -> None:
        """The scheduled encoder's non-private step through a copy of the current decoder (the copy,
        the scratch decoder, carries none of DP-SGD's per-example hooks)."""
        if self.part_is_empty(index):
            return
        self.scratch_decoder.load_state_dict(self.decoder.state_dict())
        self._encoder_step(index, self.scratch_decoder)
        self.scratch_decoder.zero_grad(set_to_none=True)  # the copy only carries the encoder's gradients

    def private_step(self, index: int) -> None:
        """Algorithm 2's decoder step: per-example gradients through θ_index go to DP-SGD (the callback
        clips and noises them at ``decoder_optimizer.step``; an empty part gives a noise-only step)."""
        _, decoder_optimizer, _ = self.optimizers()
        images, labels = self.batch_of_part(index, self.hparams.batch_size)
        encoder = self.encoders[index].requires_grad_(False)
        terms = negative_elbo(encoder, self.decoder, images, labels)
        loss = terms.mean() if len(terms) else terms.sum()  # a mean of no terms would be NaN
        decoder_optimizer.zero_grad(set_to_none=True)
        self.manual_backward(loss)
        decoder_optimizer.step()
        encoder.requires_grad_(True)
        self.log("train_loss", loss.detach(), prog_bar=True)

    def _encoder_step(self, index: int, decoder: torch.nn.Module) -> None:
        """A non-private step of θ_index on a batch of its part through ``decoder``, whose own gradients
        the caller steps or drops."""
        encoder_optimizer = self.optimizers()[0].optimizer
        images, labels = self.batch_of_part(index, self.hparams.batch_size)
        loss = negative_elbo(self.encoders[index], decoder, images, labels).mean()
        encoder_optimizer.zero_grad(set_to_none=True)
        self.manual_backward(loss)
        self._clipped_step(self.encoders[index], encoder_optimizer)
        self.log("pretrain_loss", loss.detach(), prog_bar=True)

    def _clipped_step(self, module: torch.nn.Module, optimizer: Any) -> None:
        """A non-private step on the batch gradient clipped to C. An encoder steps through its raw
        optimizer: a training step counts once, at its decoder update."""
        torch.nn.utils.clip_grad_norm_(module.parameters(), self.hparams.pretrain_clip)
        optimizer.step()

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        def adam(module: torch.nn.Module) -> torch.optim.Optimizer:
            return torch.optim.Adam(module.parameters(), lr=self.hparams.learning_rate)

        # one Adam over all encoders: only the queried encoder has gradients, so each keeps its own state
        return [adam(self.encoders), adam(self.decoder), adam(self.scratch_decoder)]

    # ---------------------------------------------------------------- card
    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        arch = config["architecture"]
        notes = [
            "Variant: the paper's Algorithms 1 and 2. "
            f"{arch['encoders']:,} encoders, each pretrained for {arch['pretrain_steps']:,} steps on its own part of "
            "the data (a keyed hash of each record decides its part) without DP and never released; then decoder "
            "steps, each training the next encoder in a fixed (public) order and then querying one encoder drawn "
            f"at random with a batch of {arch['batch_size']} from its part."
        ]
        for entry in config["privacy_ledger"]["entries"]:
            if entry["mechanism"] == "helper_query_subsampled_gaussian":
                parameters = entry["parameters"]
                notes.append(
                    f"The decoder's summed clipped gradients get noise of std σ·C = "
                    f"{parameters['term_noise_multiplier']:.3g} × {entry['clip_norm']:g}; the table's σ is that "
                    f"over the step's sensitivity 2C·B = {parameters['l2_sensitivity']:.3g}, since the queried "
                    "encoder was trained on the record's part and can move every term of the step."
                )
                notes.append(
                    f"The DP²-VAE paper's Theorem 3.1 (sensitivity 2C per step) would claim ε = "
                    f"{paper_theorem_epsilon(entry):.3g} for this run. That is not a guarantee (the ε above is the "
                    "sound one)."
                )
        return notes

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        return TinyRecipe(
            architecture=dict(
                num_classes=3,
                image_shape=(1, 8, 8),
                channels=(2, 4),
                latent_dim=2,
                encoders=3,
                batch_size=4,
                pretrain_steps=2,
            ),
            privacy=dict(target_epsilon=5.0, accountant="rdp"),
            data=functools.partial(toy_images, size=8),
        )


@register_method
class DP2VAEDPEncoder(_ConditionalVAE):
    method = "dp2-vae-dp-encoder"
    docs_page = "dp2-vae"

    def __init__(
        self,
        num_classes: int = 10,
        image_shape: Sequence[int] = (1, 28, 28),
        channels: Sequence[int] = (512, 256),
        latent_dim: int = 8,
        learning_rate: float = 1e-4,
    ) -> None:
        """The paper's architecture and optimiser; batches come from the datamodule's Poisson sampling."""
        super().__init__(num_classes, image_shape, channels, latent_dim)
        self.save_hyperparameters()
        self.encoder = self.new_encoder()

    def private_modules(self) -> list[torch.nn.Module]:
        return [self.encoder, self.decoder]

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        images, labels = batch
        self.check_images(images)
        loss = negative_elbo(self.encoder, self.decoder, images, labels).mean()
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        return [
            "Variant: DP encoder. The encoder is trained with DP-SGD in the same clipped, noised steps as the "
            "decoder and is not released, so each example's gradient depends on that example and on DP-trained "
            "weights only and the standard DP-SGD theorem gives the ε above. The paper's helper encoders, "
            "trained without DP, would cost a factor B in noise under a sound analysis (its Theorem 3.1 does not "
            "hold); the zoo's `dp2-vae` method implements them."
        ]

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        return TinyRecipe(
            architecture=dict(num_classes=3, image_shape=(1, 8, 8), channels=(2, 4), latent_dim=2),
            privacy=dict(target_epsilon=5.0, accountant="rdp"),
        )
