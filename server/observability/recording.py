"""What every lean span of one tracer provider shares (`Recorder`): its sampler, id generator,
resource, span processors and the SDK's limits, and the cleaning of attribute values.

Invariant: attribute values are the API's types (str, bool, int, float, sequences of one of
them); anything else is dropped, as the SDK drops it; the SDK's count and length limits apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import Sampler
from opentelemetry.util.types import Attributes, AttributeValue

__all__ = ["Recorder"]

_SIMPLE = (str, bool, int, float)


class Recorder:
    """What every lean span of one provider shares: where ended spans go, and the limits."""

    def __init__(
        self,
        sampler: Sampler,
        ids: IdGenerator,
        resource: Resource,
        processors: Sequence[SpanProcessor],
        limits: SpanLimits | None = None,
        *,
        follow_local_parent: bool = False,
    ) -> None:
        self.sampler = sampler
        # True when every sampler decision for a child of a local parent is the parent's own
        # (the standard samplers: parent-based, always on/off, a ratio of the same trace id);
        # then a child costs no sampler call.
        self.follow_local_parent = follow_local_parent
        self.ids = ids
        self.resource = resource
        self.processors = tuple(processors)
        limits = limits or SpanLimits()
        self.max_attributes = limits.max_span_attributes
        self.max_events = limits.max_events
        self.max_links = limits.max_links
        self.max_length = limits.max_attribute_length

    def clean(self, attributes: Attributes, into: dict[str, AttributeValue] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {} if into is None else into
        if not attributes:
            return out
        limit, length = self.max_attributes, self.max_length
        for key, value in attributes.items():
            if type(value) not in _SIMPLE:
                value = _sequence(value)
                if value is None:
                    continue
            if length is not None:
                value = _truncate(value, length)
            if key in out or limit is None or len(out) < limit:
                out[key] = value
        return out


def _sequence(value: Any) -> tuple[Any, ...] | None:
    if isinstance(value, _SIMPLE):  # a subclass (an enum of str, say)
        return value  # type: ignore[return-value]
    if not isinstance(value, Sequence) or isinstance(value, (bytes, bytearray)):
        return None
    kinds = {type(v) for v in value if v is not None}
    if len(kinds) > 1 or not kinds <= set(_SIMPLE):
        return None
    return tuple(value)


def _truncate(value: Any, length: int) -> Any:
    if isinstance(value, str):
        return value[:length]
    if isinstance(value, tuple):
        return tuple(v[:length] if isinstance(v, str) else v for v in value)
    return value
