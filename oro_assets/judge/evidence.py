"""Parse a canonical normalised trace row into the evidence every judge works from.

A row's JSON columns (``messages``, ``steps``, ``meta``) may be strings or already parsed.
Steps come from the ``steps`` column; tool result text is joined in from the ``tool`` messages
by call id. When a row has no ``steps`` column the steps are rebuilt from the messages
(one assistant message = one step), so the judges also work on plain canonical chats.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from oro_assets import jsonio
from oro_assets.native import kernels as _kernels
from oro_assets.traces.formats import inference_succeeded


class TraceInputError(ValueError):
    """The row is not a canonical normalised trace (bad JSON column or wrong type)."""


@dataclass(frozen=True)
class CallEvidence:
    call_id: str
    name: str
    arguments: str  # JSON string as stored
    result: str  # tool message content ("" when missing)
    result_product_ids: tuple[str, ...]


@dataclass(frozen=True)
class InferenceEvidence:
    completion_tokens: int | None
    tool_call_names: tuple[str, ...]
    content: str
    status_code: int | None
    truncated: bool
    response_length: int | None = None  # set when ORO dropped the body (over 2,000 characters)

    @property
    def succeeded(self) -> bool:
        return inference_succeeded(self.status_code)


@dataclass(frozen=True)
class SearchEvidence:
    path: str
    params: dict
    result_product_ids: tuple[str, ...]


@dataclass(frozen=True)
class StepEvidence:
    step: int
    think: str
    response: str
    calls: tuple[CallEvidence, ...]
    inference: tuple[InferenceEvidence, ...]
    search: tuple[SearchEvidence, ...]


@dataclass(frozen=True)
class TraceEvidence:
    trace_id: str | None
    query: str
    steps: tuple[StepEvidence, ...]
    messages: list[dict] = field(repr=False, default_factory=list)
    raw_steps: list[dict] = field(repr=False, default_factory=list)
    # False for a format that never carries ORO's proxy log (ShoppingBench rollouts, OpenAI and ShareGPT rows)
    proxy_log: bool = True

    def content_hash(self) -> str:
        """Hash of what a judge sees (query, messages, steps); ids and metadata excluded."""
        return _content_hash(self.query, self.messages, self.raw_steps, self.proxy_log)


def _plain_fields(cls: type) -> tuple[str, ...] | None:
    """The field names, in order, of a frozen dataclass whose generated ``__init__`` does nothing but set each field by
    ``object.__setattr__`` (every field in ``__init__``, no ``__post_init__``, no slots, ``__init__`` and
    ``__setattr__`` its dataclass's own, no base class but ``object``), so the native ``trace_steps`` may make its
    objects as that ``__init__`` does without calling it; None for any other class (the kernel calls it)."""
    params = getattr(cls, "__dataclass_params__", None)
    if (params is None or not params.frozen or not params.init or hasattr(cls, "__post_init__")
            or "__slots__" in vars(cls) or "__init__" not in vars(cls) or "__setattr__" not in vars(cls)
            or cls.__mro__ != (cls, object)):
        return None
    fields = dataclasses.fields(cls)
    if any(not f.init for f in fields):
        return None
    return tuple(f.name for f in fields)


#: Formats written outside ORO's sandbox: they carry no proxy log, so no inference evidence either.
NO_PROXY_LOG_FORMATS = ("shoppingbench_rollout", "openai_messages", "sharegpt")


def _content_hash(query: str, messages: list[dict], raw_steps: list[dict], proxy_log: bool = True) -> str:
    seen: dict[str, Any] = {"query": query, "messages": messages, "steps": raw_steps}
    if not proxy_log:  # a judge reads such a trace differently (no inference evidence to ask for)
        seen["proxy_log"] = False
    return jsonio.content_hash(seen)


def _column(row: dict, name: str, default: Any) -> Any:
    value = row.get(name)
    if value is None:
        return default
    if isinstance(value, (bytes, str)):
        try:
            return jsonio.loads(value)
        except jsonio.JSONDecodeError as exc:
            raise TraceInputError(f"column {name!r} is not valid JSON: {exc}") from None
    return value


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return jsonio.dumps(value)


def _ids(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if v is not None)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value)
    return None


def _query_from(row: dict, messages: list[dict]) -> str:
    query = row.get("query")
    if isinstance(query, str) and query:
        return query
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return _str(message.get("content"))
    return ""


def _steps_from_messages(messages: list[dict]) -> list[dict]:
    steps: list[dict] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            calls.append({"id": call.get("id"), "name": function.get("name"), "arguments": function.get("arguments")})
        steps.append({"step": len(steps) + 1, "think": message.get("reasoning_content") or "", "tool_calls": calls})
    return steps


def _judged_columns(row: dict) -> tuple[list, list]:
    """(messages, raw steps) of a row as a judge sees them; :class:`TraceInputError` on bad input."""
    if not isinstance(row, dict):
        raise TraceInputError(f"a trace must be a dict, got {type(row).__name__}")
    messages = _column(row, "messages", [])
    if not isinstance(messages, list):
        raise TraceInputError("column 'messages' must be a JSON list")
    raw_steps = _column(row, "steps", None)
    if raw_steps is None:
        raw_steps = _steps_from_messages(messages)
    if not isinstance(raw_steps, list):
        raise TraceInputError("column 'steps' must be a JSON list")
    return messages, raw_steps


def trace_content_hash(row: dict) -> str:
    """``parse_trace(row).content_hash()`` without building the evidence (the judge cache key)."""
    messages, raw_steps = _judged_columns(row)
    proxy_log = row.get("format") not in NO_PROXY_LOG_FORMATS or any(
        isinstance(s, dict) and (s.get("inference") or s.get("search")) for s in raw_steps)
    return _content_hash(_query_from(row, messages), messages, raw_steps, proxy_log)


def _trace_steps_py(messages: list, raw_steps: list) -> tuple[StepEvidence, ...]:
    """The evidence of each step (tool results and answers joined in from the messages by call id): the reference
    of the native ``trace_steps`` (``oro_assets.native``), which :func:`parse_trace` uses where it is built."""
    results: dict[str, str] = {}
    responses: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" and message.get("tool_call_id") is not None:
            results[str(message["tool_call_id"])] = _str(message.get("content"))
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                if isinstance(call, dict) and call.get("id") is not None:
                    responses[str(call["id"])] = _str(message.get("content"))

    steps = []
    for position, raw in enumerate(raw_steps):
        if not isinstance(raw, dict):
            raise TraceInputError(f"step {position} is not an object")
        calls = []
        for call in raw.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            call_id = str(call.get("id") or "")
            calls.append(
                CallEvidence(
                    call_id=call_id,
                    name=_str(call.get("name")),
                    arguments=_str(call.get("arguments")),
                    result=results.get(call_id, ""),
                    result_product_ids=_ids(call.get("result_product_ids")),
                )
            )
        inference = tuple(
            InferenceEvidence(
                completion_tokens=_int_or_none(inf.get("completion_tokens")),
                tool_call_names=tuple(str(n) for n in inf.get("tool_call_names") or []),
                content=_str(inf.get("content")),
                status_code=_int_or_none(inf.get("status_code")),
                truncated=bool(inf.get("truncated")),
                response_length=_int_or_none(inf.get("response_length")),
            )
            for inf in raw.get("inference") or []
            if isinstance(inf, dict)
        )
        search = tuple(
            SearchEvidence(
                path=_str(s.get("path")),
                params=s.get("params") if isinstance(s.get("params"), dict) else {},
                result_product_ids=_ids(s.get("result_product_ids")),
            )
            for s in raw.get("search") or []
            if isinstance(s, dict)
        )
        step_no = _int_or_none(raw.get("step"))
        response = responses.get(calls[0].call_id, "") if calls else ""
        steps.append(
            StepEvidence(
                step=step_no if step_no is not None else position + 1,
                think=_str(raw.get("think")),
                response=response,
                calls=tuple(calls),
                inference=inference,
                search=search,
            )
        )
    return tuple(steps)


def parse_trace(row: dict) -> TraceEvidence:
    """Evidence of one canonical normalised row. Raises :class:`TraceInputError` on bad input."""
    messages, raw_steps = _judged_columns(row)
    steps = None
    if _kernels is not None:  # None from the kernel: a subclass of dict, read by the reference
        steps = _kernels.trace_steps(messages, raw_steps, CallEvidence, InferenceEvidence, SearchEvidence,
                                     StepEvidence, _str, _ids, _int_or_none, TraceInputError, _EVIDENCE_FIELDS)
    if steps is None:
        steps = _trace_steps_py(messages, raw_steps)
    trace_id = row.get("trace_id")
    proxy_log = row.get("format") not in NO_PROXY_LOG_FORMATS or any(s.inference or s.search for s in steps)
    return TraceEvidence(
        trace_id=str(trace_id) if trace_id is not None else None,
        query=_query_from(row, messages),
        steps=tuple(steps),
        messages=messages,
        raw_steps=raw_steps,
        proxy_log=proxy_log,
    )


#: the evidence classes' fields as the native ``trace_steps`` sets them (:func:`_plain_fields`)
_EVIDENCE_FIELDS = tuple(_plain_fields(cls) for cls in (CallEvidence, InferenceEvidence, SearchEvidence, StepEvidence))
