"""Per-example gradient engines: what clipping needs from a backward pass.

Every engine captures, during an ordinary backward pass, enough to give for each example
i of the batch the norm of its gradient contribution g_i (over all private parameters
jointly) and the weighted sum Σ_i w_i g_i. Clipping is then ``w_i = min(1, C/‖g_i‖)``.

- ``ghost``: book-keeping ghost clipping (Bu et al., 2023), implemented here for Linear,
  Conv2d and the layers of ``zoo.privacy.layers`` (masked Linear, row-wise parameters).
  One backward pass; Linear layers never materialise per-example gradients
  (‖g_i‖ = ‖a_i‖·‖δ_i‖), convolutions pick the cheaper of materialising or Gram matrices.
- ``hooks``: Opacus' GradSampleModule grad samplers, materialising ``p.grad_sample``.
- ``functorch``: Opacus with ``force_functorch=True`` (vmap over torch.func.grad).
- ``auto``: ``ghost`` when it supports every parametrised layer, else ``hooks``.

With ``rows_per_example = m`` every example spans m consecutive rows of the batch (noise
multiplicity): an example's gradient is the sum over its rows, so the engines regroup rows
before taking norms (for Linear layers the m rows become a longer sequence, which the ghost
norm already sums over exactly).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import torch
import torch.nn.functional as F
from opacus import GradSampleModule
from torch import Tensor, nn
from torch.nn.grad import conv2d_weight

from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.layers import MaskedLinear, RowwiseParameters
from zoo.privacy.precision import at_least_float32

MODES = ("auto", "ghost", "hooks", "functorch")


class PerExampleGradients(Protocol):
    mode: str
    params: list[nn.Parameter]

    def batch_size(self) -> int | None:
        """Rows in the captured backward pass, or None when nothing was captured."""

    def squared_norms(self) -> Tensor:
        """‖g_i‖² over all private parameters, shape (batch,)."""

    def weighted_sum(self, weights: Tensor) -> list[Tensor]:
        """Σ_i weights_i · g_i for each parameter in ``params``."""

    def clear(self) -> None: ...

    def close(self) -> None: ...


def create_engine(modules: Sequence[nn.Module], mode: str = "auto", rows_per_example: int = 1) -> PerExampleGradients:
    if mode not in MODES:
        raise PrivacyConfigError(f"per_example_mode must be one of {MODES}, got {mode!r}")
    if mode == "auto":
        mode = "ghost" if not GhostClipping.unsupported_layers(modules) else "hooks"
    if mode == "ghost":
        return GhostClipping(modules, rows_per_example)
    return OpacusGradSample(modules, force_functorch=mode == "functorch", rows_per_example=rows_per_example)


def _examples(rows: int, rows_per_example: int) -> int:
    if rows % rows_per_example:
        raise PrivacyConfigError(
            f"a private batch of {rows} rows is not a whole number of examples of rows_per_example = "
            f"{rows_per_example} consecutive rows each"
        )
    return rows // rows_per_example


def _grouped(x: Tensor, rows_per_example: int) -> Tensor:
    """(B·m, ...) → (B, m, ...): the rows of each example side by side."""
    return x.reshape(_examples(x.shape[0], rows_per_example), rows_per_example, *x.shape[1:])


def _as_sequence(x: Tensor) -> Tensor:
    """(B, ..., features) → (B, T, features), also for B = 0."""
    return x.reshape(x.shape[0], math.prod(x.shape[1:-1]), x.shape[-1])


def _trainable(module: nn.Module) -> list[nn.Parameter]:
    return [p for p in module.parameters(recurse=False) if p.requires_grad]


class GhostClipping:
    """Book-keeping ghost clipping for Linear and Conv2d layers (see module docstring)."""

    mode = "ghost"

    def __init__(self, modules: Sequence[nn.Module], rows_per_example: int = 1) -> None:
        self.rows_per_example = rows_per_example
        unsupported = self.unsupported_layers(modules)
        if unsupported:
            raise PrivacyConfigError(
                f"per_example_mode='ghost' supports Linear, Conv2d (groups=1, numeric padding, zero "
                f"padding mode) and the layers of zoo.privacy.layers only; found {sorted(unsupported)}. "
                "Use per_example_mode='hooks' or 'auto'."
            )
        layers = [m for module in modules for m in module.modules() if list(m.parameters(recurse=False))]
        self.layers = [m for m in layers if not isinstance(m, RowwiseParameters)]
        self.rowwise_layers = [m for m in layers if isinstance(m, RowwiseParameters)]
        self.params = [p for layer in layers for p in _trainable(layer)]
        self._activations: dict[nn.Module, list[Tensor]] = {layer: [] for layer in self.layers}
        self._backprops: dict[nn.Module, list[Tensor]] = {layer: [] for layer in self.layers}
        self._row_grads: dict[nn.Parameter, list[Tensor]] = {p: [] for m in self.rowwise_layers for p in _trainable(m)}
        self._per_example_weight_grads: dict[nn.Module, Tensor] = {}
        self._handles = [layer.register_forward_hook(self._capture) for layer in self.layers]
        for layer in self.rowwise_layers:
            layer.row_capture = self._capture_rows

    @staticmethod
    def unsupported_layers(modules: Sequence[nn.Module]) -> set[str]:
        """Parametrised layers with no rule (``GHOST_RULES``, by exact type: a subclass may change the
        gradient) or whose rule does not take their settings; row-wise layers capture their own rows."""
        unsupported = set()
        for module in modules:
            for layer in module.modules():
                if not list(layer.parameters(recurse=False)) or isinstance(layer, RowwiseParameters):
                    continue
                rule = GHOST_RULES.get(type(layer))
                if rule is None or not rule.supports(layer):
                    unsupported.add(type(layer).__name__)
        return unsupported

    def _capture(self, layer: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        if not (torch.is_grad_enabled() and layer.training and _trainable(layer)):
            return
        self._activations[layer].append(inputs[0].detach())
        output.register_hook(lambda grad: self._backprops[layer].append(grad.detach()))

    def _capture_rows(self, layer: RowwiseParameters, parameter: nn.Parameter, expanded: Tensor) -> None:
        expanded.register_hook(lambda grad: self._row_grads[parameter].append(grad.detach()))

    def _rows(self) -> list[tuple[nn.Parameter, Tensor]]:
        """Per-example gradients of row-wise parameters, shape (B, *parameter.shape)."""
        rows = []
        for parameter, grads in self._row_grads.items():
            if len(grads) > 1:
                raise PrivacyConfigError(
                    "a row-wise parameter was read several times in one private backward pass; "
                    "read it once per forward (one per_row call)."
                )
            if grads:
                rows.append((parameter, _grouped(at_least_float32(grads[0]), self.rows_per_example).sum(1)))
        return rows

    def _pairs(self) -> list[tuple[nn.Module, Tensor, Tensor]]:
        pairs = []
        for layer in self.layers:
            acts, grads = self._activations[layer], self._backprops[layer]
            if not grads:
                continue
            if len(acts) != 1 or len(grads) != 1:
                raise PrivacyConfigError(
                    f"{type(layer).__name__} layer was used {len(acts)} times in one private backward pass; "
                    "ghost clipping needs one use per step. Use per_example_mode='hooks'."
                )
            pairs.append((layer, at_least_float32(acts[0]), at_least_float32(grads[0])))  # autocast may capture bf16
        return pairs

    def batch_size(self) -> int | None:
        pairs, rows = self._pairs(), self._rows()
        if pairs:
            return _examples(pairs[0][1].shape[0], self.rows_per_example)
        return rows[0][1].shape[0] if rows else None

    def _sequence(self, x: Tensor) -> Tensor:
        """(B·m, ..., features) → (B, m·T, features): an example's rows as one longer sequence."""
        examples, rows, positions, features = _grouped(_as_sequence(x), self.rows_per_example).shape
        return x.reshape(examples, rows * positions, features)

    def squared_norms(self) -> Tensor:
        terms = [grads.flatten(1).square().sum(1) for _, grads in self._rows()]
        for layer, a, g in self._pairs():
            terms.append(GHOST_RULES[type(layer)].norms(self, layer, a, g))
        return torch.stack(terms).sum(0) if terms else torch.zeros(0)

    def weighted_sum(self, weights: Tensor) -> list[Tensor]:
        sums: dict[Tensor, Tensor] = {p: torch.einsum("b,b...->...", weights, g) for p, g in self._rows()}
        for layer, a, g in self._pairs():
            sums.update(GHOST_RULES[type(layer)].sums(self, layer, a, g, weights))
        return [sums.get(p, torch.zeros_like(p)) for p in self.params]

    def _linear_sums(self, layer: nn.Linear, a: Tensor, g: Tensor, weights: Tensor) -> dict[Tensor, Tensor]:
        a, g = self._sequence(a), self._sequence(g)
        sums = {}
        if layer.weight.requires_grad:
            sums[layer.weight] = torch.einsum("b,bto,bti->oi", weights, g, a)
            if isinstance(layer, MaskedLinear):
                sums[layer.weight] = sums[layer.weight] * layer.mask
        if layer.bias is not None and layer.bias.requires_grad:
            sums[layer.bias] = torch.einsum("b,bto->o", weights, g)
        return sums

    def _conv_sums(self, layer: nn.Conv2d, a: Tensor, g: Tensor, weights: Tensor) -> dict[Tensor, Tensor]:
        sums = {}
        if layer.weight.requires_grad:
            cached = self._per_example_weight_grads.get(layer)
            if cached is not None:
                weight_sum = torch.einsum("b,bok->ok", weights, cached).reshape(layer.weight.shape)
            else:
                row_weights = weights.repeat_interleave(self.rows_per_example)
                weighted_g = g * row_weights.view(-1, 1, 1, 1)
                weight_sum = conv2d_weight(
                    a, layer.weight.shape, weighted_g, layer.stride, layer.padding, layer.dilation
                )
            sums[layer.weight] = weight_sum
        if layer.bias is not None and layer.bias.requires_grad:
            sums[layer.bias] = torch.einsum("b,bol->o", weights, self._conv_positions(g))
        return sums

    def _conv_positions(self, x: Tensor) -> Tensor:
        """(B·m, C, H, W) → (B, C, m·H·W): an example's rows as more positions."""
        grouped = _grouped(x.flatten(2), self.rows_per_example)  # (B, m, C, L)
        examples, rows, channels, positions = grouped.shape
        return grouped.transpose(1, 2).reshape(examples, channels, rows * positions)

    def _linear_norms(self, layer: nn.Linear, a: Tensor, g: Tensor) -> Tensor:
        a, g = self._sequence(a), self._sequence(g)
        norms = torch.zeros(a.shape[0], device=a.device, dtype=a.dtype)
        if layer.weight.requires_grad:
            if isinstance(layer, MaskedLinear):  # per-example weight gradient (δ aᵀ) ⊙ M
                norms = norms + self._masked_weight_norms(layer.mask.to(a.dtype), a, g)
            elif a.shape[1] == 1:
                norms = norms + a.square().sum((1, 2)) * g.square().sum((1, 2))
            elif a.shape[1] ** 2 <= a.shape[2] * g.shape[2]:
                norms = norms + (torch.bmm(a, a.transpose(1, 2)) * torch.bmm(g, g.transpose(1, 2))).sum((1, 2))
            else:
                norms = norms + torch.einsum("bto,bti->boi", g, a).square().sum((1, 2))
        if layer.bias is not None and layer.bias.requires_grad:
            norms = norms + g.sum(1).square().sum(1)
        return norms

    @staticmethod
    def _masked_weight_norms(mask: Tensor, a: Tensor, g: Tensor) -> Tensor:
        if a.shape[1] == 1:  # Σ_oi δ_o² a_i² M_oi, never materialised
            return (g[:, 0].square() * (a[:, 0].square() @ mask.T)).sum(1)
        return (torch.einsum("bto,bti->boi", g, a) * mask).square().sum((1, 2))

    def _conv_norms(self, layer: nn.Conv2d, a: Tensor, g: Tensor) -> Tensor:
        norms = torch.zeros(a.shape[0] // self.rows_per_example, device=a.device, dtype=a.dtype)
        if layer.weight.requires_grad:
            positions = g.shape[2] * g.shape[3] * self.rows_per_example
            if layer.weight.numel() <= positions**2:
                per_row = self._per_example_conv_weight_grads(layer, a, g)
                per_example = _grouped(per_row, self.rows_per_example).sum(1)
                self._per_example_weight_grads[layer] = per_example
                norms = norms + per_example.square().sum((1, 2))
            else:
                unfolded, flat_g = self._conv_unfolded(layer, a), self._conv_positions(g)
                gram_a = torch.bmm(unfolded.transpose(1, 2), unfolded)
                gram_g = torch.bmm(flat_g.transpose(1, 2), flat_g)
                norms = norms + (gram_a * gram_g).sum((1, 2))
        if layer.bias is not None and layer.bias.requires_grad:
            norms = norms + self._conv_positions(g).sum(2).square().sum(1)
        return norms

    def _conv_unfolded(self, layer: nn.Conv2d, a: Tensor) -> Tensor:
        """Unfolded inputs (B, C·kh·kw, m·L), an example's rows side by side as more positions."""
        unfolded = _grouped(self._unfold(layer, a), self.rows_per_example)  # (B, m, CK, L)
        examples, rows, patch, positions = unfolded.shape
        return unfolded.transpose(1, 2).reshape(examples, patch, rows * positions)

    @classmethod
    def _per_example_conv_weight_grads(cls, layer: nn.Conv2d, a: Tensor, g: Tensor) -> Tensor:
        """Per-example weight gradients, shape (B, out, in·kh·kw).

        For stride 1 a grouped convolution of the inputs with the output gradients (one
        group per example) is much cheaper than unfolding large feature maps.
        """
        if layer.stride != (1, 1):
            return torch.bmm(g.flatten(2), cls._unfold(layer, a).transpose(1, 2))
        batch, in_channels = a.shape[:2]
        kernel_h, kernel_w = layer.kernel_size
        grads = F.conv2d(
            a.transpose(0, 1),
            g.reshape(-1, 1, *g.shape[2:]),
            groups=batch,
            stride=layer.dilation,
            padding=layer.padding,
        )[..., :kernel_h, :kernel_w]
        grads = grads.reshape(in_channels, batch, -1, kernel_h, kernel_w).permute(1, 2, 0, 3, 4)
        return grads.reshape(batch, grads.shape[1], -1)

    @staticmethod
    def _unfold(layer: nn.Conv2d, a: Tensor) -> Tensor:
        padding = layer.padding
        assert not isinstance(padding, str), "ghost clipping pads convolutions by numbers (_plain_convolution)"
        return F.unfold(a, layer.kernel_size, layer.dilation, padding, layer.stride)

    def clear(self) -> None:
        for layer in self.layers:
            self._activations[layer].clear()
            self._backprops[layer].clear()
        for grads in self._row_grads.values():
            grads.clear()
        self._per_example_weight_grads.clear()

    def close(self) -> None:
        self.clear()
        for handle in self._handles:
            handle.remove()
        for layer in self.rowwise_layers:
            layer.row_capture = None


Layer = TypeVar("Layer", bound=nn.Module)


@dataclass(frozen=True)
class GhostRule(Generic[Layer]):
    """Ghost clipping for one layer type, as Opacus registers a grad sampler per type: the per-example
    squared gradient norms and the weighted gradient sums from a layer's captured inputs ``a`` and
    output gradients ``g``, and which settings of the layer the rule is exact for."""

    norms: Callable[[GhostClipping, Layer, Tensor, Tensor], Tensor]
    sums: Callable[[GhostClipping, Layer, Tensor, Tensor, Tensor], dict[Tensor, Tensor]]
    supports: Callable[[Layer], bool] = lambda layer: True


def _plain_convolution(layer: nn.Conv2d) -> bool:
    return layer.groups == 1 and not isinstance(layer.padding, str) and layer.padding_mode == "zeros"


_LINEAR = GhostRule(GhostClipping._linear_norms, GhostClipping._linear_sums)
#: the exact rule of each layer type ghost clipping supports (row-wise parameters capture their rows instead)
GHOST_RULES: dict[type[nn.Module], GhostRule[Any]] = {
    nn.Linear: _LINEAR,
    MaskedLinear: _LINEAR,  # the same rule: its per-example weight gradient is (δ aᵀ) ⊙ M
    nn.Conv2d: GhostRule(GhostClipping._conv_norms, GhostClipping._conv_sums, _plain_convolution),
}


class OpacusGradSample:
    """Opacus grad samplers (hooks, or torch.func with ``force_functorch``)."""

    def __init__(self, modules: Sequence[nn.Module], force_functorch: bool, rows_per_example: int = 1) -> None:
        self.mode = "functorch" if force_functorch else "hooks"
        self.rows_per_example = rows_per_example
        # loss_reduction="sum": the callback applies the batch scaling itself, uniformly for all engines
        try:
            self._wrappers = [
                GradSampleModule(m, loss_reduction="sum", force_functorch=force_functorch) for m in modules
            ]
        except NotImplementedError as error:
            raise PrivacyConfigError(
                f"Opacus cannot compute per-example gradients for this model ({error}). "
                "per_example_mode='auto' uses ghost clipping where it supports every layer."
            ) from None
        self.params = [p for m in modules for p in m.parameters() if p.requires_grad]

    def _samples(self) -> list[Tensor | None]:
        samples = []
        for p in self.params:
            sample = getattr(p, "grad_sample", None)
            if isinstance(sample, list):
                raise PrivacyConfigError(
                    "a private layer was used in several backward passes before one private step; "
                    "run one backward per micro-batch."
                )
            if sample is not None:  # autocast may have computed it in bf16
                sample = _grouped(at_least_float32(sample), self.rows_per_example).sum(1)
            samples.append(sample)
        return samples

    def batch_size(self) -> int | None:
        present = [s for s in self._samples() if s is not None]
        return present[0].shape[0] if present else None

    def squared_norms(self) -> Tensor:
        present = [s for s in self._samples() if s is not None]
        return sum(s.flatten(1).square().sum(1) for s in present)  # type: ignore[return-value]

    def weighted_sum(self, weights: Tensor) -> list[Tensor]:
        return [
            torch.zeros_like(p) if s is None else torch.einsum("b,b...->...", weights, s)
            for p, s in zip(self.params, self._samples(), strict=True)
        ]

    def clear(self) -> None:
        for p in self.params:
            p.grad_sample = None  # type: ignore[attr-defined]  # Opacus' attribute

    def close(self) -> None:
        self.clear()
        for wrapper in self._wrappers:
            wrapper._close()
