"""The simulated miner population: policy kinds, their shares, designed gates and the miners.

``DEFAULT_SHARES`` is the share of *traces* per policy kind in the raw firehose (skewed toward
sub-task harnesses, as the real one is). Every kind has a designed reasoning gate (reference
§4) and a structural class; broken kinds keep the gate and class of the agent they break.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from oro_assets.arena.answers import DEFAULT_SHAPE_SHARES, REASONING_MODELS
from oro_assets.arena.policies.agentic import ScriptedAgent
from oro_assets.arena.policies.broken import BrokenAgent
from oro_assets.arena.policies.harness import RegexAgent, ShortcutAgent, SubtaskHarness

# kind -> share of traces. Sums to 1.
DEFAULT_SHARES: dict[str, float] = {
    # sub-task harnesses: 40 %
    "subtask_label": 0.22,
    "subtask_narrate": 0.18,
    # agentic LLM agents across skills: 30 %
    "agentic_compare": 0.10,
    "agentic_datum": 0.08,
    "agentic_vague": 0.06,
    "agentic_restate": 0.06,
    # strongest, teacher-like: 5 %
    "teacher": 0.05,
    # shortcut: 5 %, regex: 8 %
    "shortcut": 0.05,
    "regex": 0.08,
    # broken runs: 12 %
    "broken_timeout": 0.02,
    "broken_crash": 0.02,
    "broken_two_recommends": 0.015,
    "broken_missing_timestamps": 0.015,
    "broken_bad_recommend_args": 0.01,
    "broken_think_then_stop": 0.01,
    "broken_malformed_step": 0.01,
    "broken_truncated_step": 0.01,
    "broken_unpaired_call": 0.005,
    "broken_truncated_line": 0.005,
}

# kind -> (designed gate, structural). Agentic gates are the design; a run whose thinking did
# not realise it (e.g. only one candidate was ever seen) reports its own lower gate.
KIND_INFO: dict[str, tuple[float, str]] = {
    "subtask_label": (0.1, "subtask"),
    "subtask_narrate": (0.3, "subtask"),
    "agentic_compare": (0.9, "agentic"),
    "agentic_datum": (0.7, "agentic"),
    "agentic_vague": (0.5, "agentic"),
    "agentic_restate": (0.3, "agentic"),
    "teacher": (0.9, "agentic"),
    "shortcut": (0.3, "agentic"),
    "regex": (0.1, "no_inference"),
}
for _k in DEFAULT_SHARES:
    if _k.startswith("broken_"):
        KIND_INFO[_k] = (0.9, "agentic")  # broken runs wrap an agentic_compare agent

MODELS = ("qwen3-32b", "qwen3-8b", "deepseek-r1-distill-qwen-14b", "gpt-oss-20b", "llama-3.3-70b-instruct")


def validate_shares(shares: dict[str, float]) -> dict[str, float]:
    unknown = sorted(set(shares) - set(KIND_INFO))
    if unknown:
        raise ValueError(f"unknown policy kind(s) {', '.join(unknown)}; known: {', '.join(sorted(KIND_INFO))}")
    if any(v < 0 for v in shares.values()):
        raise ValueError("policy shares must be >= 0")
    total = sum(shares.values())
    if total <= 0:
        raise ValueError("policy shares must not all be 0")
    return {k: v / total for k, v in shares.items() if v > 0}


@dataclass(frozen=True)
class Miner:
    hotkey: str
    kind: str
    skill: float
    model: str
    agent_versions: tuple[str, ...]
    answer_shape: str = "structured"  # how its agent makes the model write calls (arena/answers.py)
    think_in_reasoning: bool = False  # the provider returns the thinking in reasoning_content
    null_tool_calls: bool = False  # the provider writes "tool_calls": null in text answers

    @property
    def answer_style(self) -> dict:
        return {"think_in_reasoning": self.think_in_reasoning, "null_tool_calls": self.null_tool_calls,
                "reasoning_chars": REASONING_MODELS.get(self.model, 0)}

    @property
    def auto_recommend(self) -> bool:
        """Forks of ORO's reference agent (text-array answers) keep its auto-recommend fallback."""
        return self.answer_shape == "text_array" and self.kind != "regex"


def _answer_shape(seed: int, i: int) -> tuple[str, bool, bool]:
    """A miner's answer shape and provider quirks, from its own hash (the other draws stay as they were)."""
    u = int(_hex(seed, "shape", i, n=12), 16) / 16**12
    acc, shape = 0.0, "structured"
    for name, share in DEFAULT_SHAPE_SHARES.items():
        acc += share
        if u < acc:
            shape = name
            break
    v = int(_hex(seed, "provider", i, n=12), 16) / 16**12
    return shape, v < 0.3, 0.3 <= v < 0.65


def _hex(seed: int, *parts: object, n: int = 32) -> str:
    return hashlib.sha256("|".join(str(p) for p in (seed, *parts)).encode()).hexdigest()[:n]


def _uuid(seed: int, *parts: object) -> str:
    h = _hex(seed, *parts)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _hotkey(seed: int, i: int) -> str:
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    rng = random.Random(int(_hex(seed, "hotkey", i, n=16), 16))
    return "5" + "".join(rng.choice(alphabet) for _ in range(47))


def build_miners(seed: int, shares: dict[str, float], n_miners: int = 40) -> dict[str, list[Miner]]:
    """Miners per kind: at least one per kind, the rest proportional to the shares."""
    kinds = sorted(shares)
    counts = {k: 1 for k in kinds}
    spare = max(0, n_miners - len(kinds))
    exact = {k: spare * shares[k] for k in kinds}
    for k in kinds:
        counts[k] += int(exact[k])
    # largest remainders get the miners the floors left over (ties by name: deterministic)
    left = spare - sum(int(v) for v in exact.values())
    for k in sorted(kinds, key=lambda k: (-(exact[k] - int(exact[k])), k))[:left]:
        counts[k] += 1
    rng = random.Random(seed * 7919 + 15)
    out: dict[str, list[Miner]] = {}
    i = 0
    for k in kinds:
        miners = []
        for _ in range(counts[k]):
            skill = 1.0 if k == "teacher" else round(rng.uniform(0.35, 0.98), 2)
            versions = tuple(_uuid(seed, "agent", i, v) for v in range(1 + rng.randrange(3)))
            shape, in_reasoning, null_calls = _answer_shape(seed, i)
            miners.append(Miner(_hotkey(seed, i), k, skill, rng.choice(MODELS), versions, shape, in_reasoning,
                                null_calls))
            i += 1
        out[k] = miners
    return out


def make_policy(kind: str, problem: dict, *, skill: float, seed: int, model: str = "qwen3-32b"):
    """A fresh per-episode policy of ``kind`` for ``problem``."""
    if kind == "teacher":
        return ScriptedAgent(problem, style="teacher", skill=1.0, seed=seed, model=model, kind="teacher")
    if kind.startswith("agentic_"):
        style = kind.removeprefix("agentic_")
        return ScriptedAgent(problem, style=style, skill=skill, seed=seed, model=model, kind=kind)
    if kind.startswith("subtask_"):
        return SubtaskHarness(problem, variant=kind.removeprefix("subtask_"), skill=skill, seed=seed, model=model)
    if kind == "regex":
        return RegexAgent(problem, seed=seed)
    if kind == "shortcut":
        return ShortcutAgent(problem, seed=seed, model=model)
    if kind.startswith("broken_"):
        return BrokenAgent(problem, defect=kind.removeprefix("broken_"), skill=skill, seed=seed)
    raise ValueError(f"unknown policy kind {kind!r}")


class KindSampler:
    """Draws kinds with the configured shares (cumulative table, one uniform draw)."""

    def __init__(self, shares: dict[str, float]) -> None:
        self.kinds = sorted(shares)
        acc = 0.0
        self.cum = []
        for k in self.kinds:
            acc += shares[k]
            self.cum.append(acc)

    def draw(self, u: float) -> str:
        for k, c in zip(self.kinds, self.cum, strict=True):
            if u < c:
                return k
        return self.kinds[-1]
