"""dpzoo: differentially private generative models for PyTorch Lightning.

import zoo
zoo.list_models()                       # ids with method, data and (ε, δ)
model = zoo.load("some-model-id")       # checkpoints/, the Hugging Face cache, then the Hub
model = zoo.load("some-model-id", device="cuda")   # on a GPU; samples still come back on the CPU
images = model.sample(64, seed=0)
zoo.evaluate_into_card("my-model-folder", "mnist", metrics=("fid_lenet",))   # measured, then on its card

The API is imported on first use, so that ``import zoo`` (and ``dpzoo --help``) stays fast.
"""

from __future__ import annotations

from zoo.lazy import lazy_exports

__version__ = "0.1.0"

_API = {
    "audit": ("zoo.metrics", "membership_audit"),
    "evaluate": ("zoo.metrics", "evaluate"),
    "evaluate_into_card": ("zoo.metrics.records", "evaluate_into_card"),
    "finetune": ("zoo.finetuning", "finetune"),
    "from_pretrained": ("zoo.release.hub", "from_pretrained"),
    "list_models": ("zoo.release.loading", "list_models"),
    "load": ("zoo.release.loading", "load"),
    "pretrain_public": ("zoo.training", "pretrain_public"),
    "push_to_hub": ("zoo.release.hub", "push_to_hub"),
    "save_pretrained": ("zoo.release.hub", "save_pretrained"),
    "train": ("zoo.training", "train"),
}
__all__ = sorted(_API)

__getattr__, __dir__ = lazy_exports(globals(), _API)
