"""GS-WGAN (Chen, Orekondy, Fritz 2020): a conditional WGAN-GP generator that learns only through
sanitised gradients from K critics, each trained without DP on its own part of the data.

Stages: (1) HelperSteps: each critic k is pretrained on part k with a throwaway generator of its
own (official ``pretrain.py``); (2) PrivateSteps: step t trains ``critics_per_step`` critics (t mod
K when it is 1) ``critic_steps`` times each on its part against the current generator (a public
schedule; the official code trains the drawn critic instead, see
``zoo.privacy.mechanisms.private_helpers`` for why the zoo does not),
then draws a critic uniformly (secret randomness) and updates the generator through it and
``self.gradient_sanitizer`` (B3): the gradient of the generator loss with respect to each
generated image is clipped to C and noised. The released generator is the moving average of the
trained one (official ``netGS``), post-processing of the sanitised steps.

Theorem (add/remove-one, n public): parts come from a keyed hash of each record alone
(``PrivateHelpers``), so a record changes one critic; a step queries it with probability 1/K, and
then each of its B sanitised rows may move by 2C. Each step is one Poisson-subsampled Gaussian at
rate 1/K with noise multiplier σ_row/(2√B) (``zoo.privacy.mechanisms.output_sanitizer``). The
paper's accounting (T·B mechanisms at sensitivity C) is what ``official_accounting_epsilon``
computes, for comparison only: it is not a guarantee.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_modules.nets.dcgan import GENERATORS, DCGANCritic
from lightning_modules.parts.helper_parts import HelperParts, buffers_restored
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel, TinyRecipe, register_method, toy_images
from zoo.privacy import PrivacyBarrier, epsilon_spent
from zoo.stages import PrivateSteps, Stage

PRETRAINING = "pretrain each critic on its part"


@register_method
class GSWGAN(HelperParts, DPGenerativeModel):
    method = "gs-wgan"
    privacy_barrier = PrivacyBarrier.SANITIZED_OUTPUT_GRADIENT
    #: the moving average of the trained generator (official netGS)
    released_modules = ("generator",)
    never_released = ("critics", "scratch_generator")
    pretraining = PRETRAINING
    helper_networks = "critics"

    def __init__(
        self,
        num_classes: int = 10,
        image_shape: Sequence[int] = (1, 28, 28),
        critics: int = 1000,
        critics_per_step: int = 1,
        code_dim: int = 10,
        generator: str = "dcgan",
        generator_width: int = 64,
        critic_width: int = 64,
        spectral_norm: bool = True,
        batch_size: int = 32,
        critic_steps: int = 5,
        pretrain_steps: int = 2000,
        gradient_penalty: float = 10.0,
        logit_penalty: float = 1e-3,
        learning_rate: float = 1e-4,
        betas: tuple[float, float] = (0.5, 0.9),
        average_decay: float = 0.999,
    ) -> None:
        """Official defaults (``source/config.py``): K = 1000 critics, Bernoulli codes of 10, DCGAN
        critics of width 64 and a generator of width 64 (the paper's is "resnet", the official
        ``--gen_arch`` default; "dcgan" is its alternative), batch 32, 5 critic steps per generator
        step, 2,000 pretraining steps per critic, gradient penalty 10, logit penalty 1e-3, Adam 1e-4
        (0.5, 0.9), moving average 0.999. ``critics_per_step`` > 1 (not official) trains more critics per
        step on the public schedule: each critic then sees more updates at the same accounting. The
        networks are the official ones for 1×28×28 images and scale to other shapes
        (``lightning_modules.nets.dcgan``)."""
        super().__init__()
        if len(image_shape) != 3:
            raise UserError(f"image_shape must be (channels, height, width), got {tuple(image_shape)}")
        if min(critics, batch_size, critic_steps, pretrain_steps) < 1:
            raise UserError("critics, batch_size, critic_steps and pretrain_steps must be positive integers")
        if generator not in GENERATORS:
            raise UserError(f"generator must be one of {sorted(GENERATORS)}, got {generator!r}")
        self.save_hyperparameters()
        self.num_classes = num_classes
        self.automatic_optimization = False
        self.init_helper_parts(critics, critics_per_step)
        self.trained_generator = GENERATORS[generator](code_dim, num_classes, generator_width, image_shape)
        self.generator = copy.deepcopy(self.trained_generator).requires_grad_(False)
        self.scratch_generator = copy.deepcopy(self.trained_generator)
        self.critics = torch.nn.ModuleList()  # built for training only (configure_model): sampling needs none
        self._scratch_start = copy.deepcopy(self.scratch_generator.state_dict())

    # ----------------------------------------------------- what B3 accounts
    @property
    def sanitizer_sample_rate(self) -> float:
        return self.helpers.sample_rate

    @property
    def sanitized_rows_per_step(self) -> int:
        return self.hparams.batch_size

    # ------------------------------------------------------------- the plan
    def stages(self, datamodule: Any) -> list[Stage]:
        return [
            self.pretraining_stage(),
            PrivateSteps("generator steps through sanitised critic gradients", through_helpers=True),
        ]

    def configure_model(self) -> None:
        if not self.critics:
            arch = self.hparams
            self.critics.extend(
                DCGANCritic(arch.num_classes, arch.critic_width, arch.spectral_norm, arch.image_shape)
                for _ in range(arch.critics)
            )

    # -------------------------------------------------------------- training
    def pretraining_step(self, critic_index: int, iteration: int) -> None:
        """One official pretraining iteration of a critic with its throwaway generator."""
        _, _, scratch_optimizer = self.optimizers()
        if iteration == 0:
            self.scratch_generator.load_state_dict(self._scratch_start)
            scratch_optimizer.optimizer.state.clear()
        self._train_critic(critic_index, self.scratch_generator)
        self._generator_update(self.critics[critic_index], self.scratch_generator, scratch_optimizer, sanitise=False)

    def train_helper(self, critic_index: int) -> None:
        """The scheduled critic's ``critic_steps`` updates against the current trained generator."""
        self._train_critic(critic_index, self.trained_generator)

    def private_step(self, critic_index: int) -> None:
        _, generator_optimizer, _ = self.optimizers()
        self._generator_update(self.critics[critic_index], self.trained_generator, generator_optimizer, sanitise=True)
        self._update_average()

    def _train_critic(self, index: int, generator: torch.nn.Module) -> None:
        """``critic_steps`` WGAN-GP updates of critic ``index`` on its part (none when the part is empty)."""
        if self.part_is_empty(index):
            return
        critic_optimizer = self.optimizers()[0].optimizer
        critic = self.critics[index]
        for _ in range(self.hparams.critic_steps):
            critic_loss = self._critic_update(critic, index, generator, critic_optimizer)
        critic.zero_grad(set_to_none=True)
        self.log("critic_loss", critic_loss, prog_bar=True)

    def _critic_update(
        self, critic: DCGANCritic, index: int, generator: torch.nn.Module, optimizer: torch.optim.Optimizer
    ) -> Tensor:
        """WGAN-GP critic step on a batch of its own part (raw optimizer: a training step counts
        once, at its generator update); returns the detached loss."""
        real, real_labels = self.batch_of_part(index, self.hparams.batch_size)
        with torch.no_grad():
            fake = generator(self._codes(len(real)), real_labels)
        real_score = critic(real, real_labels)
        loss = (
            critic(fake, real_labels).mean()
            - real_score.mean()
            + self.hparams.gradient_penalty * critic.gradient_penalty(real, fake, real_labels)
            + self.hparams.logit_penalty * real_score.square().mean()
        )
        critic.zero_grad(set_to_none=True)
        self.manual_backward(loss)
        step_only(optimizer, critic)
        return loss.detach()

    def _generator_update(
        self, critic: DCGANCritic, generator: torch.nn.Module, optimizer: Any, sanitise: bool
    ) -> None:
        labels = torch.randint(self.num_classes, (self.hparams.batch_size,), device=self.device)
        fake = generator(self._codes(len(labels)), labels)
        if sanitise:
            fake = self.gradient_sanitizer(fake)
        critic.requires_grad_(False)
        with buffers_restored([critic]):  # the query leaves the critic as it was (spectral norm's vectors)
            loss = -critic(fake, labels).mean()
        optimizer.zero_grad(set_to_none=True)
        self.manual_backward(loss)
        optimizer.step()
        critic.requires_grad_(True)
        self.log("generator_loss", loss.detach(), prog_bar=True)

    @torch.no_grad()
    def _update_average(self) -> None:
        """Official ``exp_mov_avg``: decay min(1 − 1/(t+1), average_decay) at generator step t."""
        decay = min(1 - 1 / self.global_step, self.hparams.average_decay)  # global_step counts this update
        for average, trained in zip(self.generator.parameters(), self.trained_generator.parameters(), strict=True):
            average.lerp_(trained, 1 - decay)
        for average, trained in zip(self.generator.buffers(), self.trained_generator.buffers(), strict=True):
            average.copy_(trained)  # spectral norm's power-iteration vectors

    def _codes(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """Bernoulli(0.5) codes (the official ``latent_type``)."""
        return torch.bernoulli(torch.full((n, self.hparams.code_dim), 0.5), generator=generator).to(self.device)

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        def adam(module: torch.nn.Module) -> torch.optim.Optimizer:
            return torch.optim.Adam(module.parameters(), lr=self.hparams.learning_rate, betas=self.hparams.betas)

        # one Adam over all critics: only the queried critic has gradients, so each keeps its own state
        return [adam(self.critics), adam(self.trained_generator), adam(self.scratch_generator)]

    # ------------------------------------------------------------ sampling
    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        assert labels is not None
        return self.generator(self._codes(n, generator), labels.to(self.device))

    # ---------------------------------------------------------------- card
    @classmethod
    def display_name(cls, config: dict[str, Any]) -> str:
        return "GS-WGAN"

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        arch = config["architecture"]
        scheduled = arch.get("critics_per_step", 1)
        next_critics = "the next critic" if scheduled == 1 else f"the next {scheduled} critics"
        notes = [
            f"Stages: {arch['critics']:,} critics, each pretrained for {arch['pretrain_steps']:,} steps on its own "
            "part of the data (a keyed hash of each record decides its part) and never released; then generator steps, "
            f"each training {next_critics} in a fixed (public) order and then querying one critic drawn at random "
            f"through the gradient sanitiser (batch {arch['batch_size']}). The released generator is the moving "
            "average of the trained one."
        ]
        for entry in config["privacy_ledger"]["entries"]:
            if entry["barrier"] == "B3":
                official = official_accounting_epsilon(entry)
                parameters = entry["parameters"]
                notes.append(
                    f"The sanitiser adds noise of std σ_row·C = {parameters['row_noise_multiplier']:.3g} × "
                    f"{entry['clip_norm']:g} to every entry of each generated image's gradient; the table's σ is "
                    f"σ_row / (2√B), the noise over the step's sensitivity 2C·√B = {parameters['l2_sensitivity']:.3g}."
                )
                notes.append(
                    f"The GS-WGAN paper's accounting (each of the {entry['steps']:,} × {arch['batch_size']} "
                    f"generated rows a separate mechanism at sensitivity C) would print ε = {official:.3g} for this "
                    "run. That is not a guarantee: every row of a step comes from the same critic, so one record "
                    "can move all of them (the ε above is the sound one)."
                )
        return notes

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        return TinyRecipe(
            architecture=dict(
                num_classes=3,
                critics=3,
                generator_width=2,
                critic_width=2,
                batch_size=4,
                critic_steps=1,
                pretrain_steps=2,
            ),
            privacy=dict(target_epsilon=5.0, accountant="rdp"),
            data=functools.partial(toy_images, size=28),
        )


def step_only(optimizer: torch.optim.Optimizer, module: torch.nn.Module) -> None:
    """``optimizer.step()`` over ``module``'s parameters alone, with their own state: the critics'
    optimizer holds all K critics (one state per parameter, so the update is the same), and its
    loop over every parameter of every critic cost a sixth of a CPU training step."""
    group = optimizer.param_groups[0]
    held = group["params"]
    group["params"] = list(module.parameters())
    try:
        optimizer.step()
    finally:
        group["params"] = held


def official_accounting_epsilon(entry: dict[str, Any]) -> float:
    """What the official GS-WGAN code would print for a ledger entry: steps × B subsampled Gaussians
    at the per-row noise multiplier and sensitivity C (RDP, as its ``privacy_analysis``). Not a guarantee."""
    parameters = entry["parameters"]
    rows = entry["steps"] * parameters["rows_per_step"]
    return epsilon_spent([(parameters["row_noise_multiplier"], entry["sample_rate"], rows)], entry["delta"], "rdp")
