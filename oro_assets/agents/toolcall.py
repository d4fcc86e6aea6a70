"""Qwen3 tool-call text: rendering what the model should emit and parsing what it did emit.

Qwen3 (and its chat template) writes an assistant turn as::

    <think>
    reasoning
    </think>

    free text
    <tool_call>
    {"name": "find_product", "arguments": {"q": "red shoes"}}
    </tool_call>

Model output is untrusted and often malformed (unterminated tags, trailing garbage, arguments as
a JSON string, a list of calls in one block). :func:`parse_assistant_text` never raises: it
returns what it could recover plus a list of problems found, so callers can count format errors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from oro_assets import toolcalls
from oro_assets.toolcalls import TOOL_CLOSE, TOOL_OPEN

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
# Chat-control tokens that may survive decoding with skip_special_tokens=False.
CONTROL_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|im_start|>")



@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    # The literal arguments text when it was not a JSON object (the call is kept, as emitted,
    # so the episode records it and answers it with an error result).
    raw_arguments: str | None = None


@dataclass
class ParsedOutput:
    think: str
    tool_calls: list[ParsedCall]
    response: str
    errors: list[str] = field(default_factory=list)

    @property
    def well_formed(self) -> bool:
        return not self.errors


def _dumps(obj: Any) -> str:
    # The chat template's `tojson` is json.dumps with ensure_ascii=False and default separators.
    return json.dumps(obj, ensure_ascii=False)


def render_tool_call(name: str, arguments: dict[str, Any] | str) -> str:
    """One `<tool_call>` block exactly as the Qwen3 chat template renders it."""
    args = arguments if isinstance(arguments, str) else _dumps(arguments)
    return f'{TOOL_OPEN}\n{{"name": "{name}", "arguments": {args}}}\n{TOOL_CLOSE}'


def render_assistant_text(think: str, tool_calls: list[tuple[str, dict[str, Any]]] | list[ParsedCall],
                          response: str = "") -> str:
    """The full text a Qwen3 model emits for one turn (without the trailing `<|im_end|>`)."""
    parts = [f"{THINK_OPEN}\n{think.strip()}\n{THINK_CLOSE}\n\n"]
    body = response.lstrip("\n")
    calls = [(c.name, c.arguments) if isinstance(c, ParsedCall) else (c[0], c[1]) for c in tool_calls]
    for i, (name, args) in enumerate(calls):
        if i > 0 or body:
            body += "\n"
        body += render_tool_call(name, args)
    parts.append(body)
    return "".join(parts)


def strip_control_tokens(text: str) -> str:
    """Cut at the first end-of-turn token and drop any other chat-control token."""
    for stop in ("<|im_end|>", "<|endoftext|>"):
        idx = text.find(stop)
        if idx >= 0:
            text = text[:idx]
    for tok in CONTROL_TOKENS:
        text = text.replace(tok, "")
    return text


def split_think(text: str) -> tuple[str, str, list[str]]:
    """Split off the reasoning. Returns (think, rest, errors).

    Handles: a normal `<think>..</think>` block; a missing `<think>` (templates that open the
    block in the prompt); an unterminated `<think>` (the think runs up to the first tool call,
    or to the end).
    """
    errors: list[str] = []
    open_idx = text.find(THINK_OPEN)
    close_idx = text.find(THINK_CLOSE)
    if close_idx >= 0 and (open_idx < 0 or open_idx < close_idx):
        start = open_idx + len(THINK_OPEN) if open_idx >= 0 else 0
        think = text[start:close_idx]
        rest = text[close_idx + len(THINK_CLOSE):]
        if open_idx > 0 and text[:open_idx].strip():
            rest = text[:open_idx] + rest
    elif open_idx >= 0:
        errors.append("unterminated_think")
        tail = text[open_idx + len(THINK_OPEN):]
        cut = tail.find(TOOL_OPEN)
        think, rest = (tail, "") if cut < 0 else (tail[:cut], tail[cut:])
        rest = text[:open_idx] + rest
    else:
        think, rest = "", text
    # Stray extra think tags inside the rest are noise, not structure.
    if THINK_OPEN in rest or THINK_CLOSE in rest:
        errors.append("stray_think_tag")
        rest = rest.replace(THINK_OPEN, "").replace(THINK_CLOSE, "")
    return think.strip(), rest, errors


def parse_tool_calls(text: str) -> tuple[list[ParsedCall], str, list[str]]:
    """Find `<tool_call>` blocks (the one parser, ``oro_assets.toolcalls``). Returns (calls, text outside
    the blocks, errors); a call only named in a block that could not be decoded is not runnable: its
    block's error is reported, the call is not returned."""
    parsed = toolcalls.parse_tool_calls(text)
    calls = [ParsedCall(c.name, c.arguments, c.raw_arguments) for c in parsed.calls if c.complete]
    return calls, parsed.outside, parsed.errors


def parse_assistant_text(text: str) -> ParsedOutput:
    """Parse one generated assistant turn. Never raises."""
    text = strip_control_tokens(text)
    think, rest, errors = split_think(text)
    calls, outside, call_errors = parse_tool_calls(rest)
    return ParsedOutput(think=think, tool_calls=calls, response=outside.strip(), errors=errors + call_errors)
