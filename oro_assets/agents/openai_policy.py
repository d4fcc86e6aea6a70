"""A model behind an OpenAI-compatible endpoint (vLLM, SGLang, a hosted API) as an arena Policy.

Tool calls come from the response's structured ``tool_calls``; servers started without a tool
parser return Qwen3 text instead, so ``<tool_call>`` blocks in ``content`` are parsed too.
Thinking comes from ``reasoning_content`` (vLLM/SGLang reasoning parsers) or ``<think>`` text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oro_assets import jsonio
from oro_assets.agents.toolcall import ParsedCall, parse_assistant_text

_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def to_openai_messages(messages: Sequence[dict], *, send_reasoning: bool = False) -> list[dict]:
    """Canonical messages -> request messages (arguments stay JSON strings; null keys dropped)."""
    out = []
    for msg in messages:
        m = {k: msg[k] for k in _MESSAGE_KEYS if msg.get(k) is not None}
        if m.get("role") == "assistant" and "content" not in m:
            m["content"] = ""
        if send_reasoning and msg.get("reasoning_content"):
            m["reasoning_content"] = msg["reasoning_content"]
        if msg.get("role") != "tool":
            m.pop("tool_call_id", None)
            m.pop("name", None)
        out.append(m)
    return out


class OpenAIPolicy:
    """Policy over ``chat.completions`` with ``tools=`` schemas. The API key is never logged."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *, temperature: float = 0.0,
                 top_p: float = 1.0, max_tokens: int | None = 1024, timeout_s: float = 120.0,
                 max_retries: int = 2, name: str | None = None, send_reasoning: bool = False,
                 seed: int | None = None) -> None:
        from openai import OpenAI

        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = base_url
        self.model = model
        self.temperature = temperature
        self.top_p = top_p
        self.max_tokens = max_tokens
        self.send_reasoning = send_reasoning
        self.seed = seed
        self.name = name or f"openai:{model}@T{temperature:g}"
        # The client needs some key; local servers ignore it.
        self._client = OpenAI(base_url=base_url, api_key=api_key or "EMPTY", timeout=timeout_s,
                              max_retries=max_retries)

    def __repr__(self) -> str:  # no key in reprs / logs
        return f"OpenAIPolicy(base_url={self.base_url!r}, model={self.model!r})"

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]):
        from oro_assets.arena.episode import ToolCall, Turn

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages, send_reasoning=self.send_reasoning),
            "temperature": self.temperature,
            "top_p": self.top_p,
        }
        if tools:
            kwargs["tools"] = list(tools)
        if self.max_tokens:
            kwargs["max_tokens"] = self.max_tokens
        if self.seed is not None:
            kwargs["seed"] = self.seed
        completion = self._client.chat.completions.create(**kwargs)
        record = completion.model_dump(mode="json", exclude_none=False)
        if not completion.choices:
            return Turn(think="", tool_calls=[], response="", inference=[record])
        message = completion.choices[0].message
        content = message.content or ""
        parsed = parse_assistant_text(content)
        calls: list[ParsedCall] = []
        errors = list(parsed.errors)
        for tc in message.tool_calls or []:
            fn = getattr(tc, "function", None)
            if fn is None:
                continue
            try:
                args = jsonio.loads(fn.arguments) if fn.arguments and fn.arguments.strip() else {}
            except jsonio.JSONDecodeError:
                errors.append("arguments_unparseable")
                calls.append(ParsedCall(name=fn.name, arguments={}, raw_arguments=fn.arguments))
                continue
            if not isinstance(args, dict):
                errors.append("arguments_not_object")
                calls.append(ParsedCall(name=fn.name, arguments={}, raw_arguments=fn.arguments))
                continue
            calls.append(ParsedCall(name=fn.name, arguments=args))
        if not calls:
            calls = parsed.tool_calls
        extra = message.model_extra or {}
        think = extra.get("reasoning_content") or extra.get("reasoning") or parsed.think
        record["parse_errors"] = errors
        return Turn(
            think=str(think or "").strip(),
            tool_calls=[ToolCall(name=c.name, arguments=dict(c.arguments), raw_arguments=c.raw_arguments)
                        for c in calls],
            response=parsed.response,
            inference=[record],
            meta={"model": self.model, "temperature": self.temperature},
        )
