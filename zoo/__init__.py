"""dpzoo: differentially private generative models for PyTorch Lightning.

import zoo
zoo.list_models()                       # ids with method, data and (ε, δ)
model = zoo.load("some-model-id")       # checkpoints/, the Hugging Face cache, then the Hub
images = model.sample(64, seed=0)
"""

__version__ = "0.1.0"

from zoo.finetune import finetune  # noqa: E402
from zoo.hub import from_pretrained, push_to_hub, save_pretrained  # noqa: E402
from zoo.loading import list_models, load  # noqa: E402
from zoo.metrics import evaluate  # noqa: E402
from zoo.metrics import membership_audit as audit  # noqa: E402

__all__ = ["audit", "evaluate", "finetune", "from_pretrained", "list_models", "load", "push_to_hub", "save_pretrained"]
