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
from ..runtime.host import Host
from .kit import Kit

_MAX_ITEM_ID = 256


def conversation_routes(host: Host, kit: Kit) -> list[BaseRoute]:
    service = host.conversations

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

    async def create(request: Request) -> Response:
        user = kit.user_of(request)
        metadata, items = parse_conversation_create(await kit.read_json(request, empty={}))
        return JSONResponse(await service.create(user, metadata, items))

    async def retrieve(request: Request) -> Response:
        return JSONResponse(await service.get(kit.user_of(request), conv_id(request)))

    async def update(request: Request) -> Response:
        user = kit.user_of(request)
        cid = conv_id(request)
        metadata = parse_conversation_update(await kit.read_json(request, empty={}))
        return JSONResponse(await service.update(user, cid, metadata))

    async def delete(request: Request) -> Response:
        return JSONResponse(await service.delete(kit.user_of(request), conv_id(request)))

    async def list_items(request: Request) -> Response:
        user = kit.user_of(request)
        cid = conv_id(request)
        params = parse_item_list_params(request.query_params, request.query_params.getlist("include"))
        return JSONResponse(await service.list_items(user, cid, params))

    async def add_items(request: Request) -> Response:
        user = kit.user_of(request)
        cid = conv_id(request)
        items = parse_items_create(await kit.read_json(request, empty={}))
        return JSONResponse(await service.add_items(user, cid, items))

    async def get_item(request: Request) -> Response:
        user = kit.user_of(request)
        return JSONResponse(await service.get_item(user, conv_id(request), item_id(request)))

    async def delete_item(request: Request) -> Response:
        user = kit.user_of(request)
        return JSONResponse(await service.delete_item(user, conv_id(request), item_id(request)))

    g = kit.guarded
    return [
        Route("/conversations", g(create), methods=["POST"]),
        Route("/conversations/{conversation_id}", g(retrieve), methods=["GET"]),
        Route("/conversations/{conversation_id}", g(update), methods=["POST"]),
        Route("/conversations/{conversation_id}", g(delete), methods=["DELETE"]),
        Route("/conversations/{conversation_id}/items", g(list_items), methods=["GET"]),
        Route("/conversations/{conversation_id}/items", g(add_items), methods=["POST"]),
        Route("/conversations/{conversation_id}/items/{item_id}", g(get_item), methods=["GET"]),
        Route("/conversations/{conversation_id}/items/{item_id}", g(delete_item), methods=["DELETE"]),
    ]
