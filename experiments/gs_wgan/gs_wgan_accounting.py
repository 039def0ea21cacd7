"""GS-WGAN's privacy cost: the sound accounting against what the official code prints.

For each setting (K critics, T generator steps, batch B, per-row σ) prints the ε of the sound
analysis (one Poisson-subsampled Gaussian per step at rate 1/K, noise multiplier σ/(2√B); what
the zoo's ledger records) by PRV and RDP, and of the official per-row composition (T·B mechanisms
at rate 1/K and noise multiplier σ; not a guarantee) by RDP, the official code's accountant, all
at δ = 1e-5; then the per-row σ that the sound analysis needs for ε = 1 and 10 (PRV).

    python experiments/gs_wgan/gs_wgan_accounting.py
"""

from __future__ import annotations

import argparse
import math

from zoo.privacy import epsilon_spent
from zoo.privacy.accounting import calibrate_noise_multiplier
from zoo.privacy.mechanisms.output_sanitizer import row_noise_multiplier

DELTA = 1e-5
#: (label, K, T, B, per-row σ; None: calibrated to ε = 10 by PRV, as the recipe's DPBudget does)
SETTINGS = (
    ("published (official config.py)", 1000, 20_000, 32, 1.07),
    ("zoo CPU recipes, ε = 10", 500, 5_000, 32, None),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--critics", type=int, nargs="+", default=[100, 250, 500, 1000])
    parser.add_argument("--steps", type=int, nargs="+", default=[2_000, 5_000, 20_000])
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()

    print("| setting | K | T | B | σ_row | sound ε (PRV) | sound ε (RDP) | official ε (RDP, not a guarantee) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, critics, steps, batch, sigma in SETTINGS:
        if sigma is None:
            sigma = row_noise_multiplier(calibrate_noise_multiplier(10.0, DELTA, 1 / critics, steps, "prv"), batch)
        sound = [
            epsilon_spent([(sigma / (2 * math.sqrt(batch)), 1 / critics, steps)], DELTA, accountant)
            for accountant in ("prv", "rdp")
        ]
        official = epsilon_spent([(sigma, 1 / critics, steps * batch)], DELTA, "rdp")
        print(
            f"| {label} | {critics} | {steps:,} | {batch} | {sigma:.3g} | {sound[0]:,.4g} | {sound[1]:,.4g} "
            f"| {official:.3g} |"
        )

    print(f"\nper-row σ the sound analysis needs (PRV, δ = {DELTA:g}, B = {args.batch})\n")
    print("| K | T | σ_row for ε = 1 | σ_row for ε = 10 |")
    print("|---|---|---|---|")
    for critics in args.critics:
        for steps in args.steps:
            needed = [
                row_noise_multiplier(calibrate_noise_multiplier(eps, DELTA, 1 / critics, steps, "prv"), args.batch)
                for eps in (1.0, 10.0)
            ]
            print(f"| {critics} | {steps:,} | {needed[0]:.2f} | {needed[1]:.2f} |")


if __name__ == "__main__":
    main()
