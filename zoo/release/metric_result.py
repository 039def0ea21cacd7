"""One metric's result, typed: what config.json stores under ``evaluation.details.results.<name>`` and
``zoo.evaluate`` returns. The stored dict stays the format (``to_dict`` gives it back entry for entry, in its order);
this type is how code reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zoo.errors import UserError

#: entries with a field of their own; any other entry is a side value (a number) or kept as it is (``details``)
_FIELDS = ("value", "std", "runs", "unit", "protocol")


@dataclass(frozen=True)
class MetricResult:
    """``value`` with its spread (``std``) over ``runs``, its ``unit``, the ``protocol`` it was measured under,
    named ``side_values`` measured beside it (precision/recall's recall, a real-data reference, rates) and whatever
    else the metric stores (``details``: a ROC curve, per-class scores, an attack's report)."""

    value: float
    protocol: dict[str, Any]
    std: float | None = None
    runs: tuple[float, ...] | None = None
    unit: str | None = None
    side_values: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    #: the order of the stored entries, which ``to_dict`` keeps
    order: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_dict(cls, stored: dict[str, Any]) -> MetricResult:
        """A stored result; one without a numeric value or a protocol is refused (a result says how it was measured).
        An entry of a field's name but not its type (a ``std`` of None) is kept in ``details``."""
        value, protocol = stored.get("value"), stored.get("protocol")
        if not _is_number(value) or not isinstance(protocol, dict):
            raise UserError(f"a metric result holds a numeric value and a protocol dict, got entries {list(stored)}")
        typed = {
            "std": _is_number(stored.get("std")),
            "runs": isinstance(stored.get("runs"), list),
            "unit": isinstance(stored.get("unit"), str),
        }
        rest = {k: v for k, v in stored.items() if k not in _FIELDS or (k in typed and not typed[k])}
        return cls(
            value=value,
            protocol=protocol,
            std=stored["std"] if typed["std"] else None,
            runs=tuple(stored["runs"]) if typed["runs"] else None,
            unit=stored["unit"] if typed["unit"] else None,
            side_values={k: v for k, v in rest.items() if isinstance(v, float)},
            details={k: v for k, v in rest.items() if not isinstance(v, float)},
            order=tuple(stored),
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored form: the entries of ``from_dict``'s dict, in its order (new entries after them)."""
        typed = {"value": self.value, "std": self.std, "runs": self.runs, "unit": self.unit}
        entries = {
            **{k: list(v) if k == "runs" else v for k, v in typed.items() if v is not None},
            **self.side_values,
            **self.details,
            "protocol": self.protocol,
        }
        return {**{k: entries[k] for k in self.order if k in entries}, **entries}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
