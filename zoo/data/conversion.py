"""How one image becomes the shape a model takes, by an explicit policy for what cannot be kept as it is.

``convert`` is None (images must already have the target's aspect ratio and no transparency: nothing is
stretched or dropped silently), ``"crop"`` (an image of another aspect ratio is centre-cropped to the
target's), ``"pad"`` (padded with white to it) or ``"stretch"`` (resized as it is); each composites
transparent images on white. Any size change is a bilinear resize after that.
``preprocessing_sentence`` states what a policy did to a folder (counts of its images: for the user's eyes);
``preprocessing_rule`` states the policy alone (what a card publishes: the counts are statistics of the
protected images, and the adversary who knows every image but one would read the last one's size in them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from zoo.errors import UserError

CONVERT_POLICIES = ("crop", "pad", "stretch")
WHITE = 255


@dataclass(frozen=True)
class ImageFacts:
    """What one image is, from reading it once: (height, width), grey or colour, transparent or not."""

    size: tuple[int, int]
    grey: bool
    transparent: bool


def pixels(size: tuple[int, int]) -> str:
    """A (height, width) size as people read an image's size: width × height (``1500×1200`` for a landscape)."""
    height, width = size
    return f"{width}×{height}"


def colour_mode(channels: int) -> str:
    """How images of ``channels`` channels are read: ``RGB`` or ``grey``."""
    return "RGB" if channels == 3 else "grey"


def counted(count: int, noun: str, has: bool = False) -> str:
    """``1 image`` / ``12 images``, and with ``has`` ``1 image has`` / ``12 images have``: count and words agreeing."""
    words = f"{count:,} {noun}" + ("" if count == 1 else "s")
    return words + ("" if not has else " has" if count == 1 else " have")


def check_convert(convert: str | None) -> str | None:
    if convert not in (None, *CONVERT_POLICIES):
        raise UserError(f"convert must be one of {CONVERT_POLICIES} or None, got {convert!r}")
    return convert


def has_transparency(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info


def on_white(image: Image.Image) -> Image.Image:
    """A transparent image composited on a white ground (RGB)."""
    rgba = image.convert("RGBA")
    return Image.alpha_composite(Image.new("RGBA", rgba.size, (WHITE,) * 4), rgba).convert("RGB")


def changes_aspect(size: tuple[int, int], target: tuple[int, int]) -> bool:
    """Whether resizing (height, width) ``size`` to ``target`` would stretch it."""
    return _crop_size(size, target) != size


def fitted(image: Image.Image, target: tuple[int, int], convert: str | None) -> Image.Image:
    """``image`` at (height, width) ``target``: cropped or padded to its aspect ratio first, by ``convert``."""
    size = (image.height, image.width)
    if convert == "crop" and changes_aspect(size, target):
        height, width = _crop_size(size, target)
        top, left = (image.height - height) // 2, (image.width - width) // 2
        image = image.crop((left, top, left + width, top + height))
    elif convert == "pad" and changes_aspect(size, target):
        height, width = _pad_size(size, target)
        canvas = Image.new(image.mode, (width, height), WHITE if image.mode == "L" else (WHITE,) * 3)
        canvas.paste(image, ((width - image.width) // 2, (height - image.height) // 2))
        image = canvas
    if (image.height, image.width) != target:
        image = image.resize((target[1], target[0]), Image.Resampling.BILINEAR)
    return image


def _crop_size(size: tuple[int, int], target: tuple[int, int]) -> tuple[int, int]:
    """The largest box of ``target``'s aspect ratio inside ``size`` (both (height, width))."""
    scale = max(target[0] / size[0], target[1] / size[1])
    return min(size[0], round(target[0] / scale)), min(size[1], round(target[1] / scale))


def _pad_size(size: tuple[int, int], target: tuple[int, int]) -> tuple[int, int]:
    """The smallest box of ``target``'s aspect ratio around ``size``."""
    scale = min(target[0] / size[0], target[1] / size[1])
    return max(size[0], round(target[0] / scale)), max(size[1], round(target[1] / scale))


def preprocessing_sentence(
    facts: Sequence[ImageFacts], target: tuple[int, int], channels: int, convert: str | None
) -> str:
    """What reading the images at ``target`` size and ``channels`` with policy ``convert`` does to them."""
    resized = sum(f.size != target for f in facts)
    reshaped = sum(changes_aspect(f.size, target) for f in facts)
    transparent = sum(f.transparent for f in facts)
    grey = sum(f.grey for f in facts)
    changes = []
    if resized:
        how = {
            "crop": f"centre-cropped to {_aspect(target)} first",
            "pad": f"padded with white to {_aspect(target)} first",
        }
        first = f", {reshaped:,} of them {how.get(convert or '', 'stretched')}" if reshaped else ""
        changes.append(f"{resized:,} of {counted(len(facts), 'image')} resized to {pixels(target)}{first}")
    if transparent:
        changes.append(f"{transparent:,} with transparency composited on white")
    if channels == 3 and grey:
        changes.append(f"{grey:,} grey converted to RGB")
    if channels == 1 and len(facts) - grey:
        changes.append(f"{len(facts) - grey:,} colour converted to grey")
    return (
        "; ".join(changes)
        or f"none resized: {'the image' if len(facts) == 1 else f'all {len(facts):,} images'} used as they are"
    )


#: images whose shorter side is at least this many times the read size's lose detail worth a line of the summary
DOWNSCALED_BY = 1.5


def downscale_sentence(facts: Sequence[ImageFacts], target: tuple[int, int], larger_size: int | None) -> str | None:
    """For images read well below their own size: how much of their detail is lost, and ``larger_size`` (the side a
    generator of any size could read them at instead), or None when no image loses much."""
    factors = sorted(min(f.size) / min(target) for f in facts)
    larger = [factor for factor in factors if factor >= DOWNSCALED_BY]
    if not larger:
        return None
    median = larger[len(larger) // 2]
    sentence = (
        f"{counted(len(larger), 'image')} of {len(facts):,} {'are' if len(larger) > 1 else 'is'} at least "
        f"{DOWNSCALED_BY:g}× larger than {pixels(target)} (typically {median:.1f}× each side): read at "
        f"{pixels(target)}, detail finer than {median:.1f} pixels of the original is lost"
    )
    if larger_size is None:
        return sentence
    scale = larger_size / min(target)
    kept = f"{scale:g}× more of each side" if scale <= median else "all of it (the images are smaller than that)"
    return f"{sentence}; --image-size {larger_size} keeps {kept}, at about {scale**2:g}× the time per step"


def preprocessing_rule(target: tuple[int, int], channels: int, convert: str | None) -> str:
    """How every image is read at ``target`` size and ``channels`` under policy ``convert``, whichever images a
    folder holds: the rule, never what it did to how many."""
    shape = _aspect(target)
    aspect = {
        "crop": f"centre-cropped to {shape} first where its aspect ratio differs",
        "pad": f"padded with white to {shape} first where its aspect ratio differs",
        "stretch": "stretched where its aspect ratio differs",
    }.get(convert or "", "another aspect ratio refused")
    transparency = "transparency composited on white" if convert else "transparent images refused"
    colours = "grey images converted to RGB" if channels == 3 else "colour images converted to grey"
    return (
        f"every image read as {colour_mode(channels)} {pixels(target)}: one of another size resized bilinearly "
        f"({aspect}); {transparency}; {colours}"
    )


def _aspect(target: tuple[int, int]) -> str:
    height, width = target
    return "a square" if height == width else f"the {width}:{height} aspect ratio"
