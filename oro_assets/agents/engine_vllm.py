"""vLLM behind the rollout engine's interface (optional extra, GPU only; not installed on the CPU machines).

``VLLMEngine`` has :class:`~oro_assets.agents.engine.RolloutEngine`'s ``new_seq`` / ``set_prompt`` / ``run`` /
``complete``, so ``rollout_many`` and Dr. GRPO drive it unchanged (``EngineConfig(backend="vllm")``). vLLM
batches continuously inside each ``generate`` call and reuses every episode's earlier turns through its prefix
cache (``enable_prefix_caching``); episodes are served in rounds (all waiting sequences per call), and each
sequence samples with its own seed, ``episode_seed(seed, key) + turn``.

Not measured here (no GPU in this project's sessions so far): episodes/s against the torch engine remain to be
recorded by ``scripts/gpu_qwen3_4b_check.py`` on a GPU machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from oro_assets.agents.engine import EngineConfig, EngineStats, _Seq, episode_seed


def vllm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


class VLLMEngine:
    """The rollout engine's interface over ``vllm.LLM`` (weights loaded from ``model_path``)."""

    def __init__(self, model_path: str, *, eos_ids: Sequence[int], temperature: float = 0.0, top_p: float = 1.0,
                 max_new_tokens: int = 256, seed: int = 0, config: EngineConfig | None = None,
                 dtype: str = "bfloat16", max_model_len: int | None = None) -> None:
        if not vllm_available():
            raise RuntimeError("vllm is not installed: pip install vllm on a CUDA machine, or use the torch engine")
        from vllm import LLM

        self.llm = LLM(model=str(model_path), dtype=dtype, enable_prefix_caching=True, max_model_len=max_model_len,
                       seed=seed)
        self.eos = [int(e) for e in eos_ids]
        self.temperature, self.top_p = float(temperature), float(top_p)
        self.max_new_tokens, self.seed = int(max_new_tokens), int(seed)
        self.config = config or EngineConfig(backend="vllm")
        self.stats = EngineStats()

    def new_seq(self, key: str, owner: Any = None) -> _Seq:
        return _Seq(key, None, owner)

    def set_prompt(self, seq: _Seq, ids: Sequence[int]) -> None:
        seq.cached, seq.feed, seq.out, seq.prompt_tokens = [], list(ids), [], len(ids)

    def _params(self, seq: _Seq, turn: int):
        from vllm import SamplingParams

        return SamplingParams(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_new_tokens,
                              stop_token_ids=self.eos, seed=(episode_seed(self.seed, seq.key) + turn) % (1 << 63))

    def run(self, next_seq: Callable[[], _Seq | None], answer: Callable[[_Seq, list[int], str], None],
            resume: Callable[[_Seq], bool]) -> None:
        waiting: list[_Seq] = []
        turns: dict[int, int] = {}
        exhausted = False
        while True:
            while not exhausted and len(waiting) < self.config.max_episodes:
                seq = next_seq()
                if seq is None:
                    exhausted = True
                else:
                    waiting.append(seq)
            if not waiting:
                return
            prompts = [{"prompt_token_ids": s.feed} for s in waiting]
            params = [self._params(s, turns.get(id(s), 0)) for s in waiting]
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            for seq, result in zip(waiting, outputs, strict=True):
                comp = result.outputs[0]
                tokens = [t for t in comp.token_ids if t not in self.eos]
                finish = "length" if comp.finish_reason == "length" else "stop"
                self.stats.turns += 1
                self.stats.generated_tokens += len(tokens)
                self.stats.prefill_tokens += len(seq.feed)
                turns[id(seq)] = turns.get(id(seq), 0) + 1
                answer(seq, tokens, finish)
            waiting = [seq for seq in waiting if resume(seq)]

    def complete(self, prompts: Sequence[Sequence[int]], keys: Sequence[str]) -> list[tuple[list[int], str]]:
        if len(prompts) != len(keys):
            raise ValueError("one key per prompt")
        seqs = [self.new_seq(str(k), owner=i) for i, k in enumerate(keys)]
        for s, p in zip(seqs, prompts, strict=True):
            self.set_prompt(s, p)
        results: list[tuple[list[int], str] | None] = [None] * len(seqs)
        queue = list(reversed(seqs))

        def answer(seq: _Seq, tokens: list[int], finish: str) -> None:
            results[seq.owner] = (tokens, finish)

        self.run(lambda: queue.pop() if queue else None, answer, lambda seq: False)
        return [r for r in results if r is not None]
