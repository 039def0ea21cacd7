"""ε of DP-NF's published DP-SGD settings under each Opacus accountant.

The authors' configuration: σ = 2.1, batch 100 out of n ≈ 24,060 training rows (Life Science,
90 % split), δ = 1/n^1.1. The paper reports GDP tighter than the moments accountant at equal
settings; this prints ε after a range of epochs for RDP (moments accountant), PRV and GDP.
Opacus warns that its GDP accountant (a central-limit approximation) can underestimate ε.

    python experiments/dp_nf/dp_nf_accountants.py [--epochs 1 5 10 50 100]
"""

from __future__ import annotations

import argparse

from zoo.privacy.accounting import epsilon_spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sigma", type=float, default=2.1)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rows", type=int, default=24_060)
    parser.add_argument("--epochs", type=int, nargs="+", default=[1, 5, 10, 50, 100])
    args = parser.parse_args()
    sample_rate = args.batch / args.rows
    delta = 1 / args.rows**1.1
    print(f"σ = {args.sigma}, q = {args.batch}/{args.rows} = {sample_rate:.5f}, δ = 1/n^1.1 = {delta:.3g}")
    print("| epochs | steps | RDP (moments) | PRV | GDP (may underestimate) |")
    print("|---|---|---|---|---|")
    for epochs in args.epochs:
        steps = round(epochs / sample_rate)
        history = [(args.sigma, sample_rate, steps)]
        values = [epsilon_spent(history, delta, name) for name in ("rdp", "prv", "gdp")]
        print(f"| {epochs} | {steps} | " + " | ".join(f"{v:.3f}" for v in values) + " |")


if __name__ == "__main__":
    main()
