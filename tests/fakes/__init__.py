"""Small, real test doubles (servers that speak the real protocols), shared by tests, demos and benchmarks."""

from tests.fakes.messages_server import (
    Delay,
    Fail,
    MessagesServer,
    Reply,
    drop_claims,
    minicheck_responder,
    oracle_responder,
    request_answer,
    request_claims,
    request_contexts,
    text_response,
    tool_response,
)

__all__ = [
    "Delay",
    "Fail",
    "MessagesServer",
    "Reply",
    "drop_claims",
    "minicheck_responder",
    "oracle_responder",
    "request_answer",
    "request_claims",
    "request_contexts",
    "text_response",
    "tool_response",
]
