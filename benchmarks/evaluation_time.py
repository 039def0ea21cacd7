"""Time each evaluation metric on one model (default: the shipped digit-3 DP-LFlow; CAS needs
a class-conditional model: pass one, or --random-per-class for a DP-LFlow-sized per-class
model with random weights, whose values mean nothing but whose timings are representative).

    python benchmarks/evaluation_time.py [--model ID] [--metrics fid_lenet,cas] [--num-samples 10000]
    python benchmarks/evaluation_time.py --random-per-class --metrics fid_lenet,cas

Inception FID (issue 43), on a CIFAR-10 model:

    python benchmarks/evaluation_time.py --model dp-mepf-cifar10-eps10 --dataset cifar10 --fid-reference-cost
    python benchmarks/evaluation_time.py --inception-throughput 256

``--fid-reference-cost`` times ``fid`` with the shipped reference statistics, then again with none shipped
or cached (the reference's features extracted, as before they were shipped). ``--inception-throughput N``
times the Inception pass on N images per network and batch size: torch-fidelity's module as built, in
``channels_last``, and dpzoo's pass (``zoo.metrics.inception_fid.inception_extractor``: batch norms folded,
``channels_last``), under ``torch.no_grad`` as torch-fidelity runs it and once under ``torch.inference_mode``;
prints how far each moves the features from the module as built, and the bound set by this machine's
matrix-multiply speed and the network's FLOPs.
"""

from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time
import warnings
from pathlib import Path

import torch

import zoo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="dp-lflow-mnist-digit3-eps10")
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--metrics", default="fid_lenet")
    parser.add_argument("--num-samples", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--random-per-class", action="store_true", help="time a random-weight per-class DP-LFlow")
    parser.add_argument("--fid-reference-cost", action="store_true", help="fid with and without shipped statistics")
    parser.add_argument("--inception-throughput", type=int, default=0, metavar="N", help="time the Inception pass")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.inception_throughput:
        inception_throughput(args.inception_throughput)
        return
    if args.fid_reference_cost:
        fid_reference_cost(args.model, args.dataset, args.num_samples)
        return
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


def fid_reference_cost(model_id: str, dataset: str, num_samples: int) -> None:
    """Wall time of ``fid`` as a user runs it (shipped statistics), then with the reference extracted."""
    from zoo.metrics import reference_statistics

    model = zoo.load(model_id)
    for label in ("shipped statistics", "reference extracted (nothing shipped or cached)"):
        if label.startswith("reference"):
            reference_statistics.SHIPPED_DIR = Path(tempfile.mkdtemp())
            os.environ["DPZOO_CACHE_DIR"] = tempfile.mkdtemp()
        start = time.perf_counter()
        report = zoo.evaluate(model, dataset, metrics=("fid",), num_samples=num_samples, progress=False)
        fid = report["results"]["fid"]
        print(f"{label}: {time.perf_counter() - start:.0f} s for fid at {num_samples:,} samples = {fid['value']:.2f}")


def inception_throughput(n: int) -> None:
    """Images per second of the FID Inception per network and batch size, against the FLOP bound."""
    from torch.utils.flop_counter import FlopCounterMode
    from torch_fidelity.utils import create_feature_extractor

    from zoo.metrics.fidelity import _offline_weights
    from zoo.metrics.inception_fid import EXTRACTOR, FEATURE_LAYER, inception_extractor

    weights = _offline_weights()
    built = create_feature_extractor(
        EXTRACTOR, [FEATURE_LAYER], cuda=False, feature_extractor_weights_path=weights, verbose=False
    )
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        built(images[:1])
    flops = counter.get_total_flops()
    size = 2048
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    start = time.perf_counter()
    for _ in range(5):
        torch.mm(a, b)
    matmul = 5 * 2 * size**3 / (time.perf_counter() - start)
    print(
        f"{torch.get_num_threads()} threads: matrix multiply {matmul / 1e9:.0f} GFLOP/s; Inception {flops / 1e9:.2f} "
        f"GFLOP per image, so at most {matmul / flops:.1f} images/s"
    )
    networks = {
        "as built": built,
        "channels_last": copy.deepcopy(built).to(memory_format=torch.channels_last),
        "dpzoo's pass": inception_extractor(weights),
    }
    runs = [(name, batch, torch.no_grad) for name in networks for batch in (32, 64, 128)]
    runs.append(("dpzoo's pass", 64, torch.inference_mode))
    reference = None
    for name, batch, mode in runs:
        start = time.perf_counter()
        with mode():
            features = torch.cat([networks[name](images[i : i + batch])[0] for i in range(0, n, batch)])
        rate = n / (time.perf_counter() - start)
        reference = features.clone() if reference is None else reference
        moved = (features - reference).abs().max().item()
        label = f"{name}, batch {batch}" + (", inference_mode" if mode is torch.inference_mode else "")
        print(f"{label:>38}: {rate:.1f} images/s (features moved {moved:.1e})", flush=True)


if __name__ == "__main__":
    main()
