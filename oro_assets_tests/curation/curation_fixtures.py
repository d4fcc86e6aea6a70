"""Raw records that trigger each curation reason, built from the traces package's realistic samples."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from oro_assets import jsonio
from oro_assets.judge.base import unavailable
from oro_assets.traces.normalize import normalize_record
from oro_assets.traces.samples import openai_row, oro_dialogue, oro_envelope, shoppingbench_rollout
from oro_assets.traces.schema import Provenance

PARTITION = "2026-01-01"


def normalized(
    obj: Any, line_no: int = 1, source: str = "part-00000.jsonl", partition: str = PARTITION
) -> dict:
    line = jsonio.dumps(obj).encode()
    prov = Provenance(source, line_no, partition, hashlib.sha256(line).hexdigest())
    return normalize_record(obj, provenance=prov)


def _calls(step: dict) -> list[dict]:
    return step["completion"]["message"]["tool_call"]


def _params(call: dict) -> dict:
    p = call["parameters"]
    return jsonio.loads(p) if isinstance(p, str) else p


def good(seed: int = 1, **kw: Any) -> dict:
    return oro_envelope(seed, **kw)


def no_inference(seed: int = 2) -> dict:
    env = oro_envelope(seed)
    for step in env["dialogue"]:
        step["extra_info"]["proxy_calls"] = [
            p for p in step["extra_info"]["proxy_calls"] if not p["path"].startswith("/inference")
        ]
    env["inference_total"] = 0
    return env


def subtask(seed: int = 3) -> dict:
    return oro_envelope(seed, subtask=True)


def no_tool_calls(seed: int = 4) -> dict:
    env = oro_envelope(seed)
    step = env["dialogue"][0]
    step["completion"]["message"]["tool_call"] = []
    step["completion"]["message"]["response"] = "I could not decide what to search for."
    step["completion"]["content"] = "I could not decide what to search for."
    step["extra_info"]["proxy_calls"] = [
        p for p in step["extra_info"]["proxy_calls"] if p["path"].startswith("/inference")
    ]
    env["dialogue"] = [step]
    return env


def unpaired(seed: int = 5) -> dict:
    return oro_envelope(seed, unpaired=True)


def _drop_steps(env: dict, name: str) -> dict:
    env["dialogue"] = [s for s in env["dialogue"] if not any(c["name"] == name for c in _calls(s))]
    return env


def recommend_missing(seed: int = 6) -> dict:
    return _drop_steps(oro_envelope(seed), "recommend_product")


def recommend_twice(seed: int = 7) -> dict:
    env = oro_envelope(seed)
    rec = next(s for s in env["dialogue"] if any(c["name"] == "recommend_product" for c in _calls(s)))
    env["dialogue"].insert(-1, copy.deepcopy(rec))
    return env


def recommend_unparseable(seed: int = 8) -> dict:
    env = oro_envelope(seed)
    for s in env["dialogue"]:
        for c in _calls(s):
            if c["name"] == "recommend_product":
                c["parameters"] = "{product_ids: 12345"  # not JSON
    return env


def over_budget(seed: int = 9) -> dict:
    env = oro_envelope(seed)
    first = env["dialogue"][0]["completion"]["message"]
    first["think"] = first["think"] + " " + " ".join(f"consider{i}" for i in range(15_000))
    return env


def think_then_stop(seed: int = 10) -> dict:
    env = oro_envelope(seed)
    last = env["dialogue"][-1]  # terminate step becomes a thought without action
    last["completion"]["message"] = {
        "think": "Maybe I should double-check the price first...",
        "tool_call": [],
        "response": "",
    }
    last["completion"]["content"] = "<think>Maybe I should double-check the price first...</think>"
    last["extra_info"]["proxy_calls"] = [
        p for p in last["extra_info"]["proxy_calls"] if p["path"].startswith("/inference")
    ]
    return env


def ungrounded(seed: int = 11) -> dict:
    env = oro_envelope(seed)
    for s in env["dialogue"]:
        for c in _calls(s):
            if c["name"] == "recommend_product":
                c["parameters"] = {"product_ids": "9999999999"}
                c["result"] = "Recommended: 9999999999"
    return env


def low_reasoning(seed: int = 12) -> dict:
    env = oro_envelope(seed)
    env["reasoning"] = {"score": 0.3, "explanation": "Gate 2 failed: repeats the query", "model": "judge-1"}
    return env


def unscored(seed: int = 13) -> dict:
    env = oro_envelope(seed)
    del env["reasoning"]
    return env


def exact_copy(env: dict) -> dict:
    """The same dialogue exported again by another validator (different envelope bytes)."""
    dup = copy.deepcopy(env)
    dup["miner_hotkey"] = "5Fdifferent"
    dup["execution_time"] = 99.9
    return dup


def near_copy(env: dict) -> dict:
    dup = copy.deepcopy(env)
    dup["miner_hotkey"] = "5Fnear"
    msg = dup["dialogue"][-1]["completion"]["message"]
    msg["response"] = msg["response"] + " Thanks!"
    return dup


class DownJudge:
    """A judge whose endpoint is down: every call unavailable (never a score of 0)."""

    judge_id = "llm"

    def __init__(self) -> None:
        self.calls = 0

    def judge(self, trace: dict):
        self.calls += 1
        return unavailable("endpoint unreachable after 3 attempts", "llm", "1")


__all__ = [
    "oro_dialogue",
    "openai_row",
    "shoppingbench_rollout",
]
