"""Under DP-SGD, only the private modules' parameters may learn from a private batch.

DP-SGD's theorem (``zoo.privacy.mechanisms.dp_sgd``) covers what the clipped, noised step writes into
the parameters of ``private_modules()``, and nothing else. Whatever else the model keeps and changes while
it reads a private batch is outside it and is saved with the weights: a BatchNorm outside the private
modules keeps a running mean of private inputs in its buffers, a buffer of a private module that keeps a
running statistic of its inputs is no better (the theorem clips and noises gradients, not buffers), and a
second optimizer on another module takes un-noised steps from the private batches. So, in a DP-SGD stage,

- every parameter an optimizer holds belongs to a private module (checked once, before any step);
- no buffer of a private module and no parameter or buffer of any other module changes during the private
  steps (nor between them).

Each check compares digests of the watched tensors at the end of a watched step with those at the end of the
last watched one (at the start of the first step, for the first), so a change at any step shows at the next
watched step: a layer first used in training mode or an optimizer created inside a step late in training is
refused as surely as one from the first step. The first ``FIRST_STEPS_WATCHED`` steps are all watched; each
later one is watched with the probability that keeps the digests within ``GUARD_SHARE`` of the training time.
That is every step for the shipped methods, whose watched state is small, and a random subset where hashing a
large frozen model outside the private modules would cost more than the step itself. The draws come from the
OS (:class:`random.SystemRandom`), after the step: no seed of the run and nothing inside a step tells which steps
are watched. Only a change after a stage's last watched step escapes, and none does when every step is.

Two kinds of module are exempt: the modules a method declares public with a reason (``public_modules``,
:func:`~zoo.privacy.barriers.declared_public_modules`), which learn only from what the private steps
release (post-processing); and, when the steps query never-released helpers (``PrivateHelpers``), those
helpers, whose theorem accounts for what they learn without DP (``zoo.privacy.mechanisms.private_helpers``).
A frozen public feature extractor (requires_grad False, in no optimizer, BatchNorm in eval mode)
changes nothing and needs no declaration. A statistic that a private module needs (a standardisation, an
ActNorm start) is released once before the private steps, by a mechanism of its own in a Release stage
(``zoo.stages``), as DP-NF's are.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator, Sequence
from random import SystemRandom
from typing import TypeVar

import torch
from torch import Tensor, nn

from zoo.privacy.barriers import declared_private_modules, declared_public_modules
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.mechanisms import HelperQueryDPSGD, PerExampleDPSGD, TrainingMechanism

#: the first private steps, every one of them watched: a declaration mistake shows from the first step
FIRST_STEPS_WATCHED = 3

#: the share of the training time the later steps' digests may take. They read every watched tensor: little in
#: the shipped methods (DP-LFlow's recipe: 0.5 ms against a 1.5 s step on a CPU), so every step is watched; but
#: a 100 MB frozen model outside the private modules takes 120 ms against a 90 ms step, which would more than
#: double the training time
GUARD_SHARE = 0.02

#: the kind of a private module's buffer among the watched tensors (the others: "parameter", "buffer")
PRIVATE_BUFFER = "private buffer"

FIX = (
    "Return its module from private_modules(), freeze it (requires_grad False, in no optimizer, eval mode), or, "
    "if it learns nothing from the private data beyond what the private steps release, declare it in "
    "public_modules with the reason."
)

PRIVATE_BUFFER_FIX = (
    "Make it a parameter that DP-SGD trains, keep it fixed (computed from public data, or released once before "
    "the private steps by a mechanism of its own in a Release stage, as DP-NF's standardisation), or drop it "
    "(a BatchNorm becomes a GroupNorm or LayerNorm)."
)

Key = tuple[str, str]
T = TypeVar("T")


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
    """What may change during the private steps of ``pl_module``: the parameters of its private modules, and
    everything in the modules it declares public and, when ``helpers_queried``, its never-released helpers."""

    def __init__(self, pl_module: nn.Module, helpers_queried: bool) -> None:
        self.module = pl_module
        self.private = list(declared_private_modules(pl_module))
        self.exempt = _exempt_modules(pl_module, self.private, helpers_queried)
        self._exempt_ids = _pinned(m for module in self.exempt for m in module.modules())
        self._private_ids = _pinned(m for module in self.private for m in module.modules())
        # an exempt module's tensors and a private parameter, also where another module shares them
        self._unwatched = _pinned(
            [
                *(t for module in self.exempt for t in (*module.parameters(), *module.buffers())),
                *(p for module in self.private for p in module.parameters()),
            ]
        )
        self.steps = 0
        self.watched_steps = 0
        self._last: dict[Key, str] | None = None  # the digests at the end of the last watched step
        self._last_watched = 0
        self._clock = 0.0
        self._stepping = self._guarding = 0.0  # seconds spent in the steps and in the guard's digests
        self._draws = SystemRandom()

    def check_optimizers(self, optimizers: Sequence[torch.optim.Optimizer]) -> None:
        """Refuse an optimizer holding a parameter outside the private and exempt modules, trainable now or not
        (a step may turn requires_grad on): it would step it from the private batches without clipping or noise."""
        allowed = _tensor_ids([*self.private, *self.exempt])
        names = {id(p): name for name, p in self.module.named_parameters()}
        for index, optimizer in enumerate(optimizers):
            held = (p for group in optimizer.param_groups for p in group["params"])
            outside = [names.get(id(p), f"<unnamed {tuple(p.shape)}>") for p in held if id(p) not in allowed]
            if outside:
                raise PrivacyConfigError(
                    f"optimizer {index} ({type(optimizer).__name__}) steps parameters outside private_modules(): "
                    f"{outside[:8]}{' ...' if len(outside) > 8 else ''}. It would step them from the private "
                    f"batches without clipping or noise. {FIX}"
                )

    def before_step(self) -> None:
        """Take the digests the first private step is compared with."""
        if self._last is None:
            self._last = self._timed_fingerprints()
            self._clock = time.perf_counter()

    def after_step(self) -> None:
        """Refuse a watched parameter or buffer that changed since the end of the last watched step."""
        if self._last is None:
            return
        self.steps += 1
        self._stepping += time.perf_counter() - self._clock
        if self._watches_this_step():
            self._compare(self._timed_fingerprints())
        self._clock = time.perf_counter()

    def _watches_this_step(self) -> bool:
        """Every one of the first steps, then each step with the probability that keeps the digests within
        ``GUARD_SHARE`` of the training time (every step for the shipped methods), drawn after the step from the OS's
        randomness, which no seed of the run predicts."""
        if self.steps <= FIRST_STEPS_WATCHED or self._guarding == 0:
            return True
        per_step = self._stepping / self.steps
        per_watch = self._guarding / (self.watched_steps + 1)  # the digests at the first step's start included
        return self._draws.random() < GUARD_SHARE * per_step / per_watch

    def _compare(self, after: dict[Key, str]) -> None:
        """Refuse a change between the last watched step's digests and ``after``, the next comparison's start."""
        before, first = self._last, self._last_watched + 1
        assert before is not None
        self._last, self._last_watched = after, self.steps
        self.watched_steps += 1
        keys = [*after, *(key for key in before if key not in after)]  # the module's order, parameters first
        changed = [key for key in keys if before.get(key) != after.get(key)]
        if changed:
            steps = f"private step {self.steps}" if first == self.steps else f"private steps {first} to {self.steps}"
            raise PrivacyConfigError(self._refusal(changed, steps))

    def _refusal(self, changed: list[Key], steps: str) -> str:
        """Why the first changed tensor is refused, and the others that changed with it."""
        kind, name = changed[0]
        owner = name.rpartition(".")[0] or f"{type(self.module).__name__} itself"
        others = f" (also changed: {[other for _, other in changed[1:9]]})" if len(changed) > 1 else ""
        if kind == PRIVATE_BUFFER:
            return (
                f"the buffer {name} of the private module {owner} changed during {steps}: DP-SGD clips and noises "
                "the gradients of the private modules' parameters, not their buffers, so the model would keep a "
                f"trace of the private batches that DP-SGD never clipped or noised{others}. {PRIVATE_BUFFER_FIX}"
            )
        return (
            f"the {kind} {name} changed during {steps} but {owner} is not among private_modules(): "
            f"the model would keep a trace of the private batches that DP-SGD never clipped or noised{others}. "
            f"{FIX}"
        )

    def _timed_fingerprints(self) -> dict[Key, str]:
        """:meth:`_fingerprints`, its time counted for the watch probability."""
        start = time.perf_counter()
        digests = self._fingerprints()
        self._guarding += time.perf_counter() - start
        return digests

    def _fingerprints(self) -> dict[Key, str]:
        """A digest of each watched parameter and buffer, by kind and name."""
        return {key: _digest(tensor) for key, tensor in self._watched()}

    def _watched(self) -> Iterator[tuple[Key, Tensor]]:
        """The parameters outside the private and exempt modules and the buffers outside the exempt ones (a
        private module's buffers included), by kind and name, parameters first, each tensor once. Read afresh
        each time, so a tensor or module that a step replaces or adds is compared by name."""
        modules = list(self._modules_outside_exempt())
        seen: set[int] = set()
        for prefix, module in modules:
            if id(module) not in self._private_ids:
                yield from self._new("parameter", prefix, module.named_parameters(recurse=False), seen)
        for prefix, module in modules:
            kind = PRIVATE_BUFFER if id(module) in self._private_ids else "buffer"
            yield from self._new(kind, prefix, module.named_buffers(recurse=False), seen)

    def _modules_outside_exempt(self) -> Iterator[tuple[str, nn.Module]]:
        """Each module outside the exempt ones once, by name, in the module's order. An exempt module's
        submodules are not visited: a method's helpers can hold most of its tensors (DP²-VAE's 1000 encoders),
        which reading on every step would cost more than hashing the rest."""
        visited: set[int] = set()
        stack = [("", self.module)]
        while stack:
            prefix, module = stack.pop()
            if id(module) in self._exempt_ids or id(module) in visited:
                continue
            visited.add(id(module))
            yield prefix, module
            children = [(f"{prefix}.{name}" if prefix else name, child) for name, child in module.named_children()]
            stack.extend(reversed(children))

    def _new(
        self, kind: str, prefix: str, named: Iterable[tuple[str, Tensor]], seen: set[int]
    ) -> Iterator[tuple[Key, Tensor]]:
        """The tensors of ``named`` neither unwatched nor ``seen`` yet (which they join), by kind and full name."""
        for name, tensor in named:
            if id(tensor) not in self._unwatched and id(tensor) not in seen:
                seen.add(id(tensor))
                yield (kind, f"{prefix}.{name}" if prefix else name), tensor


def _exempt_modules(pl_module: nn.Module, private: Sequence[nn.Module], helpers_queried: bool) -> list[nn.Module]:
    """The declared public modules and, when the steps query them, the never-released helpers; a module
    declared both private and public is refused."""
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
    return [*public.values(), *helpers]


def _pinned(objects: Iterable[T]) -> dict[int, T]:
    """The objects by id, held so that no other object takes an id of theirs while the guard lives."""
    return {id(o): o for o in objects}


def _tensor_ids(modules: Iterable[nn.Module]) -> set[int]:
    """The ids of the modules' parameters and buffers."""
    return {id(t) for module in modules for t in (*module.parameters(), *module.buffers())}


def _digest(tensor: Tensor) -> str:
    """The tensor's bytes, hashed: exact (every bit counts)."""
    data = tensor.detach().contiguous().cpu().view(-1).view(torch.uint8)
    return hashlib.blake2b(data.numpy().tobytes(), digest_size=16).hexdigest()
