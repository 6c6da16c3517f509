"""What a journal record holds: a model call's streamed updates, coalesced and compact, and a
tool call's result, as JSON text (`JournalRow.data`).

A model call's record is small and cheap to write: agent-framework's own `to_dict()` costs
~0.5 ms per update (it walks every field of every content) and a model streams one update per
token, each with the same envelope (role, message and response ids, model, time). So at the
stream's end (`encode_stream`):
- consecutive updates with the same envelope become one update (not one that replaces the
  message's contents, `merge_mode` "replace": merging those would change what they replace);
- within it, consecutive plain text contents become one text, and consecutive fragments of one
  function call one function call (agent-framework's own `+`, the merge `ChatResponse` makes
  of them);
- a plain text content is kept as its string, another content as its fields that are plain
  JSON values (`Content(**fields)` rebuilds it), anything else through `to_dict()`; the raw
  provider chunk is not kept;
- each update keeps only what its envelope changes from the one before (`"e"`; a field set to
  null is gone).
A replay (`decode_stream`) gives the same items, text, tool calls, usage and message ids: the
`ChatResponse` built from its updates equals the live one's, streamed as fewer, larger deltas.
Records of the first encoding (`{"updates": [...]}`, one per streamed update) still decode.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from agent_framework import ChatResponseUpdate, Content

from ...store import JournalRow

__all__ = [
    "decode_content",
    "decode_result",
    "decode_stream",
    "dumps",
    "encode_content",
    "encode_result",
    "encode_stream",
    "recorded_call_ids",
    "recorded_message_ids",
]

_SIMPLE = (str, int, float, bool)
_UPDATE_FIELDS = (
    "role",
    "author_name",
    "response_id",
    "message_id",
    "merge_mode",
    "conversation_id",
    "model",
    "created_at",
    "finish_reason",
)
# The format version of a model call's record (`{"v": 2, "u": [...]}`).
_VERSION = 2


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=repr)


def _plain(value: Any) -> bool:
    """Whether `value` is JSON as it is (and comes back equal from it)."""
    if value is None or isinstance(value, _SIMPLE):
        return True
    if isinstance(value, list):
        return all(map(_plain, value))
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _plain_text(content: Content) -> bool:
    fields = vars(content)
    return (
        fields["type"] == "text"
        and not fields["annotations"]
        and not fields["additional_properties"]
        and not fields["informational_only"]
        and fields["protected_data"] is None
        and fields.get("merge_mode") != "replace"
    )


def encode_content(content: Content) -> Any:
    if _plain_text(content):
        return content.text or ""
    out: dict[str, Any] = {}
    for key, value in vars(content).items():
        if key == "raw_representation" or value is None or value == {} or value == []:
            continue
        if not _plain(value):
            return {"d": content.to_dict()}
        out[key] = value
    return {"f": out}


def decode_content(value: Any) -> Content:
    if isinstance(value, str):
        return Content.from_text(value)
    if "f" in value:
        return Content(**value["f"])
    return Content.from_dict(value["d"])


# -- a model call's stream --------------------------------------------------------------------------


def _envelope(update: ChatResponseUpdate) -> dict[str, Any] | None:
    """The update's fields but its contents, as plain values; None when they are not plain (a
    continuation token, provider objects in `additional_properties`): kept whole instead."""
    fields = vars(update)
    props = fields.get("additional_properties")
    if fields.get("continuation_token") is not None or not (props is None or _plain(props)):
        return None
    out: dict[str, Any] = {}
    for key in _UPDATE_FIELDS:
        value = fields.get(key)
        if value is not None:
            out[key] = value if isinstance(value, _SIMPLE) else str(value)
    if props:
        out["ap"] = props
    return out


def _joins(last: Content | str, content: Content) -> Content | str | None:
    """`last` and `content` as one content, when they are parts of one (None otherwise)."""
    if isinstance(last, str):
        return last + (content.text or "") if _plain_text(content) else None
    if last.type != "function_call" or content.type != "function_call":
        return None
    if content.call_id and content.call_id != last.call_id:
        return None
    if content.id is not None and content.id != last.id:
        return None
    try:
        return last + content
    except Exception:  # agent-framework refuses the merge (other ids, servers): two calls
        return None


def _add(parts: list[Content | str], contents: Iterable[Content]) -> None:
    for content in contents:
        joined = _joins(parts[-1], content) if parts else None
        if joined is not None:
            parts[-1] = joined
        elif _plain_text(content):
            parts.append(content.text or "")
        else:
            parts.append(content)


def encode_stream(updates: Sequence[ChatResponseUpdate]) -> str:
    """A finished model stream's record (see the module docstring)."""
    merged: list[tuple[dict[str, Any] | None, list[Content | str], ChatResponseUpdate]] = []
    for update in updates:
        env = _envelope(update)
        last = merged[-1] if merged else None
        if env is not None and last is not None and last[0] == env and env.get("merge_mode") != "replace":
            _add(last[1], update.contents)
            continue
        parts: list[Content | str] = []
        _add(parts, update.contents)
        merged.append((env, parts, update))
    out: list[Any] = []
    before: dict[str, Any] = {}
    for env, parts, update in merged:
        if env is None:
            out.append({"d": update.to_dict()})
            before = {}
            continue
        contents = [p if isinstance(p, str) else encode_content(p) for p in parts]
        change = {k: v for k, v in env.items() if before.get(k) != v}
        change.update({k: None for k in before if k not in env})
        out.append({"c": contents, "e": change} if change else contents)
        before = env
    return dumps({"v": _VERSION, "u": out})


def _envelopes(body: dict[str, Any]) -> Iterable[tuple[dict[str, Any] | None, Any]]:
    """(envelope, encoded contents) of each update of a record; (None, fields) for an update
    kept whole."""
    if "updates" in body:
        yield from _first_encoding(body["updates"])
        return
    env: dict[str, Any] = {}
    for entry in body["u"]:
        if isinstance(entry, dict) and "d" in entry:
            env = {}
            yield None, entry["d"]
            continue
        if isinstance(entry, dict):
            env = {k: v for k, v in {**env, **entry["e"]}.items() if v is not None}
            entry = entry["c"]
        yield env, entry


def _first_encoding(entries: list[Any]) -> Iterable[tuple[dict[str, Any] | None, Any]]:
    """`_envelopes` of a record of the first encoding: one entry per streamed update."""
    for entry in entries:
        if "d" in entry:
            yield None, entry["d"]
            continue
        env = {k: entry[k] for k in _UPDATE_FIELDS if k in entry}
        if entry.get("ap"):
            env["ap"] = entry["ap"]
        yield env, entry["c"]


def decode_stream(data: str) -> list[ChatResponseUpdate]:
    """The updates a model call's record replays (`encode_stream`'s, or the first encoding's)."""
    updates: list[ChatResponseUpdate] = []
    for env, contents in _envelopes(json.loads(data)):
        if env is None:
            updates.append(ChatResponseUpdate.from_dict(contents))
            continue
        kwargs = {k: env[k] for k in _UPDATE_FIELDS if k in env}
        updates.append(
            ChatResponseUpdate(
                contents=[decode_content(c) for c in contents],
                additional_properties=env.get("ap"),
                **kwargs,
            )
        )
    return updates


def _recorded(rows: Sequence[JournalRow]) -> Iterable[tuple[dict[str, Any] | None, Any]]:
    """`_envelopes` of every recorded model stream of `rows`."""
    for row in rows:
        if not row.place.startswith("model:") or row.state != "done":
            continue
        body = json.loads(row.data)
        if "response" not in body:
            yield from _envelopes(body)


def recorded_message_ids(rows: Sequence[JournalRow]) -> set[str]:
    """The ids of the messages the recorded model calls of `rows` streamed (what a replay of
    them streams again)."""
    found: set[str] = set()
    for env, fields in _recorded(rows):
        message_id = (fields if env is None else env).get("message_id")
        if isinstance(message_id, str):
            found.add(message_id)
    return found


def recorded_call_ids(rows: Sequence[JournalRow]) -> set[str]:
    """The call ids of the function calls the recorded model calls of `rows` streamed (calls a
    replay of them announces again)."""
    found: set[str] = set()
    for env, contents in _recorded(rows):
        encoded = contents.get("contents", ()) if env is None else contents
        for content in encoded:
            fields = content.get("f", content.get("d")) if isinstance(content, dict) else None
            if isinstance(fields, dict) and fields.get("type") == "function_call":
                if isinstance(fields.get("call_id"), str) and fields["call_id"]:
                    found.add(fields["call_id"])
    return found


# -- a tool call's result ----------------------------------------------------------------------------


def encode_result(result: Any) -> str:
    if isinstance(result, list) and all(isinstance(c, Content) for c in result):
        return dumps({"contents": [encode_content(c) for c in result]})
    if isinstance(result, str):
        return json.dumps({"text": result})
    try:
        return json.dumps({"value": result}, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps({"text": str(result)})


def decode_result(data: str) -> Any:
    body = json.loads(data)
    if "contents" in body:
        return [decode_content(c) for c in body["contents"]]
    if "text" in body:
        return body["text"]
    return body.get("value")
