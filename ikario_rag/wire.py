"""Incoming JSON-RPC lines the SDK's parser refuses, repaired so that a request still gets
an answer and the connection lives on.

The SDK parses each stdin line with pydantic-core, which rejects a JSON string holding a
lone surrogate ("\\ud800"), nesting deeper than ~128 levels and over-long numbers; it then
drops the line without answering, so the client waits forever on that request. Here such a
line is parsed by the standard library instead, lone surrogates become U+FFFD, containers
nested deeper than MAX_DEPTH become null, and integers too long to convert become infinity;
the tool then rejects or accepts the normalised arguments like any others. A line that is
not JSON at all, or not a JSON-RPC message, gets a JSON-RPC error (with its id when it has
one). Nothing of the line's content is ever logged.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

import mcp_types
from pydantic import ValidationError

log = logging.getLogger("ikario_rag.wire")

# Deepest nesting kept in a repaired line; a tool's deepest argument is ~7 levels down
# (params.arguments.items[0].context.tags[0]).
MAX_DEPTH = 32
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_DIGITS = 4000  # Python refuses to convert longer integer literals (int_max_str_digits)


def repair(line: str) -> tuple[str | None, mcp_types.JSONRPCError | None]:
    """(the line to hand to the SDK, or None) and (an error to answer instead, or None)."""
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return line, None
    except ValidationError:
        pass
    if not line.strip():
        return None, None
    try:
        message = json.loads(_cut_depth(line), parse_int=_integer)
    except (ValueError, RecursionError):
        log.warning("answered a line that is not JSON (%d characters)", len(line))
        return None, _error(None, mcp_types.PARSE_ERROR, "Parse error: the line is not JSON")
    message = _without_surrogates(message)
    fixed = json.dumps(message, ensure_ascii=False)
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(fixed, by_name=False)
    except ValidationError:
        request_id = message.get("id") if isinstance(message, dict) else None
        if not isinstance(request_id, int | str) or isinstance(request_id, bool):
            log.warning("dropped a JSON line that is not a JSON-RPC message")
            return None, None
        log.warning("answered a request that is not a valid JSON-RPC message")
        return None, _error(request_id, mcp_types.INVALID_REQUEST, "Invalid request")
    log.info("repaired a request the JSON-RPC parser refused (%d characters)", len(line))
    return fixed, None


def _error(request_id: Any, code: int, message: str) -> mcp_types.JSONRPCError:
    return mcp_types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(code=code, message=message)
    )


def _integer(digits: str) -> int | float:
    if len(digits) <= _MAX_DIGITS:
        return int(digits)
    return -math.inf if digits.startswith("-") else math.inf


def _cut_depth(line: str) -> str:
    """The line with every container nested deeper than MAX_DEPTH replaced by null."""
    depth = 0
    cut_from = -1
    pieces: list[str] = []
    kept_until = 0
    for match in _TOKEN.finditer(line):
        piece = match.group()
        if piece in "[{":
            depth += 1
            if depth == MAX_DEPTH + 1:
                cut_from = match.start()
        elif piece in "]}":
            if depth == MAX_DEPTH + 1 and cut_from >= 0:
                pieces.append(line[kept_until:cut_from])
                pieces.append("null")
                kept_until = match.end()
                cut_from = -1
            depth -= 1
    if not pieces:
        return line
    pieces.append(line[kept_until:])
    return "".join(pieces)


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value
