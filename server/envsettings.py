"""Settings read from the environment: the base every layer's settings section derives from.

Job: a section is a pydantic model whose fields each name one environment variable (the
field's alias), its default and its documentation, in one place. `from_env()` reads those
variables (an empty value counts as unset), validates them and explains a bad value by the
variable's name; `variables()` lists them for the README's table and `durable-responses
settings`. Code builds a section by field name (`StoreSettings(lease_seconds=2)`).

Invariant: a variable is read only when a section is built (never at import time), and only
by the section that declares it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError
from pydantic_core import PydanticUndefined

__all__ = ["EnvSection", "SettingsError", "Variable", "env_field"]


class SettingsError(ValueError):
    """An environment variable (or flag) holds a value the server cannot use; says which."""


@dataclass(frozen=True)
class Variable:
    """One documented environment variable."""

    name: str
    default: str
    doc: str
    section: str


def env_field(default: Any, name: str, doc: str, *, shown_default: str | None = None, **kwargs: Any) -> Any:
    """A section field read from the variable `name`; `shown_default` documents a computed default."""
    extra: dict[str, JsonValue] | None = (
        {"shown_default": shown_default} if shown_default is not None else None
    )
    return Field(default, alias=name, description=doc, json_schema_extra=extra, **kwargs)


class EnvSection(BaseModel):
    """Base of the settings sections (store, runtime, HTTP, ...)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    # The section's title in the generated table.
    SECTION: ClassVar[str] = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """The section from `environ` (default: the process environment), then `overrides`
        (by field name; `None` values are ignored, so unset flags fall through)."""
        env = os.environ if environ is None else environ
        data: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            var = field.alias
            if var and env.get(var, "") != "":
                data[name] = env[var]
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SettingsError(_explain(cls, exc)) from None

    @classmethod
    def variables(cls) -> list[Variable]:
        out: list[Variable] = []
        for field in cls.model_fields.values():
            if not field.alias:
                continue
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            shown = extra.get("shown_default")
            if shown is None:
                shown = _show(field.default)
            out.append(
                Variable(field.alias, str(shown), field.description or "", cls.SECTION or cls.__name__)
            )
        return out


def _show(value: Any) -> str:
    if value is PydanticUndefined or value is None or value == "" or value == () or value == {}:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    return str(value)


def _explain(cls: type[EnvSection], exc: ValidationError) -> str:
    problems: list[str] = []
    for err in exc.errors():
        loc = str(err["loc"][0]) if err["loc"] else ""
        field = cls.model_fields.get(loc)
        name = field.alias if field is not None and field.alias else loc
        value = err.get("input")
        shown = f" (got {value!r})" if isinstance(value, str | int | float) else ""
        problems.append(f"{name}: {err['msg']}{shown}")
    return "; ".join(problems)
