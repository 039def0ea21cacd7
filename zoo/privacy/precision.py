"""The arithmetic a privacy mechanism computes in, whatever precision the model trains in.

A clipping bound holds only if each record's norm and its share of the clipped sum are computed
alike and exactly enough: ``‖w_i·g_i‖ ≤ C`` with ``w_i = C/‖g_i‖`` fails by up to 2⁻⁸ relative when the
norm or the sum is rounded to bfloat16 (Lightning's ``bf16-mixed`` runs a manual-optimisation
module's backward pass, and so the clipping behind it, inside autocast), and by about 1e-3 when a
convolution's norms and its clipped sum go through different TF32 kernels (cuDNN's default). Noise
drawn in bfloat16 is a coarse lattice, not a Gaussian. So every clipping, summing and noising path
runs inside :func:`mechanism_arithmetic` on tensors of at least float32 (:func:`at_least_float32`);
rounding the noised result back to a training dtype afterwards is post-processing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

from zoo.privacy.errors import PrivacyConfigError


@contextmanager
def mechanism_arithmetic() -> Iterator[None]:
    """Autocast off on every device type and TF32 off for matmuls and cuDNN; restored on exit."""
    matmul_tf32, cudnn_tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.autocast("cpu", enabled=False), torch.autocast("cuda", enabled=False):
            yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul_tf32, cudnn_tf32


def at_least_float32(tensor: Tensor) -> Tensor:
    """``tensor`` in float32, or as it is when it is already float32 or wider."""
    return tensor if tensor.dtype in (torch.float32, torch.float64) else tensor.float()


def noise_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype to draw Gaussian noise in for a statistic of ``dtype``: float32 or wider."""
    return torch.promote_types(dtype, torch.float32)


def refuse_float16_loss_scaling(precision: object) -> None:
    """fp16 loss scaling multiplies every per-example gradient by a changing factor before clipping, and
    the helpers' own ``optimizer.step()`` calls bypass the scaler: refuse ``16-*`` before any work."""
    if str(precision).startswith("16"):
        raise PrivacyConfigError(
            f"precision={precision!r}: fp16 loss scaling rescales per-example gradients before clipping; "
            "use precision='bf16-mixed' or 32."
        )
