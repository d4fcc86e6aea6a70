"""Non-agentic miners: sub-task harnesses, regex agents and shortcut agents.

* :class:`SubtaskHarness` — code drives the tools (the query is copied verbatim into
  ``find_product``, pages are iterated); the LLM only answers yes/no (``label``, designed gate
  0.1: no completion reaches 30 tokens) or narrates generically (``narrate``, gate 0.3).
  Its inference responses never carry tool calls.
* :class:`RegexAgent` — no inference at all (gate 0.1).
* :class:`ShortcutAgent` — the model emits the calls but recommends the ground-truth id without
  it ever appearing in a tool result (gate 0.3: its thinking never analyses results).
"""

from __future__ import annotations

import random
import re
from typing import Any

from oro_assets.arena.answers import REASONING_MODELS
from oro_assets.arena.episode import ToolCall, Turn
from oro_assets.arena.policies.base import (
    STOPWORDS,
    chat_completion,
    last_results,
    llm_turn,
    price_bounds,
    prompt_tokens_of,
)
from oro_assets.toolcalls import FIND_PRODUCT, RECOMMEND_PRODUCT, TERMINATE, VIEW_PRODUCT_INFORMATION

_NARRATIONS = (
    "I am now going through the search step for the customer's request and will look at what the catalogue "
    "returns before deciding which of the options should be passed on to the customer.",
    "The harness has fetched the next set of products. I will consider whether they are suitable for the "
    "shopper's needs, keeping in mind everything that was asked for in the original request.",
    "Continuing with the shopping task: the products are being checked one after another so that the final "
    "recommendation matches what the user is looking for as closely as possible.",
    "This step wraps up the selection. The chosen products will be recommended to the user and the session "
    "will then be closed, as the task is considered complete at this point.",
)


_VERBOSE_PADDING = (
    "Every part of the request matters, so the process keeps all of it in view while the work goes on, "
    "one thing after another, without skipping anything along the way.",
    "It is important that the final choice reflects what the person wants, and the harness will make sure the "
    "answer is passed on in the right way, exactly as it was asked for at the start.",
    "Nothing has been decided yet at this point; the decision will be made once the checking is complete and "
    "the harness has gathered everything it needs to be sure about it.",
    "The person should receive an answer that is useful and relevant, which is why each step is taken "
    "carefully and in the same way as the one before it, following the usual procedure.",
    "Once the process is complete the session will be closed, and the outcome will reflect how closely the "
    "final answer matches what was wanted at the very beginning of the conversation.",
    "This narration describes the progress of the task so far and will be followed by the next step of the "
    "procedure, which continues until everything has been done and the session has ended.",
    "The procedure continues in the same manner for the remaining steps, and the summary of what has been done "
    "so far is kept short and general so that anyone can follow along easily at every stage.",
)


def _items(problem: dict) -> list[dict]:
    reward = problem.get("reward")
    return [reward] if isinstance(reward, dict) else [r for r in reward or [] if isinstance(r, dict)]


class SubtaskHarness:
    structural = "subtask"

    def __init__(self, problem: dict, *, variant: str, skill: float, seed: int, model: str = "qwen2.5-7b") -> None:
        if variant not in ("label", "narrate"):
            raise ValueError(f"unknown sub-task variant {variant!r}")
        self.name = f"subtask_{variant}"
        self.variant = variant
        self.problem = problem
        self.rng = random.Random(seed)
        self.skill = skill
        self.model = model
        self.gt = [str(r.get("product_id")) for r in _items(problem)]
        self.page = 0
        self.step = 0
        self.pending: list[str] = []  # ids viewed, awaiting labels
        self.chosen: list[str] = []
        self.done = False
        self.recommended = False
        # a reasoning model's deliberation clears the judge's 30-token floor even behind a yes/no label
        self.designed_gate = 0.1 if variant == "label" and model not in REASONING_MODELS else 0.3
        self.verbose = variant == "narrate" and self.rng.random() < 0.4

    def _narration(self, messages: list[dict], seed: str) -> tuple[str, dict]:
        text = _NARRATIONS[min(self.step - 1, len(_NARRATIONS) - 1) if self.step < 4 else self.rng.randrange(3)]
        if self.verbose:  # a wordy model: long generic prose (its body is over ORO's 2,000 characters)
            text = " ".join([text, f'The request reads: "{self.problem["query"]}".', *_VERBOSE_PADDING, *_VERBOSE_PADDING[:3]])
        return text, chat_completion(seed=seed, model=self.model, content=text, prompt_tokens=prompt_tokens_of(messages))

    def _label(self, pid: str, messages: list[dict], seed: str) -> dict:
        right = pid in self.gt
        if self.rng.random() > 0.6 + 0.4 * self.skill:
            right = not right
        word = "yes" if right else "no"
        return chat_completion(seed=f"{seed}|{pid}", model=self.model, content=word if self.rng.random() < 0.7 else
                               word.capitalize() + ".", prompt_tokens=180 + len(self.problem["query"]) // 4)

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn:
        self.step += 1
        seed = f"{problem_view['problem_id']}|{self.name}|{self.step}"
        inference: list[dict] = []
        results = last_results(messages)
        think = ""
        if self.pending and results and isinstance(results[0], list):
            # the model labels each viewed candidate
            for pid in self.pending:
                resp = self._label(pid, messages, seed)
                inference.append(resp)
                if resp["choices"][0]["message"]["content"].lower().startswith("yes") and pid not in self.chosen:
                    self.chosen.append(pid)
            self.pending = []
        elif results and isinstance(results[0], list) and self.page > 0 and not self.recommended:
            ids = [str(r["product_id"]) for r in results[0] if isinstance(r, dict) and "product_id" in r][:3]
            if ids:
                self.pending = ids
        if self.variant == "narrate":
            think, resp = self._narration(messages, seed)
            inference.append(resp)
        meta = {"model": self.model, "temperature": 0.0}
        if self.done:
            return Turn(think=think, tool_calls=[ToolCall(TERMINATE, {"status": "success"})], inference=inference,
                        meta=meta)
        if self.pending:
            call = ToolCall(VIEW_PRODUCT_INFORMATION, {"product_ids": ",".join(self.pending)})
            return Turn(think=think, tool_calls=[call], inference=inference, meta=meta)
        if len(self.chosen) >= len(self.gt) or self.page >= 3:
            self.done = self.recommended = True
            ids = self.chosen[: len(self.gt)] or self._fallback(messages)
            return Turn(think=think, tool_calls=[ToolCall(RECOMMEND_PRODUCT, {"product_ids": ",".join(ids)})],
                        inference=inference, meta=meta)
        self.page += 1
        args: dict[str, Any] = {"q": self.problem["query"]}  # copied verbatim by code
        if self.page > 1:
            args["page"] = self.page
        return Turn(think=think, tool_calls=[ToolCall(FIND_PRODUCT, args)], inference=inference, meta=meta)

    def _fallback(self, messages: list[dict]) -> list[str]:
        for m in messages:
            if m.get("role") == "tool" and m.get("name") == FIND_PRODUCT:
                for res in last_results([m]):
                    if isinstance(res, list) and res and isinstance(res[0], dict):
                        return [str(res[0].get("product_id"))]
        return ["0"]


_PRICE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:to|and|-)\s*(\d+(?:\.\d+)?)")


class RegexAgent:
    """Pure code: regex the price, strip stopwords, take the first hit(s). No inference at all."""

    structural = "no_inference"
    designed_gate = 0.1

    def __init__(self, problem: dict, *, seed: int, **_: Any) -> None:
        self.name = "regex"
        self.problem = problem
        self.rng = random.Random(seed)
        self.n_items = max(1, len(_items(problem)))
        self.step = 0
        self.templated = self.rng.random() < 0.5

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn:
        self.step += 1
        q = problem_view["query"]
        if self.step == 1:
            words = [w for w in re.findall(r"[A-Za-z]+", q) if w.lower() not in STOPWORDS][:6]
            args: dict[str, Any] = {"q": " ".join(words) or q}
            m = _PRICE_RE.search(q)
            if m:
                args["price"] = f"{m.group(1)}-{m.group(2)}"
            think = f"parsed: q={args['q']!r} price={args.get('price')}" if self.templated else ""
            return Turn(think=think, tool_calls=[ToolCall(FIND_PRODUCT, args)])
        if self.step == 2:
            res = last_results(messages)
            ids = [str(r["product_id"]) for r in (res[0] if res and isinstance(res[0], list) else [])
                   if isinstance(r, dict)][: self.n_items]
            return Turn(think="pick first" if self.templated else "",
                        tool_calls=[ToolCall(RECOMMEND_PRODUCT, {"product_ids": ",".join(ids) or "0"})])
        return Turn(think="", tool_calls=[ToolCall(TERMINATE, {"status": "success"})])


class ShortcutAgent:
    """Recommends the right ids without them ever appearing in a tool result."""

    structural = "agentic"
    designed_gate = 0.3

    def __init__(self, problem: dict, *, seed: int, model: str = "qwen3-8b", **_: Any) -> None:
        self.name = "shortcut"
        self.problem = problem
        self.rng = random.Random(seed)
        self.model = model
        self.gt = [str(r.get("product_id")) for r in _items(problem)]
        self.search_first = self.rng.random() < 0.6
        self.step = 0

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn:
        self.step += 1
        seed = f"{problem_view['problem_id']}|shortcut|{self.step}"
        q = problem_view["query"].strip()
        plan = self.step if self.search_first else self.step + 1
        if plan == 1:
            words = [w for w in re.findall(r"[A-Za-z]+", q) if w.lower() not in STOPWORDS][-2:] or ["item"]
            args: dict[str, Any] = {"q": " ".join(words), "page": 5}
            lo, hi = price_bounds(_items(self.problem)[0]) if _items(self.problem) else (None, None)
            if hi is not None:  # a filter that excludes the wanted item by construction
                args["price"] = f"{int(hi) + 1}-"
            elif lo is not None and lo > 1:
                args["price"] = f"0-{max(0, int(lo) - 1)}"
            think = (f"The user asks: \"{q}\". I'll run a quick search first to see what the catalogue looks "
                     "like for this request.")
            return llm_turn(think, [ToolCall(FIND_PRODUCT, args)], seed=seed, model=self.model, messages=messages)
        if plan == 2:
            ids = ",".join(self.gt)
            think = (f"The user asks: \"{q}\". I already know the product for this request is {ids}; "
                     f"no further search is needed, so I will recommend it directly.")
            return llm_turn(think, [ToolCall(RECOMMEND_PRODUCT, {"product_ids": ids})], seed=seed,
                            model=self.model, messages=messages)
        return llm_turn(f"The user asked: \"{q}\". The recommendation is done, so I will end the session now.",
                        [ToolCall(TERMINATE, {"status": "success"})], seed=seed, model=self.model, messages=messages)
