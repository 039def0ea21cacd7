"""Under DP-SGD, only the private modules may learn from a private batch.

DP-SGD's theorem (``zoo.privacy.mechanisms.dp_sgd``) covers what the clipped, noised step writes into
the parameters of ``private_modules()``. Whatever else the model keeps and changes while it reads a
private batch is outside it and is saved with the weights: a BatchNorm outside the private modules
keeps a running mean of private inputs in its buffers, and a second optimizer on another module takes
un-noised steps from the private batches. So, in a DP-SGD stage,

- every parameter an optimizer holds belongs to a private module (checked once, before any step);
- no other parameter or buffer changes during the first private steps (``WATCHED_STEPS``): a layer
  that moves in training mode or an optimizer created inside a step shows from the first step.

Two kinds of module are exempt: the modules a method declares public with a reason (``public_modules``,
:func:`~zoo.privacy.barriers.declared_public_modules`), which learn only from what the private steps
release (post-processing); and, when the steps query never-released helpers (``PrivateHelpers``), those
helpers, whose theorem accounts for what they learn without DP (``zoo.privacy.mechanisms.private_helpers``).
A frozen public feature extractor (requires_grad False, in no optimizer, BatchNorm in eval mode)
changes nothing and needs no declaration.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor, nn

from zoo.privacy.barriers import declared_private_modules, declared_public_modules
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.mechanisms import HelperQueryDPSGD, PerExampleDPSGD, TrainingMechanism

#: the private steps around which the state outside the exempt modules is compared: a declaration mistake
#: shows from the first step; a method whose other state moves only later on a schedule escapes this check
WATCHED_STEPS = 3

FIX = (
    "Return its module from private_modules(), freeze it (requires_grad False, in no optimizer, eval mode), or, "
    "if it learns nothing from the private data beyond what the private steps release, declare it in "
    "public_modules with the reason."
)


def private_step_guard(
    mechanism: TrainingMechanism, pl_module: nn.Module, optimizers: Sequence[torch.optim.Optimizer]
) -> PrivateStepGuard | None:
    """The guard of a DP-SGD stage, its optimizers checked; None for mechanisms that write no clipped
    gradients into the model's parameters (the output sanitiser, the subsampled release)."""
    if not isinstance(mechanism, PerExampleDPSGD):
        return None
    guard = PrivateStepGuard(pl_module, helpers_queried=isinstance(mechanism, HelperQueryDPSGD))
    guard.check_optimizers(optimizers)
    return guard


class PrivateStepGuard:
    """What may change during a private step of ``pl_module``: its private modules, the modules it declares
    public and, when ``helpers_queried``, its never-released helpers (the exempt modules)."""

    def __init__(self, pl_module: nn.Module, helpers_queried: bool) -> None:
        self.module = pl_module
        self.exempt = _exempt_modules(pl_module, helpers_queried)
        self.steps_left = WATCHED_STEPS
        self._before: dict[tuple[str, str], str] | None = None

    def check_optimizers(self, optimizers: Sequence[torch.optim.Optimizer]) -> None:
        """Refuse an optimizer holding a parameter outside the exempt modules, trainable now or not (a step may
        turn requires_grad on): it would step it from the private batches without clipping or noise."""
        exempt = _tensor_ids(self.exempt)
        names = {id(p): name for name, p in self.module.named_parameters()}
        for index, optimizer in enumerate(optimizers):
            held = (p for group in optimizer.param_groups for p in group["params"])
            outside = [names.get(id(p), f"<unnamed {tuple(p.shape)}>") for p in held if id(p) not in exempt]
            if outside:
                raise PrivacyConfigError(
                    f"optimizer {index} ({type(optimizer).__name__}) steps parameters outside private_modules(): "
                    f"{outside[:8]}{' ...' if len(outside) > 8 else ''}. It would step them from the private "
                    f"batches without clipping or noise. {FIX}"
                )

    def before_step(self) -> None:
        if self.steps_left > 0:
            self._before = self._fingerprints()

    def after_step(self) -> None:
        """Refuse a parameter or buffer outside the exempt modules that the step changed."""
        if self._before is None:
            return
        before, after = self._before, self._fingerprints()
        self._before = None
        self.steps_left -= 1
        keys = [*after, *(key for key in before if key not in after)]  # the module's order, parameters first
        changed = [key for key in keys if before.get(key) != after.get(key)]
        if changed:
            kind, name = changed[0]
            owner = name.rpartition(".")[0] or f"{type(self.module).__name__} itself"
            others = f" (also changed: {[other for _, other in changed[1:9]]})" if len(changed) > 1 else ""
            raise PrivacyConfigError(
                f"the {kind} {name} changed during a private step but {owner} is not among private_modules(): "
                f"the model would keep a trace of the private batches that DP-SGD never clipped or noised{others}. "
                f"{FIX}"
            )

    def _fingerprints(self) -> dict[tuple[str, str], str]:
        """A digest of each parameter and buffer outside the exempt modules, by kind and name. Read afresh
        each time, so a tensor that a step replaces is compared by name."""
        exempt = _tensor_ids(self.exempt)
        named = [
            *((("parameter", n), t) for n, t in self.module.named_parameters()),
            *((("buffer", n), t) for n, t in self.module.named_buffers()),
        ]
        return {key: _digest(tensor) for key, tensor in named if id(tensor) not in exempt}


def _exempt_modules(pl_module: nn.Module, helpers_queried: bool) -> list[nn.Module]:
    """The private modules, the declared public ones and, when the steps query them, the never-released
    helpers; a module declared both private and public is refused."""
    private = declared_private_modules(pl_module)
    public = declared_public_modules(pl_module)
    inside_private = {id(m) for module in private for m in module.modules()}
    for name, module in public.items():
        if any(id(m) in inside_private for m in module.modules()):
            raise PrivacyConfigError(
                f"{type(pl_module).__name__}.public_modules declares {name!r} public, but it "
                "is or holds a module of private_modules(): a module is trained privately or learns nothing from "
                "the private data, not both."
            )
    helper_names = getattr(pl_module, "never_released", ()) if helpers_queried else ()
    helpers = [pl_module.get_submodule(name) for name in helper_names]
    return [*private, *public.values(), *helpers]


def _tensor_ids(modules: Iterable[nn.Module]) -> set[int]:
    return {id(t) for module in modules for t in (*module.parameters(), *module.buffers())}


def _digest(tensor: Tensor) -> str:
    """The tensor's bytes, hashed: exact (every bit counts) and read only during the watched steps."""
    data = tensor.detach().contiguous().cpu().view(-1).view(torch.uint8)
    return hashlib.blake2b(data.numpy().tobytes(), digest_size=16).hexdigest()
