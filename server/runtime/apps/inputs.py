"""Typed workflow inputs: what a workflow's entry takes, its JSON schema, and a request's input
turned into it.

A graph workflow's start executor (or a functional workflow's first parameter) declares the
type(s) it takes. Messages (`list[Message]`, `Message`) are taken as the host always gave them;
any other type is built from the text of the input's last user message:
- `str`: the text as it is;
- `int`, `float`, `bool`: parsed from it (pydantic's lax rules: "42", "4.2", "true"/"yes");
- an `Enum` or a `Literal`: the value the text names (an `Enum` member's value, or its name);
- a dataclass, pydantic model, TypedDict, or a dict/list type: a JSON value in the text (a
  ```json fenced block is taken too), validated by pydantic against the type.
Several declared types are tried in order: structured ones first (the text must hold a JSON
object or array), then numbers and booleans, then enums and literals, then `str`.

Invariant: the conversion is a pure function of the input text, so the up-front check (a 400
`invalid_workflow_input` naming the expected JSON schema) and every run and recovery of the
response build exactly the same value.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

from agent_framework import Message
from pydantic import TypeAdapter, ValidationError

__all__ = [
    "InputError",
    "InputSpec",
    "last_user_text",
    "spec_for_types",
]

_SCALARS: tuple[type, ...] = (bool, int, float)
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)


class InputError(ValueError):
    """The input cannot become the type the workflow takes; the message says why."""


def _flatten(declared: Sequence[Any]) -> list[Any]:
    """Declared input types with unions split into their members, in order, without repeats."""
    out: list[Any] = []
    for t in declared:
        origin = typing.get_origin(t)
        members = typing.get_args(t) if origin in (typing.Union, types.UnionType) else (t,)
        for m in members:
            if m not in out and m is not type(None):
                out.append(m)
    return out


def _is_messages(t: Any) -> bool:
    if t is Message:
        return True
    origin = typing.get_origin(t)
    if origin in (list, Sequence, typing.Sequence):
        args = typing.get_args(t)
        return bool(args) and args[0] is Message
    return False


def _is_structured(t: Any) -> bool:
    if t in _SCALARS or t is str or t is Any:
        return False
    if dataclasses.is_dataclass(t) or typing.is_typeddict(t):
        return True
    if isinstance(t, type) and hasattr(t, "model_validate"):
        return True
    return typing.get_origin(t) in (dict, list, tuple, Mapping, Sequence) or t in (dict, list)


def _is_text_shaped(t: Any) -> bool:
    """An `Enum` or a `Literal`: one JSON scalar, written in the text as it is (`"init"`, `3`)."""
    return (isinstance(t, type) and issubclass(t, enum.Enum)) or typing.get_origin(t) is typing.Literal


_NO_VALUE = object()


def _text_shaped_value(adapter: TypeAdapter[Any], t: Any, text: str) -> Any:
    """The `Enum` member or `Literal` value `text` names: by value as it is (`init`), by value as
    JSON (`3`, `"init"`), or an `Enum` member by name (`INIT`); `_NO_VALUE` if none."""
    try:
        return adapter.validate_python(text)
    except ValidationError:
        pass
    try:
        return adapter.validate_json(text)
    except ValidationError:
        pass
    if isinstance(t, type) and issubclass(t, enum.Enum) and text in t.__members__:
        return t.__members__[text]
    return _NO_VALUE


def _validatable(t: Any) -> Any:
    """`t`, or for a `typing.TypedDict` (which pydantic refuses before Python 3.12) the same
    TypedDict made with `typing_extensions` (its values are plain dicts either way)."""
    if typing.is_typeddict(t) and sys.version_info < (3, 12) and type(t).__module__ == "typing":
        import typing_extensions

        try:
            hints = typing.get_type_hints(t)
        except Exception:
            hints = dict(getattr(t, "__annotations__", {}))
        required = getattr(t, "__required_keys__", frozenset(hints))
        fields = {k: (v if k in required else typing_extensions.NotRequired[v]) for k, v in hints.items()}
        # The class statement's form, so its docstring (the schema's description) is given at
        # creation: `types.new_class` is `class Name(TypedDict): ...` with computed fields.
        namespace = {"__annotations__": fields, "__doc__": t.__doc__, "__module__": __name__}
        return types.new_class(
            t.__name__, (typing_extensions.TypedDict,), {}, lambda ns: ns.update(namespace)
        )
    return t


def type_label(t: Any) -> str:
    return getattr(t, "__name__", None) or str(t)


def last_user_text(messages: Sequence[Message]) -> str:
    """The text of the last user message (the input a typed workflow is given)."""
    for message in reversed(messages):
        if message.role == "user":
            return message.text or ""
    return ""


def _json_value(text: str) -> Any:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    return json.loads(body)


def _short(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "value"
        problems.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(problems)


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """What an app's entry takes. `types` empty: messages (the chat shape every agent takes)."""

    types: tuple[Any, ...] = ()
    # A `Message` alone (not a list): the last user message is given.
    single_message: bool = False

    @property
    def typed(self) -> bool:
        return bool(self.types)

    @cached_property
    def _adapters(self) -> dict[Any, TypeAdapter[Any]]:
        return {t: TypeAdapter(_validatable(t)) for t in self.types if t is not str}

    def adapters(self) -> None:
        """Build the validators now (start-up): a type pydantic cannot validate raises here."""
        _ = self._adapters

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the input (for messages: a string, the user's message)."""
        if not self.typed:
            return {"type": "string", "description": "the user's message (the input's text)"}
        schemas = [self._schema_of(t) for t in self.types]
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}

    def _schema_of(self, t: Any) -> dict[str, Any]:
        if t is str:
            return {"type": "string"}
        try:
            schema: dict[str, Any] = self._adapters[t].json_schema()
        except Exception:  # a type pydantic cannot describe: name it at least
            schema = {"title": type_label(t)}
        return schema

    def describe(self) -> str:
        return " or ".join(type_label(t) for t in self.types)

    def convert_text(self, text: str) -> Any:
        """The workflow's input built from `text`; `InputError` says why it cannot be."""
        problems: list[str] = []
        structured = [t for t in self.types if _is_structured(t)]
        if structured:
            try:
                value = _json_value(text)
            except json.JSONDecodeError as exc:
                value = None
                problems.append(f"the text is not JSON ({exc.msg} at position {exc.pos})")
            if value is not None:
                for t in structured:
                    try:
                        return self._adapters[t].validate_python(value)
                    except ValidationError as exc:
                        problems.append(f"not a valid {type_label(t)}: {_short(exc)}")
        for t in self.types:
            if t in _SCALARS:
                try:
                    return self._adapters[t].validate_python(text.strip())
                except ValidationError:
                    problems.append(f"{text.strip()[:40]!r} is not a {type_label(t)}")
        for t in self.types:
            if _is_text_shaped(t):
                value = _text_shaped_value(self._adapters[t], t, text.strip())
                if value is not _NO_VALUE:
                    return value
                problems.append(f"{text.strip()[:40]!r} is not a {type_label(t)}")
        if str in self.types:
            return text
        for t in self.types:
            if t is Any:
                return text
        raise InputError("; ".join(problems) or f"it cannot become a {self.describe()}")

    def convert(self, messages: Sequence[Message]) -> Any:
        """The workflow's input for a run given `messages` (the request's input)."""
        if not self.typed:
            if self.single_message:
                users = [m for m in messages if m.role == "user"]
                return users[-1] if users else (messages[-1] if messages else Message("user", [""]))
            return list(messages)
        return self.convert_text(last_user_text(messages))

    def error_message(self, problem: str) -> str:
        return (
            f"This workflow takes a {self.describe()} as its input, built from the text of the input's "
            f"last user message, and this input does not fit: {problem}. Expected JSON schema: "
            f"{json.dumps(self.schema(), separators=(',', ':'))}"
        )


def _buildable(t: Any) -> bool:
    """Whether a request can become a `t`: not a framework type the graph passes between its own
    executors (an `AgentExecutorResponse` coming back to the start executor), and one pydantic
    can validate."""
    if t is str or t in _SCALARS or t is Any:
        return True
    module = getattr(t, "__module__", "") or ""
    if module.startswith("agent_framework"):
        return False
    try:
        TypeAdapter(_validatable(t))
    except Exception:
        return False
    return True


def spec_for_types(declared: Sequence[Any]) -> InputSpec:
    """The input spec of an entry that declares `declared` (a start executor's input types): the
    ones a request can become (`_buildable`); all of them if none can (the caller refuses it)."""
    flat = _flatten(declared)
    if not flat or any(_is_messages(t) and t is not Message for t in flat):
        return InputSpec()
    if Message in flat:
        return InputSpec(single_message=True)
    buildable = [t for t in flat if _buildable(t)]
    return InputSpec(types=tuple(buildable or flat))


def annotation_types(func: Callable[..., Any], skip: Callable[[str, Any], bool]) -> list[Any]:
    """The annotation of a function's first parameter that `skip` does not exclude ([] if none)."""
    import inspect

    try:
        hints = typing.get_type_hints(func)
    except Exception:
        hints = {}
    for name, param in inspect.signature(func).parameters.items():
        annotation = hints.get(name, param.annotation)
        if skip(name, annotation):
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if annotation is inspect.Parameter.empty:
            return [str]
        return [annotation]
    return []
