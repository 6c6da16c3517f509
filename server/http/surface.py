"""The rest of what OpenAI clients call: `/models`, `/responses/compact`, `/responses/input_tokens`.

Invariant: every POST an openai SDK makes is answered for what it is, never with a 405:
`compact` is implemented in its `previous_response_id` form (the stored response's output is
the compacted window: a summary is the agent's decision, not the host's), its `input` form and
`input_tokens` are a 501 saying this host does not offer them (it cannot count tokens for an
arbitrary agent's model honestly). `/models` lists the hosted app as the one model, with its kind
and its input's JSON schema.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..protocol import errors
from ..protocol.ids import is_valid_response_id
from ..protocol.response import usage
from .kit import HttpState, host_of, read_json, state_of, user_of

ACTIVE = ("queued", "in_progress")


def _zero_usage() -> dict[str, Any]:
    return usage(0, 0)


def not_offered(what: str, hint: str) -> errors.ProtocolError:
    return errors.ProtocolError(
        501, f"This host does not offer {what}. {hint}", type="invalid_request_error", code="not_implemented"
    )


def models(state: HttpState) -> dict[str, dict[str, Any]]:
    """The models this host serves, by id. Beside OpenAI's fields: the app's kind and the JSON
    schema of its input, from which a client (or the operator view) can build a form. One app:
    the one model `model_id`; several: one model per app, by the name requests pick it by."""
    host = state.host
    lanes = host.lanes
    named = [(lane.name, lane.app) for lane in lanes] if lanes.several else [(state.model_id, host.app)]
    return {
        name: {
            "id": name,
            "object": "model",
            "created": state.started,
            "owned_by": "durable-responses",
            **app.describe(),
        }
        for name, app in named
    }


async def list_models(request: Request) -> Response:
    user_of(request)  # authenticated like every route
    return JSONResponse({"object": "list", "data": list(models(state_of(request)).values())})


async def get_model(request: Request) -> Response:
    user_of(request)
    wanted = request.path_params["model_id"]
    known = models(state_of(request))
    if wanted not in known:
        names = ", ".join(f"'{n}'" for n in known)
        raise errors.not_found(
            f"The model '{wanted[:128]}' does not exist; this host serves {names}.", param="model"
        )
    return JSONResponse(known[wanted])


def compacted_id(body: object) -> str:
    """The stored response a `compact` body names (400, 404 or 501 for any other form)."""
    if not isinstance(body, dict):
        raise errors.bad_request("The request body must be a JSON object.", code="invalid_type")
    prev = body.get("previous_response_id")
    if body.get("input") not in (None, "", []):
        raise not_offered(
            "compacting an input it has not stored",
            "Compact a stored response instead: pass previous_response_id (and no input).",
        )
    if not isinstance(prev, str) or not prev:
        raise errors.bad_request(
            "previous_response_id is required: this host compacts a stored response to its output.",
            param="previous_response_id",
            code="missing_required_parameter",
        )
    if not is_valid_response_id(prev):
        raise errors.not_found(f"Response with id '{prev[:128]}' not found.", param="previous_response_id")
    return prev


async def compact(request: Request) -> Response:
    user = user_of(request)
    prev = compacted_id(await read_json(request, empty={}))
    response = await host_of(request).get(user, prev)
    if response["status"] in ACTIVE:
        raise errors.conflict(
            f"Response '{prev}' is still {response['status']}; compact it once it has ended.",
            code="previous_response_in_progress",
            param="previous_response_id",
        )
    return JSONResponse(
        {
            "id": "cmp_" + secrets.token_hex(24),
            "object": "response.compaction",
            "created_at": int(time.time()),
            "output": response["output"],
            # (No model call; `cache_write_tokens` is in the openai SDKs' usage type.)
            "usage": _zero_usage(),
        }
    )


async def input_tokens(request: Request) -> Response:
    user_of(request)
    raise not_offered(
        "input token counts",
        "It hosts agents whose models and tokenizers it does not know, so it cannot count honestly; "
        "see each response's usage instead.",
    )


SURFACE_ROUTES: list[BaseRoute] = [
    Route("/models", list_models, methods=["GET"]),
    Route("/models/{model_id:path}", get_model, methods=["GET"]),
    Route("/responses/compact", compact, methods=["POST"]),
    Route("/responses/input_tokens", input_tokens, methods=["POST"]),
]
