"""The sound ε of DPImageBench's GS-WGAN runs (github.com/2019ChenGong/DPImageBench at 565f8d7).

Their settings (configs/GS-WGAN/{mnist,fmnist}_28_eps{1.0,10.0}.yaml and models/gs_wgan.py):
- K = 1,000 critics (``num_discriminators``), batch B = 32, T = 20,000 accounted generator steps; the loop
  ``for iter in range(config.iterations + 1)`` runs 20,001;
- δ = 1/(N ln N) with N = 55,000 (``data/dataset_loader.py`` overwrites the config's 1e-5);
- σ from ``get_noise_multiplier(target_epsilon, δ, sample_rate=1/K, steps=T, accountant="rdp")``;
- the sanitiser clips each generated row to C/B and adds N(0, (2σC/B)²) to every entry
  (``dp_conv_hook``: ``clip_bound_ = CLIP_BOUND / batchsize``, noise ``clip_bound_ * noise_multiplier *
  SENSITIVITY``, SENSITIVITY = 2): one critic's B rows move by 2C/B each, the step by 2C/√B, so the step is
  one Gaussian of noise multiplier σ/√B, queried with probability 1/K (one critic drawn uniformly).

Their accounting takes each step as one mechanism of multiplier σ at rate 1/K, so it prints the target ε;
that is not a guarantee. The sound ε below composes T + 1 steps of multiplier σ/√B at rate 1/K by the zoo's
accountants. It holds only for a split in which a record changes its own critic alone. DPImageBench's does
not:
- its critics are slices of one shuffled index list, so under add/remove one record moves others across
  critics;
- every critic starts from the pretrained ``netD_999``: the optimiser loop loads ``'netD_%d' % netD_id``
  with ``netD_id`` left at K − 1 by the loop before it. So the 55 records of the last part shape every query
  (rate 1), and their ε (the last column) is the release's worst case.

    python experiments/gs_wgan/dpimagebench_epsilon.py
"""

from __future__ import annotations

import math

from opacus.accountants.utils import get_noise_multiplier

from zoo.privacy import epsilon_spent

CRITICS, BATCH, ACCOUNTED_STEPS = 1000, 32, 20_000
RUN_STEPS = ACCOUNTED_STEPS + 1
PRIVATE_IMAGES = 55_000  # MNIST / Fashion-MNIST train less their 5,000 validation images (eval.mode=val)
DELTA = 1 / (PRIVATE_IMAGES * math.log(PRIVATE_IMAGES))


def epsilons(stated: float) -> dict[str, float]:
    """DPImageBench's σ for a stated ε, the sound ε of its run (PLD, and RDP for comparison), and the ε of the
    records every critic starts from."""
    sigma = get_noise_multiplier(
        target_epsilon=stated,
        target_delta=DELTA,
        sample_rate=1 / CRITICS,
        steps=ACCOUNTED_STEPS,
        accountant="rdp",
        epsilon_tolerance=0.01,
    )
    step = sigma / math.sqrt(BATCH)
    return {
        "sigma": sigma,
        "sound_pld": epsilon_spent([(step, 1 / CRITICS, RUN_STEPS)], DELTA, "pld"),
        "sound_rdp": epsilon_spent([(step, 1 / CRITICS, RUN_STEPS)], DELTA, "rdp"),
        "every_query": epsilon_spent([(step, 1.0, RUN_STEPS)], DELTA, "rdp"),
    }


def main() -> None:
    print(
        f"DPImageBench GS-WGAN (MNIST and Fashion-MNIST alike): K = {CRITICS:,}, B = {BATCH}, "
        f"T = {RUN_STEPS:,} run ({ACCOUNTED_STEPS:,} accounted), δ = {DELTA:.4g}\n"
    )
    print("| stated ε | σ (their RDP calibration) | sound ε, PLD | sound ε, RDP | ε of the last part's records (RDP) |")
    print("|---|---|---|---|---|")
    for stated in (1.0, 10.0):
        e = epsilons(stated)
        print(
            f"| {stated:g} | {e['sigma']:.5g} | {e['sound_pld']:,.0f} | {e['sound_rdp']:,.0f} | "
            f"{e['every_query']:,.3g} |"
        )


if __name__ == "__main__":
    main()
