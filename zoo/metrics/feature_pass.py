"""Where and in what precision the feature passes of FID, KID, IS and precision/recall run.

The reference statistics are float32 features (shipped, or cached by an earlier pass on whatever machine ran it),
so the samples' features must be float32 too: a GPU's TF32 convolutions and matmuls (cuDNN allows them by
default) round to a 10-bit mantissa, and an FID would then compare features of two precisions. The pass runs
with TF32 off. torch-fidelity moves its network and batches with ``.cuda()``, to the current CUDA device,
so a pass is aimed at ``cuda:N`` by making that device current; it has no other accelerator, so any device that
is not CUDA computes its features on the CPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def without_tf32() -> Iterator[None]:
    """CUDA matmuls and cuDNN convolutions in full float32 inside, the caller's settings restored after."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def feature_device(device: str | torch.device) -> torch.device:
    """The device torch-fidelity computes features on when asked for ``device``: CUDA stays, anything else is
    the CPU."""
    device = torch.device(device)
    return device if device.type == "cuda" else torch.device("cpu")


@contextlib.contextmanager
def feature_pass(device: torch.device) -> Iterator[bool]:
    """A torch-fidelity pass on ``feature_device(device)`` with TF32 off; yields its ``cuda`` flag."""
    on_cuda = device.type == "cuda"
    with without_tf32(), torch.cuda.device(device) if on_cuda else contextlib.nullcontext():
        yield on_cuda


def device_label(device: torch.device) -> str:
    """How a result's protocol names the device its features came from."""
    return f"{device}, float32 (TF32 off)" if device.type == "cuda" else f"{device}, float32"
