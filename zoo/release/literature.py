"""Published numbers the zoo's checkpoints are read beside: DPImageBench (Gong et al., "DPImageBench: A
Unified Benchmark for Differentially Private Image Synthesis", CCS 2025; docs/methods/dp-merf.md), for the methods the
zoo and the benchmark share. Its protocol differs from the zoo's in ways that move every number, so each
comparison names them (``DPIMAGEBENCH_PROTOCOL``); a number is quoted as published, never adjusted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Published:
    """A method's published accuracy (%) and FID for one dataset and ε; None where not published."""

    accuracy: float | None
    fid: float | None = None
    #: why the number is not what it claims to be, where a reading of the code found out (a key of ``CAVEATS``)
    caveat: str = ""
    #: where the stated ε is not a guarantee: the sound ε of the same run (``SOUND_EPSILON_COMMAND``) and, where
    #: some records are queried at every step, theirs
    sound_epsilon: float | None = None
    worst_record_epsilon: float | None = None


DPIMAGEBENCH_SOURCE = "DPImageBench (CCS 2025)"
DPIMAGEBENCH_PROTOCOL = (
    "DPImageBench: ResNet/WRN/ResNeXt classifiers trained on 60,000 synthetic images; FID of 60,000 samples "
    "against its sensitive training set (pytorch-fid); δ = 1/(N ln N) ≈ 1.7e-6; a 55k/5k split. The zoo: the "
    "E.4 CNN (cas_cnn) and, for CIFAR-10, a ResNet-18 with flip and crop (cas_resnet), trained on 10,000 samples; "
    "FID of 10,000 samples against the test split, never the "
    "protected training set (Inception for CIFAR-10, the LeNet FID for MNIST and Fashion-MNIST, a different scale); "
    "δ = 1e-5"
)
_NOT_NOISED = "not a DP number"
_STATED_ONLY = "stated ε, not a guarantee"
CAVEATS = {
    _NOT_NOISED: "DPImageBench's DP-Kernel port lets the generator follow the un-noised gradient (the noise enters "
    "as a detached factor) and falls back to the un-noised statistic when the noise draw raises (its "
    "models/dp_kernel.py); the zoo's DP-Kernel adds the noise",
    _STATED_ONLY: "DPImageBench's GS-WGAN accounts each step at the noise of one row, while all of a step's rows "
    "come from one critic, so one record moves them all (the zoo's sound ε of its runs is in the table below)",
}
#: the command that computes ``Published.sound_epsilon`` from DPImageBench's own settings
SOUND_EPSILON_COMMAND = "python experiments/gs_wgan/dpimagebench_epsilon.py"
SOUND_EPSILON_PROTOCOL = (
    "DPImageBench's GS-WGAN settings (K = 1,000 critics, B = 32, 20,001 generator steps, its RDP σ for the stated "
    "ε, δ = 1/(N ln N) with N = 55,000), composed by the zoo's PLD accountant as one Poisson-subsampled Gaussian "
    "per step at rate 1/K with noise multiplier σ/√B (its sanitiser clips each row to C/B and adds noise of std "
    "2σC/B). That ε holds only where a record changes its own critic alone. DPImageBench's critics are slices of "
    "one shuffled index list (under add/remove one record moves others between critics), and every critic starts "
    "from the critic pretrained on the last part (`'netD_%d' % netD_id` with `netD_id` left at K − 1), so those 55 "
    "records shape every step: the last column is theirs (RDP at rate 1)"
)

#: (method, dataset, ε) → DPImageBench's published numbers (FID published at ε = 10 only)
DPIMAGEBENCH: dict[tuple[str, str, int], Published] = {
    ("dp-merf", "mnist", 1): Published(80.3),
    ("dp-merf", "mnist", 10): Published(81.3, 106.3),
    ("dp-merf", "fashion_mnist", 1): Published(62.2),
    ("dp-merf", "fashion_mnist", 10): Published(62.2, 106.4),
    ("dp-merf", "cifar10", 1): Published(27.2),
    ("dp-merf", "cifar10", 10): Published(29.0, 214.1),
    ("dp-kernel", "mnist", 1): Published(94.0, caveat=_NOT_NOISED),
    ("dp-kernel", "mnist", 10): Published(93.6, 38.9, caveat=_NOT_NOISED),
    ("dp-kernel", "fashion_mnist", 1): Published(68.4, caveat=_NOT_NOISED),
    ("dp-kernel", "fashion_mnist", 10): Published(70.0, 74.2, caveat=_NOT_NOISED),
    ("dp-kernel", "cifar10", 1): Published(26.4, caveat=_NOT_NOISED),
    ("dp-kernel", "cifar10", 10): Published(25.1, 161.4, caveat=_NOT_NOISED),
    ("gs-wgan", "mnist", 1): Published(72.4, caveat=_STATED_ONLY, sound_epsilon=394, worst_record_epsilon=3.31e5),
    ("gs-wgan", "mnist", 10): Published(
        75.3, 47.7, caveat=_STATED_ONLY, sound_epsilon=2723, worst_record_epsilon=1.51e6
    ),
    ("gs-wgan", "fashion_mnist", 1): Published(
        52.7, caveat=_STATED_ONLY, sound_epsilon=394, worst_record_epsilon=3.31e5
    ),
    ("gs-wgan", "fashion_mnist", 10): Published(
        56.7, 97.2, caveat=_STATED_ONLY, sound_epsilon=2723, worst_record_epsilon=1.51e6
    ),
}


def dpimagebench(method: str, dataset: str, epsilon: float) -> Published | None:
    """DPImageBench's numbers for the same method and dataset at the ε (1 or 10) a checkpoint rounds to."""
    nearest = 1 if abs(epsilon - 1) < 0.05 else 10 if abs(epsilon - 10) < 0.5 else None
    return None if nearest is None else DPIMAGEBENCH.get((method, dataset, nearest))
