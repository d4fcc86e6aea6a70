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


# Every defect is the agent's: its plan is edited before it runs, and the run is recorded by ORO's rules.


def no_inference(seed: int = 2) -> dict:
    return oro_envelope(seed, inference=False)


def subtask(seed: int = 3) -> dict:
    return oro_envelope(seed, subtask=True)


def no_tool_calls(seed: int = 4) -> dict:
    return oro_envelope(seed, edit=lambda plan: [("", [], "I could not decide what to search for.")])


def unpaired(seed: int = 5) -> dict:
    return oro_envelope(seed, unpaired=True)


def _without(name: str):
    return lambda plan: [step for step in plan if not any(tool == name for tool, _ in step[1])]


def recommend_missing(seed: int = 6) -> dict:
    return oro_envelope(seed, edit=_without("recommend_product"))


def _recommend_twice(plan):
    rec = next(step for step in plan if any(tool == "recommend_product" for tool, _ in step[1]))
    return [*plan[:-1], copy.deepcopy(rec), plan[-1]]


def recommend_twice(seed: int = 7) -> dict:
    return oro_envelope(seed, edit=_recommend_twice)


def _map_calls(fn):
    return lambda plan: [(think, [fn(tool, args) for tool, args in calls], response)
                         for think, calls, response in plan]


def recommend_unparseable(seed: int = 8) -> dict:
    # a function-calling model writes arguments that are not JSON; its agent passes the text on
    bad = _map_calls(lambda tool, args: (tool, "{product_ids: 12345" if tool == "recommend_product" else args))
    return oro_envelope(seed, edit=bad, shape="structured")


def over_budget(seed: int = 9) -> dict:
    # an SFT row (the published set's OpenAI form): through ORO's sandbox a dialogue this long never
    # arrives, it is a TIMED_OUT line with a null dialogue (over the 64 KiB result pipe)
    row = openai_row(seed)
    first = next(m for m in row["messages"] if m["role"] == "assistant")
    first["reasoning_content"] += " " + " ".join(f"consider{i}" for i in range(15_000))
    return row


def think_then_stop(seed: int = 10) -> dict:
    # the run ends on a thought without action (the agent gives up before terminating)
    return oro_envelope(seed, edit=lambda plan: [*plan[:-1], ("Maybe I should double-check the price first...",
                                                               [], "")])


def ungrounded(seed: int = 11) -> dict:
    swap = _map_calls(lambda tool, args: (tool, {"product_ids": "9999999999"} if tool == "recommend_product"
                                          else args))
    return oro_envelope(seed, edit=swap)


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
    last = dup["dialogue"][-1]["completion"]
    last["message"]["response"] = last["message"].get("response", "") + " Thanks!"
    last["content"] = last["content"].replace("</response>", " Thanks!</response>")
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
