"""The typed content parts of an input message (`input_text`, `input_image`, `input_file`,
`output_text`, `refusal`), validated into their canonical form.

Invariant: a part is returned as a fresh dict holding only the keys the Open Responses schema
(or the openai SDK, for the same shape) defines; anything else is a 400 naming its path.
"""

from __future__ import annotations

import base64
from typing import Any

from ._check import (
    fail,
    json_copy,
    reject_unknown,
    require,
    want_enum,
    want_id,
    want_list,
    want_object,
    want_str,
)

MAX_TEXT_CHARS = 10 * 1024 * 1024
MAX_DATA_CHARS = 32 * 1024 * 1024
MAX_ITEM_ID_CHARS = 256
IMAGE_DETAILS = ("auto", "low", "high", "original")

# Allowed keys = the Open Responses schema's properties plus the openai SDK's for the same shape.
_INPUT_TEXT_KEYS = frozenset({"type", "text", "prompt_cache_breakpoint"})
_INPUT_IMAGE_KEYS = frozenset({"type", "image_url", "file_id", "detail", "prompt_cache_breakpoint"})
_INPUT_FILE_KEYS = frozenset(
    {"type", "file_id", "file_data", "file_url", "filename", "detail", "prompt_cache_breakpoint"}
)
_OUTPUT_TEXT_KEYS = frozenset({"type", "text", "annotations", "logprobs"})
_REFUSAL_KEYS = frozenset({"type", "refusal"})


def content_part(raw: object, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    obj = want_object(raw, path)
    kind = want_str(require(obj, "type", path), f"{path}.type")
    if kind not in allowed:
        fail(f"Invalid value for '{path}.type': {kind!r} is not allowed here.", f"{path}.type")
    if kind == "input_text":
        reject_unknown(obj, _INPUT_TEXT_KEYS, path)
        text = want_str(require(obj, "text", path), f"{path}.text", max_len=MAX_TEXT_CHARS)
        return _with_extras({"type": "input_text", "text": text}, obj)
    if kind == "input_image":
        return _input_image(obj, path)
    if kind == "input_file":
        return _input_file(obj, path)
    if kind == "output_text":
        reject_unknown(obj, _OUTPUT_TEXT_KEYS, path)
        text = want_str(require(obj, "text", path), f"{path}.text", max_len=MAX_TEXT_CHARS)
        annotations = obj.get("annotations")
        annotations = [] if annotations is None else want_list(annotations, f"{path}.annotations")
        for k, ann in enumerate(annotations):
            want_object(ann, f"{path}.annotations[{k}]")
        part: dict[str, Any] = {
            "type": "output_text",
            "text": text,
            "annotations": json_copy(annotations),
        }
        if obj.get("logprobs") is not None:
            part["logprobs"] = json_copy(want_list(obj["logprobs"], f"{path}.logprobs"))
        return part
    # refusal: the only kind left in either allowed tuple.
    reject_unknown(obj, _REFUSAL_KEYS, path)
    refusal = want_str(require(obj, "refusal", path), f"{path}.refusal", max_len=MAX_TEXT_CHARS)
    return {"type": "refusal", "refusal": refusal}


def _with_extras(part: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    # SDK-only hints (prompt caching) mean nothing to the host but are kept for fidelity.
    if obj.get("prompt_cache_breakpoint") is not None:
        part["prompt_cache_breakpoint"] = json_copy(obj["prompt_cache_breakpoint"])
    return part


def _input_image(obj: dict[str, Any], path: str) -> dict[str, Any]:
    reject_unknown(obj, _INPUT_IMAGE_KEYS, path)
    url = obj.get("image_url")
    file_id = obj.get("file_id")
    if url is None and file_id is None:
        fail(
            f"Invalid '{path}': one of 'image_url' or 'file_id' is required.",
            f"{path}.image_url",
            "missing_required_parameter",
        )
    part: dict[str, Any] = {"type": "input_image", "image_url": None}
    if url is not None:
        url = want_str(url, f"{path}.image_url", max_len=2 * MAX_TEXT_CHARS)
        if not url.lower().startswith(("http://", "https://", "data:")):
            fail(f"Invalid '{path}.image_url': expected an http(s) URL or a data: URL.", f"{path}.image_url")
        check_data_url(url, f"{path}.image_url")
        part["image_url"] = url
    if file_id is not None:
        part["file_id"] = want_id(file_id, f"{path}.file_id", max_len=MAX_ITEM_ID_CHARS)
    detail = obj.get("detail")
    part["detail"] = "auto" if detail is None else want_enum(detail, f"{path}.detail", IMAGE_DETAILS)
    return _with_extras(part, obj)


def _input_file(obj: dict[str, Any], path: str) -> dict[str, Any]:
    reject_unknown(obj, _INPUT_FILE_KEYS, path)
    part: dict[str, Any] = {"type": "input_file"}
    limits = {
        "file_id": MAX_ITEM_ID_CHARS,
        "file_data": MAX_DATA_CHARS,
        "file_url": MAX_TEXT_CHARS,
        "filename": 1024,
    }
    for key, limit in limits.items():
        if obj.get(key) is not None:
            part[key] = want_str(obj[key], f"{path}.{key}", max_len=limit)
    if "file_id" in part:
        want_id(part["file_id"], f"{path}.file_id", max_len=MAX_ITEM_ID_CHARS)
    if "file_data" in part:
        check_data_url(part["file_data"], f"{path}.file_data")
    if part.get("file_url"):
        url = part["file_url"]
        if ":" not in url:
            fail(f"Invalid '{path}.file_url': expected a URL (https://...).", f"{path}.file_url")
        check_data_url(url, f"{path}.file_url")
    if not any(key in part for key in ("file_id", "file_data", "file_url")):
        fail(
            f"Invalid '{path}': one of 'file_id', 'file_data' or 'file_url' is required.",
            f"{path}.file_id",
            "missing_required_parameter",
        )
    if obj.get("detail") is not None:
        part["detail"] = want_enum(obj["detail"], f"{path}.detail", ("auto", "low", "high"))
    return _with_extras(part, obj)


def check_data_url(url: str, param: str) -> None:
    """400 naming `param` for a `data:` URL the model clients cannot send (RFC 2397:
    `data:[<media type>][;name=value]...[;base64],<data>`, base64 being the only encoding and
    the last parameter); a URL of another scheme passes as it is."""
    if not url.startswith("data:"):
        return
    head, sep, payload = url.partition(",")
    if not sep:
        fail(
            f"Invalid '{param}': a data URL needs a comma between its header and its data "
            "(data:image/png;base64,...).",
            param,
        )
    parameters = head.split(";")[1:]
    for index, parameter in enumerate(parameters):
        if parameter == "base64":
            if index != len(parameters) - 1:
                fail(f"Invalid '{param}': ';base64' must be the data URL's last parameter.", param)
        elif parameter and "=" not in parameter:
            fail(f"Invalid '{param}': unsupported data URL parameter {parameter[:40]!r}.", param)
    if parameters and parameters[-1] == "base64":
        try:
            base64.b64decode(payload)  # as the model clients decode it
        except ValueError:
            fail(f"Invalid '{param}': the data URL's data is not valid base64.", param)
