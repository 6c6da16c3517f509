"""Validation of JSON bodies and events against the Open Responses OpenAPI schema (tests only).

The schema file is OpenAPI 3.1, whose schemas are JSON Schema 2020-12: the whole document is
registered as one resource so that `#/components/schemas/...` references resolve inside it.
Validators are built once per schema name and cached.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_PATH = Path(__file__).parent / "data" / "openresponses-2026-04-24.json"
_BASE_URI = "urn:openresponses:2026-04-24"


@functools.cache
def _document() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return doc


@functools.cache
def _registry() -> Registry[Any]:
    resource = Resource(contents=_document(), specification=DRAFT202012)
    return Registry().with_resource(_BASE_URI, resource)


def schema_names() -> list[str]:
    return sorted(_document()["components"]["schemas"])


@functools.cache
def validator(schema_name: str) -> Draft202012Validator:
    if schema_name not in _document()["components"]["schemas"]:
        raise KeyError(f"no schema named {schema_name!r} in {SCHEMA_PATH.name}")
    ref = {"$ref": f"{_BASE_URI}#/components/schemas/{schema_name}"}
    return Draft202012Validator(ref, registry=_registry())


@functools.cache
def event_schemas() -> dict[str, str]:
    """Event `type` value -> name of its `*StreamingEvent` schema, read from each schema's type enum."""
    mapping: dict[str, str] = {}
    for name, schema in _document()["components"]["schemas"].items():
        if not name.endswith("StreamingEvent"):
            continue
        for value in schema.get("properties", {}).get("type", {}).get("enum", []):
            mapping[value] = name
    return mapping


def validate(schema_name: str, obj: Any) -> None:
    """AssertionError listing the violations when `obj` is not a valid `schema_name`."""
    errors = list(validator(schema_name).iter_errors(obj))
    if not errors:
        return
    best = best_match(errors)
    lines = [f"not a valid {schema_name}: {len(errors)} violation(s)"]
    lines.append(f"  best match at {best.json_path}: {best.message[:300]}")
    for err in errors[:5]:
        lines.append(f"  at {err.json_path}: {err.message[:300]}")
        for sub in sorted(err.context or [], key=lambda e: len(e.path), reverse=True)[:3]:
            lines.append(f"    - at {sub.json_path}: {sub.message[:200]}")
    raise AssertionError("\n".join(lines))


def validate_response(obj: Any) -> None:
    validate("ResponseResource", obj)


def validate_item(obj: Any) -> None:
    validate("ItemField", obj)


def validate_event(obj: Any) -> None:
    """Validate a streaming event (with its `sequence_number`) against the schema for its `type`."""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise AssertionError(f"an event must be an object with a string 'type', got {obj!r:.200}")
    name = event_schemas().get(obj["type"])
    if name is None:
        raise AssertionError(f"no streaming event schema for type {obj['type']!r}")
    validate(name, obj)
