"""Broken runs: an agentic miner with one defect.

Policy-level defects change what happens in the episode (timeouts, crashes, two recommends,
unparseable recommend arguments, think-then-stop). Record-level defects (missing timestamps,
malformed or truncated steps, unpaired calls, a truncated JSON line) are applied by
:func:`apply_render_defect` to the rendered ORO dialogue / line, as a broken harness would write them.
"""

from __future__ import annotations

import random

from oro_assets.arena.episode import ToolCall, Turn
from oro_assets.arena.policies.agentic import ScriptedAgent
from oro_assets.toolcalls import RECOMMEND_PRODUCT, TERMINATE

POLICY_DEFECTS = ("timeout", "crash", "two_recommends", "bad_recommend_args", "think_then_stop")
RENDER_DEFECTS = ("missing_timestamps", "malformed_step", "truncated_step", "unpaired_call", "truncated_line")
DEFECTS = POLICY_DEFECTS + RENDER_DEFECTS


class BrokenAgent:
    """Wraps a :class:`ScriptedAgent`; the defect fires at the natural point of the run."""

    def __init__(self, problem: dict, *, defect: str, skill: float, seed: int, style: str = "compare") -> None:
        if defect not in DEFECTS:
            raise ValueError(f"unknown defect {defect!r}; known: {', '.join(DEFECTS)}")
        self.defect = defect
        self.name = f"broken_{defect}"
        self.base = ScriptedAgent(problem, style=style, skill=skill, seed=seed, kind=self.name)
        self.rng = random.Random(seed ^ 0x5EED)
        self.structural = self.base.structural
        self.step = 0
        self.fire_at = 2 + self.rng.randrange(2)
        self._recommended_once = False

    @property
    def designed_gate(self) -> float:
        return self.base.designed_gate

    @property
    def render_defect(self) -> str | None:
        return self.defect if self.defect in RENDER_DEFECTS else None

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn:
        self.step += 1
        if self.defect == "crash" and self.step == self.fire_at:
            raise RuntimeError(self.rng.choice([
                "KeyError: 'product_id'", "JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
                "httpx.ReadTimeout: timed out", "IndexError: list index out of range"]))
        turn = self.base.act(problem_view, messages, tools)
        if self.defect == "timeout" and self.step == self.fire_at:
            turn.meta["stall_ms"] = 310_000.0  # the model hangs past ORO's 300 s
        names = [c.name for c in turn.tool_calls]
        if RECOMMEND_PRODUCT in names:
            if self.defect == "think_then_stop":
                turn.tool_calls = []
                turn.think += "\nLet me think about whether this is really the best option before recommending."
                _strip_calls(turn)
            elif self.defect == "bad_recommend_args":
                for c in turn.tool_calls:
                    if c.name == RECOMMEND_PRODUCT:
                        ids = str(c.arguments.get("product_ids", ""))
                        c.raw_arguments = self.rng.choice([
                            f"{{'product_ids': {ids}}}", f"product_ids={ids}", f'{{"product_ids": "{ids}"',
                        ])
                _set_inference_args(turn)
            elif self.defect == "two_recommends":
                self._recommended_once = True
        elif self.defect == "two_recommends" and self._recommended_once and TERMINATE in names:
            # recommend again (the same ids, re-ordered when there are several) before terminating
            ids = self.base.recommended or []
            again = ",".join(list(reversed(ids)) if len(ids) > 1 else ids)
            turn.tool_calls.insert(0, ToolCall(RECOMMEND_PRODUCT, {"product_ids": again}))
            turn.think = "On second thought I will re-send the recommendation to be sure."
            self._recommended_once = False
            _set_inference_args(turn)
        return turn


def _strip_calls(turn: Turn) -> None:
    for resp in turn.inference:
        msg = resp["choices"][0]["message"]
        msg.pop("tool_calls", None)
        msg["reasoning_content"] = turn.think
        resp["choices"][0]["finish_reason"] = "stop"


def _set_inference_args(turn: Turn) -> None:
    """Keep the inference response consistent with the (altered) calls the model emitted."""
    for resp in turn.inference:
        msg = resp["choices"][0]["message"]
        msg["reasoning_content"] = turn.think
        msg["tool_calls"] = [
            {"id": f"call_{i}{resp['id'][-8:]}", "type": "function",
             "function": {"name": c.name, "arguments": c.arguments_json()}}
            for i, c in enumerate(turn.tool_calls)
        ]


def apply_render_defect(defect: str | None, dialogue: list[dict], rng: random.Random) -> list[dict]:
    """Damage the steps a broken agent returns (in place, and return them), before ORO's harness
    completes and buckets them: only what an agent's own code can get wrong."""
    if not defect or not dialogue:
        return dialogue
    if defect == "missing_timestamps":
        if rng.random() < 0.5:
            # steps written without a stamp: the harness stamps them when it writes the envelope
            for step in dialogue:
                if rng.random() < 0.5:
                    step["extra_info"].pop("timestamp", None)
            dialogue[-1]["extra_info"].pop("timestamp", None)
        else:
            for step in dialogue:  # time.time() in seconds instead of milliseconds
                ts = step["extra_info"].get("timestamp")
                if isinstance(ts, int):
                    step["extra_info"]["timestamp"] = round(ts / 1000.0, 3)
    elif defect == "malformed_step":
        k = rng.randrange(len(dialogue))
        step = dialogue[k]
        if rng.random() < 0.5:
            step["completion"]["message"] = step["completion"]["content"]  # a string where an object belongs
        else:
            step.pop("completion")
    elif defect in ("truncated_step", "unpaired_call"):
        with_calls = [s for s in dialogue if s["completion"]["message"].get("tool_call")]
        if with_calls:
            step = with_calls[rng.randrange(len(with_calls))] if defect == "unpaired_call" else with_calls[-1]
            call = step["completion"]["message"]["tool_call"][-1]
            call.pop("result", None)
            if defect == "truncated_step":
                step["completion"]["content"] = step["completion"]["content"][: max(10, len(step["completion"]["content"]) // 2)]
    return dialogue


def truncate_line(line: bytes, rng: random.Random) -> bytes:
    """A line cut mid-record (a writer killed while flushing): not valid JSON any more."""
    cut = max(1, int(len(line) * (0.3 + 0.6 * rng.random())))
    return line[:cut]
