"""Privacy mechanisms as plug-ins, one module each, each stating its theorem in its docstring:

- ``dp_sgd``: per-example DP-SGD (B2 on a critic, B4 on the released model), with noise multiplicity;
- ``output_sanitizer``: clipped, noised gradients into a generated batch (B3, GS-WGAN);
- ``gaussian_release``: a one-shot statistic (B1, DP-MERF's embedding, DP-NF's standardisation);
- ``kernel_embedding``: a kernel mean embedding of every step's Poisson batch with GP noise (B1′, DP-Kernel);
- ``private_helpers``: never-released modules trained without DP on parts of the data, and
  the accounting of the steps that query them (GS-WGAN's critics, DP²-VAE's encoders);
- ``helper_query_dp_sgd``: B4 whose per-example terms come through such a helper (DP²-VAE).
"""

from __future__ import annotations

from zoo.privacy.barriers import PrivacyBarrier
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.mechanisms.base import Sampling, TrainingMechanism
from zoo.privacy.mechanisms.dp_sgd import PerExampleDPSGD
from zoo.privacy.mechanisms.gaussian_release import clip_rows, gaussian_release, scale_rows_to_unit_ball
from zoo.privacy.mechanisms.helper_query_dp_sgd import HelperQueryDPSGD
from zoo.privacy.mechanisms.kernel_embedding import KernelEmbeddingRelease, NoisedEmbedding
from zoo.privacy.mechanisms.output_sanitizer import GradientSanitizer, OutputGradientSanitizer
from zoo.privacy.mechanisms.private_helpers import PrivateHelpers, step_noise_multiplier, step_sensitivity

#: the mechanism that makes each training step private, by the barrier a module declares
TRAINING_MECHANISMS: dict[PrivacyBarrier, type[TrainingMechanism]] = {
    PrivacyBarrier.PRIVATE_CRITIC: PerExampleDPSGD,
    PrivacyBarrier.PRIVATE_MODEL: PerExampleDPSGD,
    PrivacyBarrier.SANITIZED_OUTPUT_GRADIENT: OutputGradientSanitizer,
    PrivacyBarrier.SUBSAMPLED_RELEASE: KernelEmbeddingRelease,
}
#: the barriers whose training steps are DP-SGD (Abadi et al. 2016: each example's gradient clipped, Gaussian noise
#: on their sum over a Poisson minibatch), read from ``TRAINING_MECHANISMS``: B2 and B4. A card tags their models
#: ``dp-sgd`` (``zoo.release.cards``); B1 and B1′ noise a released statistic and B3 the gradients into a generated
#: batch, which is not DP-SGD.
DP_SGD_BARRIERS: frozenset[PrivacyBarrier] = frozenset(
    barrier for barrier, mechanism in TRAINING_MECHANISMS.items() if issubclass(mechanism, PerExampleDPSGD)
)


def training_mechanism(barrier: PrivacyBarrier, module: object = None) -> type[TrainingMechanism]:
    """The mechanism class that privatises training steps behind ``barrier``: under B4, a module that
    declares ``queried_helpers`` computes its terms through them and gets :class:`HelperQueryDPSGD`."""
    if barrier is PrivacyBarrier.PRIVATE_MODEL and isinstance(getattr(module, "queried_helpers", None), PrivateHelpers):
        return HelperQueryDPSGD
    try:
        return TRAINING_MECHANISMS[barrier]
    except KeyError:
        raise PrivacyConfigError(
            f"barrier {barrier.value} is not applied inside training steps: its statistic is released once, "
            "in a Release stage (zoo.stages), which zoo.fit and `dpzoo fit` run before the training stages."
        ) from None


__all__ = [
    "DP_SGD_BARRIERS",
    "TRAINING_MECHANISMS",
    "GradientSanitizer",
    "HelperQueryDPSGD",
    "KernelEmbeddingRelease",
    "NoisedEmbedding",
    "OutputGradientSanitizer",
    "PerExampleDPSGD",
    "PrivateHelpers",
    "Sampling",
    "TrainingMechanism",
    "clip_rows",
    "gaussian_release",
    "scale_rows_to_unit_ball",
    "step_noise_multiplier",
    "step_sensitivity",
    "training_mechanism",
]
