"""Time each evaluation metric on one model (default: the shipped digit-3 DP-LFlow; CAS needs
a class-conditional model: pass one, or --random-per-class for a DP-LFlow-sized per-class
model with random weights, whose values mean nothing but whose timings are representative).

    python benchmarks/evaluation_time.py [--model ID] [--metrics fid_lenet,cas] [--num-samples 10000]
    python benchmarks/evaluation_time.py --random-per-class --metrics fid_lenet,cas
"""

from __future__ import annotations

import argparse
import time
import warnings

import zoo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="dp-lflow-mnist-digit3-eps10")
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--metrics", default="fid_lenet")
    parser.add_argument("--num-samples", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--random-per-class", action="store_true", help="time a random-weight per-class DP-LFlow")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.random_per_class:
        from lightning_modules import PerClassModel

        model = PerClassModel("dp-lflow", {}, 10).eval()
        print("random-weight per-class DP-LFlow: timings only, the values mean nothing")
    else:
        model = zoo.load(args.model)
    start = time.perf_counter()
    model.sample(args.num_samples, seed=0, progress=False)
    print(f"sampling {args.num_samples}: {time.perf_counter() - start:.1f} s")
    for metric in args.metrics.split(","):
        start = time.perf_counter()
        report = zoo.evaluate(
            model, args.dataset, metrics=(metric,), num_samples=args.num_samples, runs=args.runs, progress=False
        )
        values = ", ".join(f"{k} = {v['value']:.3f}" for k, v in report["results"].items())
        print(f"{metric}: {time.perf_counter() - start:.1f} s (sampling included; {values})")


if __name__ == "__main__":
    main()
