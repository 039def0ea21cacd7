"""A part of a mean-embedding release shared by all classes, beside the per-class parts (issue 65).

A class-conditional release noises E = Σ_i φ(x_i) ⊗ e_{y_i}: class c's mean carries noise σ/n_c per coordinate, so a
few hundred images per class leave the class means noisy even where the folder as a whole is large. With the shared
part of weight s ∈ (0, 1), every record's term is split between its class column, scaled by c = √(1 − s²), and one
more column that every record shares, scaled by s:

    E_s = Σ_i [c · φ(x_i) ⊗ e_{y_i},  s · φ(x_i)]   (features × (classes + 1))

Theorem (add/remove-one neighbouring datasets). Where every ‖φ(x)‖ ≤ 1, a record's term has norm
(c² + s²)^½ · ‖φ(x)‖ = ‖φ(x)‖ ≤ 1, so adding or removing one record moves E_s by at most 1: E_s + N(0, σ²I) is the
same Gaussian mechanism, with the same σ and sensitivity 1, as the class-conditional release it replaces. The
weight s is a public setting, chosen before the release from no record (it is on the model's card).

Decoded, the class columns estimate the joint mean embedding with noise σ/(c·n) per coordinate, and the shared
column the mean embedding of all n images, Σ_c (n_c/n)·mean_c, with noise σ/(s·n): noised over all n images, not
n_c. The generator is fitted to the release as released, ‖E_s/n − [c·F, s·Σ_c F_c]‖² for its own joint embedding F
(``stacked``): each column weighted by the inverse of its noise's scale, so at s = 0 it is the class-conditional fit.
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.errors import UserError
from zoo.release_shapes import class_weight


def check_shared_weight(weight: float) -> None:
    """Refuse a shared weight outside [0, 1): at 1 no record would reach its class column."""
    if not 0 <= weight < 1:
        raise UserError(f"shared_weight is the shared part's share of each record's term, in [0, 1), got {weight}")


def with_shared_part(total: Tensor, weight: float) -> Tensor:
    """The statistic to release, E_s (see the module), from the class-conditional sum ``total`` (features ×
    classes): the class columns scaled by c, and the shared column Σ_c total_c scaled by s."""
    return torch.cat([class_weight(weight) * total, weight * total.sum(dim=1, keepdim=True)], dim=1)


def split_release(noisy: Tensor, weight: float) -> tuple[Tensor, Tensor]:
    """The class columns and the shared column of a released E_s, each divided by its weight: the noisy sums of
    φ ⊗ e_y and of φ."""
    return noisy[:, :-1] / class_weight(weight), noisy[:, -1:] / weight


def stacked(joint: Tensor, shared: Tensor, weight: float) -> Tensor:
    """[c · joint, s · shared]: a joint mean embedding and its shared mean as the release holds them, so that
    the distance between two stacked embeddings weighs each column by the inverse of its noise's scale."""
    return torch.cat([class_weight(weight) * joint, weight * shared], dim=1)
