"""A local transformers model behind the arena's Policy protocol, with batched generation.

The prompt is the tokenizer's own chat template applied to the canonical messages and the tool
schemas, so a Qwen3 checkpoint and the tiny Qwen3-architecture model take the same path. The
canonical message schema stores tool-call ``arguments`` as JSON strings; HF chat templates want
dicts, so they are converted here, at the edge.

Two generation paths:

* the rollout engine (``agents/engine.py``), used by ``rollout_many`` whenever the model is a torch causal LM:
  each episode keeps its KV cache across turns and samples from its own generator seeded from
  ``(seed, problem id, sample)``, so its samples do not depend on which episodes shared its batch;
* padded HF ``generate`` calls (``act_batch`` outside the engine; generate-only test models, the baseline
  of ``benchmarks/rollouts.py``): every call is seeded from ``(seed, call counter)`` and the random stream
  is shared by the batch.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from oro_assets import jsonio
from oro_assets.agents.toolcall import ParsedOutput, parse_assistant_text


class ContextOverflowError(RuntimeError):
    """The prompt does not fit the model's context window with room to generate (episode reason
    ``context_overflow``)."""

    reason = "context_overflow"


# Set in an episode thread the rollout engine runs: (the policy it serves, ids -> (text, prompt, completion, finish)).
_ENGINE_CALL = threading.local()


def engine_route(policy: Any, generate: Callable[[list[int]], tuple[str, int, int, str]] | None) -> None:
    """Route this thread's model calls of ``policy`` to ``generate`` (None: back to padded ``generate``)."""
    _ENGINE_CALL.route = (policy, generate) if generate is not None else None


@dataclass
class GenerationRequest:
    problem_view: dict
    messages: list[dict]
    tools: list[dict]


def _episode_types():
    # Imported lazily so this module stays importable while the arena package is being built.
    from oro_assets.arena.episode import ToolCall, Turn

    return ToolCall, Turn


def to_template_messages(messages: Sequence[dict]) -> list[dict]:
    """Canonical messages -> what HF chat templates expect (arguments as dicts, no null keys)."""
    out: list[dict] = []
    for msg in messages:
        m: dict[str, Any] = {"role": msg["role"], "content": msg.get("content") or ""}
        if msg.get("reasoning_content"):
            m["reasoning_content"] = msg["reasoning_content"]
        if msg.get("tool_calls"):
            calls = []
            for call in msg["tool_calls"]:
                fn = call.get("function", call)
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = jsonio.loads(args) if args.strip() else {}
                    except jsonio.JSONDecodeError:
                        args = {"_raw": args}
                calls.append({"id": call.get("id"), "type": "function",
                              "function": {"name": fn.get("name", ""), "arguments": args}})
            m["tool_calls"] = calls
        if msg["role"] == "tool":
            if msg.get("tool_call_id"):
                m["tool_call_id"] = msg["tool_call_id"]
            if msg.get("name"):
                m["name"] = msg["name"]
        out.append(m)
    return out


def _seed_for(seed: int, counter: int) -> int:
    digest = hashlib.sha256(f"{seed}:{counter}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class LocalModelPolicy:
    """Policy over a local ``PreTrainedModel`` + tokenizer (Qwen3 chat template and tool calls).

    ``temperature == 0`` means greedy decoding. ``act`` handles one episode; ``act_batch``
    generates for many episodes in one padded ``generate`` call (used by
    :func:`oro_assets.agents.rollout.rollout_many`).
    """

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 0.0, top_p: float = 1.0,
                 max_new_tokens: int = 512, seed: int = 0, name: str | None = None,
                 max_context_tokens: int | None = None, enable_thinking: bool | None = None) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_new_tokens = int(max_new_tokens)
        self.seed = int(seed)
        model_name = getattr(getattr(model, "config", None), "_name_or_path", "") or "local-model"
        self.model_name = str(model_name)
        self.name = name or f"local:{self.model_name}@T{self.temperature:g}"
        ctx = max_context_tokens or getattr(getattr(model, "config", None), "max_position_embeddings", None)
        self.max_context_tokens = int(ctx) if ctx else None
        self.enable_thinking = enable_thinking
        self._counter = 0
        self._lock = threading.Lock()

    # ---- batched generation ----
    def with_sampling(self, *, temperature: float | None = None, top_p: float | None = None,
                      seed: int | None = None, name: str | None = None) -> LocalModelPolicy:
        """A sibling policy sharing the model and tokenizer (e.g. the greedy run next to sampling)."""
        return LocalModelPolicy(
            self.model, self.tokenizer,
            temperature=self.temperature if temperature is None else temperature,
            top_p=self.top_p if top_p is None else top_p,
            max_new_tokens=self.max_new_tokens, seed=self.seed if seed is None else seed,
            name=name, max_context_tokens=self.max_context_tokens, enable_thinking=self.enable_thinking,
        )

    def render_prompt(self, messages: Sequence[dict], tools: Sequence[dict]) -> str:
        kwargs: dict[str, Any] = {"tools": list(tools) or None, "add_generation_prompt": True, "tokenize": False}
        if self.enable_thinking is not None:
            kwargs["enable_thinking"] = self.enable_thinking
        return self.tokenizer.apply_chat_template(to_template_messages(messages), **kwargs)

    def _encode(self, prompt: str) -> list[int]:
        ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        if self.max_context_tokens and len(ids) + self.max_new_tokens > self.max_context_tokens:
            raise ContextOverflowError(
                f"prompt of {len(ids)} tokens + {self.max_new_tokens} new tokens exceeds the "
                f"{self.max_context_tokens}-token context"
            )
        return list(ids)

    def generate_texts(self, prompts: Sequence[str]) -> list[tuple[str, int, int, str]]:
        """Generate for many prompts at once: (text, prompt_tokens, completion_tokens, finish_reason)."""
        return self._generate_ids([self._encode(p) for p in prompts])

    def _generate_ids(self, encoded: Sequence[list[int]]) -> list[tuple[str, int, int, str]]:
        import torch

        if not encoded:
            return []
        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            pad_id = self.tokenizer.eos_token_id
        eos_ids = self._eos_ids()
        width = max(len(e) for e in encoded)
        input_ids = torch.full((len(encoded), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(encoded), width), dtype=torch.long)
        for i, ids in enumerate(encoded):  # left padding: generation continues from the right edge
            input_ids[i, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
            attention[i, width - len(ids):] = 1
        device = getattr(self.model, "device", None)
        if device is not None:
            input_ids, attention = input_ids.to(device), attention.to(device)
        gen_kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens, "pad_token_id": pad_id, "eos_token_id": eos_ids,
        }
        if self.temperature > 0:
            gen_kwargs.update(do_sample=True, temperature=self.temperature, top_p=self.top_p, top_k=0)
        else:
            gen_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with self._lock:
            self._counter += 1
            counter = self._counter
        with torch.no_grad():
            torch.manual_seed(_seed_for(self.seed, counter))
            out = self.model.generate(input_ids=input_ids, attention_mask=attention, **gen_kwargs)
        results = []
        for i, ids in enumerate(encoded):
            new = out[i, width:].tolist()
            finish = "length"
            for j, tok in enumerate(new):
                if tok in eos_ids:
                    new, finish = new[:j], "stop"
                    break
            text = self.tokenizer.decode(new, skip_special_tokens=False)
            results.append((text, len(ids), len(new), finish))
        return results

    def _eos_ids(self) -> list[int]:
        return end_token_ids(self.tokenizer)

    def make_engine(self, config: Any = None) -> Any:
        """A :class:`~oro_assets.agents.engine.RolloutEngine` with this policy's sampling settings, or None when
        the model cannot run in it (generate-only test models)."""
        from oro_assets.agents.engine import RolloutEngine, supports_engine

        if config is not None and config.backend == "vllm":
            from oro_assets.agents.engine_vllm import VLLMEngine

            return VLLMEngine(self.model_name, eos_ids=self._eos_ids(), temperature=self.temperature,
                              top_p=self.top_p, max_new_tokens=self.max_new_tokens, seed=self.seed, config=config,
                              max_model_len=self.max_context_tokens)
        if not supports_engine(self.model):
            return None
        return RolloutEngine(self.model, self.tokenizer, eos_ids=self._eos_ids(), temperature=self.temperature,
                             top_p=self.top_p, max_new_tokens=self.max_new_tokens, seed=self.seed, config=config)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    def act_batch(self, requests: Sequence[GenerationRequest]) -> list:
        """One Turn per request. A request whose prompt cannot be built (e.g. it overflows the
        context) gets its exception in its slot instead of failing the whole batch."""
        route = getattr(_ENGINE_CALL, "route", None)
        if route is not None and route[0] is self:
            return [self._engine_turn(r, route[1]) for r in requests]
        results: list[Any] = [None] * len(requests)
        encoded: list[list[int]] = []
        slots: list[int] = []
        for i, r in enumerate(requests):
            try:
                encoded.append(self._encode(self.render_prompt(r.messages, r.tools)))
                slots.append(i)
            except Exception as exc:  # reported per episode by the caller
                results[i] = exc
        for i, (text, ptok, ctok, finish) in zip(slots, self._generate_ids(encoded), strict=True):
            results[i] = self._turn(text, ptok, ctok, finish)
        return results

    def _engine_turn(self, request: GenerationRequest, generate: Callable[[list[int]], tuple[str, int, int, str]]):
        try:
            ids = self._encode(self.render_prompt(request.messages, request.tools))
        except Exception as exc:  # reported per episode by the caller
            return exc
        return self._turn(*generate(ids))

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]):
        (result,) = self.act_batch([GenerationRequest(problem_view, messages, tools)])
        if isinstance(result, BaseException):
            raise result
        return result

    def _turn(self, text: str, prompt_tokens: int, completion_tokens: int, finish: str):
        ToolCall, Turn = _episode_types()
        parsed = parse_assistant_text(text)
        record = completion_record(parsed, text, model=self.model_name, prompt_tokens=prompt_tokens,
                                   completion_tokens=completion_tokens, finish_reason=finish)
        return Turn(
            think=parsed.think,
            tool_calls=[ToolCall(name=c.name, arguments=dict(c.arguments), raw_arguments=c.raw_arguments)
                        for c in parsed.tool_calls],
            response=parsed.response,
            inference=[record],
            meta={"model": self.model_name, "temperature": self.temperature},
        )


def completion_record(parsed: ParsedOutput, raw_text: str, *, model: str, prompt_tokens: int | None,
                      completion_tokens: int | None, finish_reason: str, call_id_prefix: str = "call") -> dict:
    """An OpenAI chat-completion dict describing what the model said (the episode's inference record)."""
    tool_calls = [
        {"id": f"{call_id_prefix}_{i}", "type": "function",
         "function": {"name": c.name, "arguments": c.raw_arguments if c.raw_arguments is not None
                      else jsonio.template_dumps(c.arguments)}}
        for i, c in enumerate(parsed.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": raw_text, "reasoning_content": parsed.think or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    usage = None
    if prompt_tokens is not None or completion_tokens is not None:
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": (prompt_tokens or 0) + (completion_tokens or 0)}
    return {
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if tool_calls and finish_reason == "stop" else finish_reason}],
        "usage": usage,
        "parse_errors": list(parsed.errors),
    }


def end_token_ids(tokenizer: Any) -> list[int]:
    """The ids that end a turn: Qwen3's ``<|im_end|>`` and ``<|endoftext|>`` where the vocabulary has them, and the
    tokenizer's own eos."""
    ids: list[int] = []
    for tok in ("<|im_end|>", "<|endoftext|>"):
        tid = tokenizer.convert_tokens_to_ids(tok)
        if isinstance(tid, int) and tid >= 0 and tid != tokenizer.unk_token_id:
            ids.append(tid)
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids
