"""Pictures of tabular models, drawn with PIL only: per-feature histograms (real against
synthetic) and 2-D densities, for cards and ``samples.png``."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from PIL import Image, ImageDraw
from torch import Tensor

PANEL = 160
BINS = 40
REAL_COLOUR = (70, 110, 190)
SYNTHETIC_COLOUR = (230, 120, 40)


def feature_histograms(synthetic: Tensor, real: Tensor | None = None, columns: int = 5) -> Image.Image:
    """One panel per feature: the synthetic histogram (orange outline) over the real one (blue bars).
    The bins span the 0.5–99.5% range of the real rows (of the synthetic ones without real rows)."""
    reference = synthetic if real is None else real
    features = synthetic.shape[1]
    rows = math.ceil(features / columns)
    columns = min(columns, features)
    image = Image.new("RGB", (columns * PANEL, rows * PANEL + 18), "white")
    draw = ImageDraw.Draw(image)
    lows, highs = (bounds.tolist() for bounds in _central_range(reference))
    for j, (low, high) in enumerate(zip(lows, highs, strict=True)):
        left, top = (j % columns) * PANEL, (j // columns) * PANEL
        histograms = [(_histogram(synthetic[:, j], low, high), SYNTHETIC_COLOUR)]
        if real is not None:
            histograms.insert(0, (_histogram(real[:, j], low, high), REAL_COLOUR))
        peak = max(float(h.max()) for h, _ in histograms) or 1.0
        for index, (histogram, colour) in enumerate(histograms):
            _draw_histogram(
                draw, histogram / peak, left + 6, top + 18, PANEL - 12, PANEL - 30, colour, filled=index == 0
            )
        draw.text((left + 6, top + 4), f"feature {j}", fill="black")
    legend = "blue bars: real rows, orange line: synthetic rows" if real is not None else "synthetic rows"
    draw.text((6, rows * PANEL + 3), legend, fill="black")
    return image


def _central_range(rows: Tensor) -> Tensor:
    """Per-feature 0.5th and 99.5th percentiles, shape (2, features): what the pictures span."""
    return torch.quantile(rows.double(), torch.tensor([0.005, 0.995], dtype=torch.float64), dim=0)


def _histogram(values: Tensor, low: float, high: float) -> Tensor:
    values = values.double()
    inside = values[(values >= low) & (values <= high)]
    return torch.histc(inside, BINS, low, high) / max(len(values), 1)


def _draw_histogram(draw, heights, left, top, width, height, colour, filled) -> None:
    step = width / len(heights)
    bottom = top + height
    points = []
    for i, h in enumerate(heights.tolist()):
        y = bottom - h * height
        x0, x1 = left + i * step, left + (i + 1) * step
        if filled:
            draw.rectangle([x0, y, x1, bottom], fill=colour)
        points += [(x0, y), (x1, y)]
    if not filled:
        draw.line(points, fill=colour, width=2)
    draw.line([(left, bottom), (left + width, bottom)], fill="black")


def density_panel(
    log_prob: Callable[[Tensor], Tensor], bounds: tuple[float, float, float, float], size: int = 256
) -> Image.Image:
    """The density exp(log_prob) of a 2-D model on a grid over ``bounds`` = (x0, x1, y0, y1), white to dark.
    The grid is on the CPU and each chunk's log-density is brought back there: a model on a GPU may answer
    on its own device, and the picture is drawn on the CPU."""
    x0, x1, y0, y1 = bounds
    xs = torch.linspace(x0, x1, size)
    ys = torch.linspace(y1, y0, size)  # image rows run top to bottom
    grid = torch.stack(torch.meshgrid(xs, ys, indexing="xy"), -1).reshape(-1, 2)
    with torch.no_grad():
        density = torch.cat([log_prob(chunk).detach().cpu() for chunk in grid.split(8192)]).exp().reshape(size, size)
    shade = (density / density.max().clamp(min=1e-30)).clamp(0, 1)
    return _shade_image(shade)


def scatter_panel(points: Tensor, bounds: tuple[float, float, float, float], size: int = 256) -> Image.Image:
    """A 2-D histogram of ``points`` over ``bounds``, on the same shading as ``density_panel``."""
    x0, x1, y0, y1 = bounds
    cols = ((points[:, 0] - x0) / (x1 - x0) * size).long()
    rows = ((y1 - points[:, 1]) / (y1 - y0) * size).long()
    keep = (cols >= 0) & (cols < size) & (rows >= 0) & (rows < size)
    counts = torch.zeros(size * size).index_add_(0, rows[keep] * size + cols[keep], torch.ones(int(keep.sum())))
    counts = counts.reshape(size, size)
    return _shade_image((counts / counts.max().clamp(min=1)).sqrt())


def _shade_image(shade: Tensor) -> Image.Image:
    """0 → white, 1 → dark blue."""
    white, dark = torch.tensor([255.0, 255.0, 255.0]), torch.tensor([20.0, 40.0, 110.0])
    pixels = white + shade[..., None] * (dark - white)
    return Image.fromarray(pixels.round().byte().numpy(), "RGB")


def side_by_side(panels: list[tuple[str, Image.Image]]) -> Image.Image:
    """Panels in a row, each with its title above."""
    width = sum(p.width for _, p in panels) + 8 * (len(panels) + 1)
    height = max(p.height for _, p in panels) + 26
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    left = 8
    for title, panel in panels:
        image.paste(panel, (left, 22))
        draw.text((left, 5), title, fill="black")
        left += panel.width + 8
    return image


def plot_bounds(rows: Tensor, margin: float = 0.1) -> tuple[float, float, float, float]:
    """A box around the 0.5–99.5% range of 2-D ``rows`` with a margin."""
    low, high = _central_range(rows)
    pad = (high - low) * margin
    (x0, y0), (x1, y1) = (low - pad).tolist(), (high + pad).tolist()
    return x0, x1, y0, y1


def table_model_picture(model, real: Tensor | None = None, num_samples: int = 20_000, seed: int = 0) -> Image.Image:
    """What a tabular model has learnt: density, samples and (given) real rows for 2 features;
    per-feature histograms otherwise."""
    samples = model.sample(num_samples, seed=seed)
    if samples.shape[1] != 2:
        return feature_histograms(samples, real)
    bounds = plot_bounds(samples if real is None else real)
    panels = [("model density", density_panel(model.log_prob, bounds)), ("samples", scatter_panel(samples, bounds))]
    if real is not None:
        panels.append(("real rows", scatter_panel(real, bounds)))
    return side_by_side(panels)


def roc_picture(fpr: list[float], tpr: list[float], title: str, size: int = 240) -> Image.Image:
    """A ROC curve on the unit square, with the chance diagonal."""
    margin = 24
    image = Image.new("RGB", (size + 2 * margin, size + 2 * margin), "white")
    draw = ImageDraw.Draw(image)

    def point(x: float, y: float) -> tuple[float, float]:
        return margin + x * size, margin + (1 - y) * size

    draw.rectangle([point(0, 1), point(1, 0)], outline="black")
    draw.line([point(0, 0), point(1, 1)], fill=(180, 180, 180))
    draw.line([point(x, y) for x, y in zip(fpr, tpr, strict=True)], fill=SYNTHETIC_COLOUR, width=2)
    draw.text((margin, 6), title, fill="black")
    draw.text((margin, size + margin + 6), "x: false positive rate, y: true positive rate", fill="black")
    return image
