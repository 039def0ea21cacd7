"""The ``dpzoo`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from zoo.data.images import DataNotFoundError
from zoo.privacy.errors import PrivacyConfigError


def _demo(args: argparse.Namespace) -> int:
    from zoo.demo import run_demo

    result = run_demo(
        Path(args.out),
        digit=args.digit,
        steps=args.steps,
        target_epsilon=args.epsilon,
        delta=args.delta,
        seed=args.seed,
    )
    print(
        f"trained DP-LFlow on MNIST digit {result.digit} for {result.steps} DP-SGD steps "
        f"(σ = {result.noise_multiplier:.3f}): "
        f"(ε = {result.epsilon:.3f}, δ = {result.delta:g})-DP, PRV accountant\n"
        f"samples:        {result.samples_path}\n"
        f"privacy ledger: {result.ledger_path}"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpzoo", description="Differentially private generative models for PyTorch Lightning."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="train DP-LFlow privately on one MNIST digit and write a sample grid",
        description="A short private training on real MNIST (set DPZOO_DATA_DIR to a local copy offline).",
    )
    demo.add_argument("--digit", type=int, default=3, help="the MNIST class to learn (default: 3)")
    demo.add_argument("--out", default="demo", help="output folder (default: demo)")
    demo.add_argument("--steps", type=int, default=300, help="DP-SGD steps (default: 300)")
    demo.add_argument("--epsilon", type=float, default=10.0, help="target ε (default: 10)")
    demo.add_argument("--delta", type=float, default=1e-5, help="δ (default: 1e-5)")
    demo.add_argument("--seed", type=int, default=0, help="seed for initialisation and sampling")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (PrivacyConfigError, DataNotFoundError, ValueError) as error:
        print(f"dpzoo {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
