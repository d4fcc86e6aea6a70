"""The same dialogue in the chat layouts users publish: ShareGPT (Hermes tags) and NeMo (function_call turns).

Test data builders, written from the layouts' own conventions (not from ``traces/sharegpt.py``)."""

from __future__ import annotations

import json


def call_json(call: dict) -> str:
    return json.dumps({"name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"])})


def as_sharegpt(row: dict) -> dict:
    """ShareGPT with a system turn, human/gpt/tool, Qwen3 ``<tool_call>`` text and Hermes
    ``<tool_response>`` blocks (every result of a turn in one tool turn)."""
    conv: list[dict] = []
    for m in row["messages"]:
        if m["role"] == "system":
            conv.append({"from": "system", "value": m["content"]})
        elif m["role"] == "user":
            conv.append({"from": "human", "value": m["content"]})
        elif m["role"] == "assistant":
            think = f"<think>\n{m['reasoning_content']}\n</think>\n\n" if m.get("reasoning_content") else ""
            blocks = "".join(f"\n<tool_call>\n{call_json(c)}\n</tool_call>" for c in m["tool_calls"])
            conv.append({"from": "gpt", "value": think + m["content"] + blocks})
        elif conv[-1]["from"] == "tool":
            conv[-1]["value"] += f"\n<tool_response>\n{m['content']}\n</tool_response>"
        else:
            conv.append({"from": "tool", "value": f"<tool_response>\n{m['content']}\n</tool_response>"})
    return {"conversations": conv, "tools": row["tools"], "problem_id": row["problem_id"]}


def as_nemo(row: dict) -> dict:
    """NeMo: the system prompt as a field, User/Assistant turns, each call a ``function_call`` turn,
    each result an ``observation`` turn."""
    conv: list[dict] = []
    system = None
    for m in row["messages"]:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "user":
            conv.append({"from": "User", "value": m["content"]})
        elif m["role"] == "assistant":
            think = f"<think>{m['reasoning_content']}</think>" if m.get("reasoning_content") else ""
            conv.append({"from": "Assistant", "value": think + m["content"]})
            conv += [{"from": "function_call", "value": call_json(c)} for c in m["tool_calls"]]
        else:
            conv.append({"from": "observation", "value": m["content"]})
    return {"system": system, "conversations": conv, "mask": "User", "tools": row["tools"],
            "problem_id": row["problem_id"]}


def as_nemo_rendered(row: dict) -> dict:
    """NeMo made from Qwen3-rendered dialogues: only User / Assistant turns; calls as ``<tool_call>`` text,
    the results of a turn as one User turn of ``<tool_response>`` blocks (as the chat template renders them)."""
    conv: list[dict] = []
    system = None
    for m in row["messages"]:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "user":
            conv.append({"from": "User", "value": m["content"]})
        elif m["role"] == "assistant":
            think = f"<think>\n{m['reasoning_content']}\n</think>\n\n" if m.get("reasoning_content") else ""
            blocks = "".join(f"\n<tool_call>\n{call_json(c)}\n</tool_call>" for c in m["tool_calls"])
            conv.append({"from": "Assistant", "value": think + m["content"] + blocks})
        else:
            block = f"<tool_response>\n{m['content']}\n</tool_response>"
            if conv[-1]["from"] == "User" and conv[-1]["value"].startswith("<tool_response>"):
                conv[-1]["value"] += "\n" + block
            else:
                conv.append({"from": "User", "value": block})
    return {"system": system, "conversations": conv, "mask": "User", "type": "VALUE_TO_TEXT"}
