"""How fast a DP-MEPF fit steps on this machine's CPU, by release shape and by the free levers of a step (issue 65):
the input size the network reads (the recipe's 64×64, or the images' own 32×32), the generator's batch, width and
memory format (channels_last, DPMEPF's, against the default), each timed alone over the same steps. A whole run's
wall time, release and evaluation included, is the small-data ladder's minutes column
(``benchmarks/small_data_ladder.py``).

    python benchmarks/mepf_fit_rate.py [--steps 20] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import torch
import yaml

from lightning_modules import DPMEPF
from zoo.release_shapes import SHAPES

RECIPE = "configs/dp_mepf_cifar10_eps10.yaml"


def steps_per_second(model: DPMEPF, steps: int, contiguous: bool) -> float:
    """Adam steps of the generator's fit to a zero release, timed after one warm-up step; ``contiguous``: with the
    generator in the default memory format instead of DPMEPF's channels_last."""
    if contiguous:
        model.generator.to(memory_format=torch.contiguous_format)
    optimizer = torch.optim.Adam(model.generator.parameters(), lr=1e-3)

    def step() -> None:
        loss, _ = model.embedding_loss()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    step()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recipe = yaml.safe_load(open(RECIPE))["model"]["init_args"]
    shapes = {shape.name: shape for shape in SHAPES[("dp-mepf", 3)]}
    cases = [(name, {}, False) for name in shapes]
    cases += [("grid2", {"input_size": 64}, False), ("grid2", {"batch_size": 50}, False), ("grid2", {}, True)]
    cases += [("grid2", {"generator_width": 16}, False)]
    print(f"| shape | change | steps/s ({args.threads} threads) |")
    print("|---|---|---|")
    for name, change, contiguous in cases:
        model = DPMEPF(**{**recipe, **shapes[name].changes, **change})
        model.features.network  # noqa: B018 (loaded before the clock)
        rate = steps_per_second(model, args.steps, contiguous)
        words = ", ".join([*(f"{k} {v}" for k, v in change.items()), *(["generator contiguous"] if contiguous else [])])
        print(f"| {name} | {words or '(as the shape sets)'} | {rate:.2f} |", flush=True)


if __name__ == "__main__":
    main()
