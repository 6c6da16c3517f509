"""Routes of the Conversations API: `/conversations` and its items (served at `/` and `/v1`).

Invariant: every route resolves its caller first and passes the user id down (another
tenant's conversation is a 404); a conversation or item id that could not be one is a 404
too, as an unknown one is. The work is the runtime's (`Host.conversations`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..protocol import errors
from ..protocol.conversations import (
    parse_conversation_create,
    parse_conversation_update,
    parse_item_list_params,
    parse_items_create,
)
from ..protocol.ids import is_valid_conversation_id
from ..runtime.turns.conversations import ConversationService
from .kit import host_of, read_json, user_of

_MAX_ITEM_ID = 256


def conv_id(request: Request) -> str:
    cid: str = request.path_params["conversation_id"]
    if not is_valid_conversation_id(cid):
        raise errors.not_found(f"Conversation with id '{cid[:128]}' not found.", param="conversation_id")
    return cid


def item_id(request: Request) -> str:
    iid: str = request.path_params["item_id"]
    if not iid or len(iid) > _MAX_ITEM_ID or not iid.isprintable():
        raise errors.not_found(f"Item with id '{iid[:128]}' not found.", param="item_id")
    return iid


def service_of(request: Request) -> ConversationService:
    return host_of(request).conversations


async def create(request: Request) -> Response:
    user = user_of(request)
    metadata, items = parse_conversation_create(await read_json(request, empty={}))
    return JSONResponse(await service_of(request).create(user, metadata, items))


async def retrieve(request: Request) -> Response:
    return JSONResponse(await service_of(request).get(user_of(request), conv_id(request)))


async def update(request: Request) -> Response:
    user = user_of(request)
    cid = conv_id(request)
    metadata = parse_conversation_update(await read_json(request, empty={}))
    return JSONResponse(await service_of(request).update(user, cid, metadata))


async def delete(request: Request) -> Response:
    return JSONResponse(await service_of(request).delete(user_of(request), conv_id(request)))


async def list_items(request: Request) -> Response:
    user = user_of(request)
    cid = conv_id(request)
    params = parse_item_list_params(request.query_params, request.query_params.getlist("include"))
    return JSONResponse(await service_of(request).list_items(user, cid, params))


async def add_items(request: Request) -> Response:
    user = user_of(request)
    cid = conv_id(request)
    items = parse_items_create(await read_json(request, empty={}))
    return JSONResponse(await service_of(request).add_items(user, cid, items))


async def get_item(request: Request) -> Response:
    user = user_of(request)
    return JSONResponse(await service_of(request).get_item(user, conv_id(request), item_id(request)))


async def delete_item(request: Request) -> Response:
    user = user_of(request)
    return JSONResponse(await service_of(request).delete_item(user, conv_id(request), item_id(request)))


CONVERSATION_ROUTES: list[BaseRoute] = [
    Route("/conversations", create, methods=["POST"]),
    Route("/conversations/{conversation_id}", retrieve, methods=["GET"]),
    Route("/conversations/{conversation_id}", update, methods=["POST"]),
    Route("/conversations/{conversation_id}", delete, methods=["DELETE"]),
    Route("/conversations/{conversation_id}/items", list_items, methods=["GET"]),
    Route("/conversations/{conversation_id}/items", add_items, methods=["POST"]),
    Route("/conversations/{conversation_id}/items/{item_id}", get_item, methods=["GET"]),
    Route("/conversations/{conversation_id}/items/{item_id}", delete_item, methods=["DELETE"]),
]
