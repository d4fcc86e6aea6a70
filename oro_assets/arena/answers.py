"""How a model's answer reaches the inference proxy: the three answer shapes of the firehose.

Policies say *what* the model answered as a structured chat completion (thinking in
``reasoning_content``, calls in ``tool_calls``). :func:`render_answer` writes it the way the
miner's agent protocol makes the model write it (reference §2):

* ``text_array`` — ORO's reference agent (which most miners fork) never sends ``tools=``; the model
  writes ``<think>…</think>`` and one ``<tool_call>[{"name", "parameters"}]</tool_call>`` JSON array
  (and ``<response>…</response>``) in ``message.content``; ``tool_calls`` is absent or null.
* ``qwen3_object`` — a Qwen3-style model served raw: one ``<tool_call>\\n{"name", "arguments"}\\n</tool_call>``
  block per call after a ``<think>`` block.
* ``structured`` — OpenAI function calling: ``message.tool_calls`` (as the policy wrote it).
"""

from __future__ import annotations

import copy
import hashlib
import math
from typing import Any

from oro_assets import jsonio

ANSWER_SHAPES = ("text_array", "qwen3_object", "structured")
#: Share of miners per answer shape (the reference-agent lineage is most of the population).
DEFAULT_SHAPE_SHARES = {"text_array": 0.6, "qwen3_object": 0.2, "structured": 0.2}
#: Reasoning models and the typical length of the deliberation they return besides the answer.
REASONING_MODELS = {"qwen3-32b": 2400, "deepseek-r1-distill-qwen-14b": 3600, "gpt-oss-20b": 1800}


def _arguments(call: dict) -> Any:
    fn = call.get("function") or {}
    raw = fn.get("arguments")
    if isinstance(raw, str):
        try:
            return jsonio.loads(raw)
        except ValueError:
            return raw  # the model wrote something that is not JSON: keep its text
    return raw if raw is not None else {}


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


_DELIBERATION = (
    "Let me work through this carefully before answering.",
    "First I restate what is being asked and which constraints matter most.",
    "Then I look again at everything the previous steps returned and what is still missing.",
    "I should not rush: a wrong product id would fail the task, so each option deserves a second look.",
    "Hmm, one more consideration: the order of the items and the price limits must both hold.",
    "Okay, I think the plan is clear now, so I will write the answer in the required format.",
)


def hidden_reasoning(seed_text: str, chars: int) -> str:
    """A reasoning model's deliberation (``reasoning_content``) of about ``chars`` characters;
    deterministic for ``seed_text``. The agent does not log it in the step, but it is in the body."""
    if chars <= 0:
        return ""
    h = int(hashlib.md5(seed_text.encode()).hexdigest()[:8], 16)
    target = int(chars * (0.5 + (h % 1000) / 1000.0))
    parts: list[str] = []
    i = h
    while sum(len(p) + 1 for p in parts) < target:
        parts.append(_DELIBERATION[i % len(_DELIBERATION)])
        i = i * 1103515245 + 12345
        i %= 2**31
    return " ".join(parts)


def render_answer(response: dict, shape: str, *, think_in_reasoning: bool = False,
                  null_tool_calls: bool = False, reasoning_chars: int = 0) -> dict:
    """``response`` (structured) rewritten in ``shape``; a new dict, the input is not changed.

    ``think_in_reasoning``: a reasoning model served with a reasoning parser returns its thinking in
    ``reasoning_content`` and only the tags after it in ``content``. ``null_tool_calls``: the
    provider writes ``"tool_calls": null`` instead of leaving the key out. ``reasoning_chars``: a
    reasoning model's hidden deliberation of about that many characters comes back in
    ``reasoning_content`` as well (what makes most real bodies longer than ORO keeps)."""
    if shape not in ANSWER_SHAPES:
        raise ValueError(f"unknown answer shape {shape!r}; known: {', '.join(ANSWER_SHAPES)}")
    out = copy.deepcopy(response)
    hidden = hidden_reasoning(str(out.get("id")), reasoning_chars)
    if shape == "structured":
        for choice in out.get("choices") or []:
            msg = choice.get("message")
            if hidden and isinstance(msg, dict):
                msg["reasoning_content"] = (hidden + "\n" + (msg.get("reasoning_content") or "")).strip()
                _recount(out, msg)
        return out
    for choice in out.get("choices") or []:
        msg = choice.get("message")
        if not isinstance(msg, dict):
            continue
        think = msg.pop("reasoning_content", None) or ""
        calls = msg.pop("tool_calls", None) or []
        text = msg.get("content") or ""
        parts: list[str] = []
        if shape == "text_array":
            if think and not think_in_reasoning:
                parts.append(f"<think>{think}</think>")
            if calls:
                payload = [{"name": (c.get("function") or {}).get("name"), "parameters": _arguments(c)}
                           for c in calls]
                parts.append("<tool_call>" + jsonio.stdlib_dumps(payload) + "</tool_call>")
            if text:
                parts.append(f"<response>{text}</response>" if calls or think else text)
            content = "\n".join(parts)
        else:
            if think and not think_in_reasoning:
                parts.append(f"<think>\n{think}\n</think>\n")
            for c in calls:
                obj = {"name": (c.get("function") or {}).get("name"), "arguments": _arguments(c)}
                parts.append(f"<tool_call>\n{jsonio.stdlib_dumps(obj)}\n</tool_call>")
            if text:
                parts.append(text)
            content = "\n".join(parts)
        msg["content"] = content
        reasoning = "\n".join(p for p in (hidden, think if think_in_reasoning else "") if p)
        if reasoning:
            msg["reasoning_content"] = reasoning
        if null_tool_calls:
            msg["tool_calls"] = None
        if choice.get("finish_reason") == "tool_calls":
            choice["finish_reason"] = "stop"
        _recount(out, msg)
    return out


def _recount(out: dict, msg: dict) -> None:
    usage = out.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        prompt = usage.get("prompt_tokens") or 0
        usage["completion_tokens"] = _tokens(msg.get("content") or "") + _tokens(msg.get("reasoning_content") or "")
        usage["total_tokens"] = prompt + usage["completion_tokens"]
