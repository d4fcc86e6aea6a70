"""The rollout engine: many multi-turn episodes on one local model, each episode's KV cache kept across its turns.

Evaluation, rejection sampling and Dr. GRPO generate through this module (``rollout_many`` drives it for a
``LocalModelPolicy``; :meth:`RolloutEngine.complete` serves single-turn prompts). What it does differently from
padded HF ``generate`` calls per round:

* **KV cache kept across turns.** Each episode owns a slot of a slot-major KV buffer
  (``[slots, kv_heads, capacity, head_dim]`` per layer) and writes at its own length. A new turn's prompt is
  rendered and tokenized in full exactly as before (so the model sees the same tokens as a full re-render);
  only the tokens after the longest common prefix with what is cached are run through the model - the tool
  result and the next assistant header, or, where the template renders the model's own turn differently from
  what it generated, from the first differing token on.
* **Continuous batching.** A finished episode leaves its slot at once and the next job takes it; a turn that
  ends hands its episode back to the arena's loop while the other slots keep decoding.
* **Batch size by tokens.** New episodes are admitted while the resident tokens (cache + generation budget
  per episode) stay under ``max_batch_tokens`` (and at most ``max_episodes`` run at once).
* **Per-episode sampling.** Every episode samples from its own generator (``random.Random``) seeded from
  ``(seed, problem id, sample)``, so its samples do not depend on which episodes shared its batch.
* **Shared prompt prefix.** The system prompt and tool schemas every first turn starts with are computed once
  and copied into each new slot.

Episodes run in the arena's own ``run_episode`` (same loop limits, messages and recording), one thread per
resident episode; the engine thread serves their model calls and waits for each episode it answered to come
back (its next request or its end) before the next forward, so the schedule is a function of the model's
outputs alone. A prompt that does not fit the context ends its episode (``failed``, error reason
``context_overflow``); a generation without an end token is cut at ``max_new_tokens`` (``finish_reason``
``length``) and scored as it stands.
"""

from __future__ import annotations

import hashlib
import inspect
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

CONTEXT_OVERFLOW = "context_overflow"


@dataclass(frozen=True)
class EngineConfig:
    """Scheduling knobs (outcomes do not depend on them beyond float rounding).

    ``max_batch_tokens``: resident tokens (cache + ``max_new_tokens`` per episode) above which no new episode is
    admitted. ``max_episodes``: episodes resident at once. ``prefill_tokens``: padded tokens per prefill forward.
    ``backend``: ``torch`` (this module) or ``vllm`` (``engine_vllm.py``, an optional extra on GPU machines).
    """

    max_batch_tokens: int = 96_000
    # 192, not 96: more decode rows per forward amortise the per-step Python work (a sampled run of 240 tiny
    # episodes, idle 2-core box, 1 thread: 13.3 s at 96, 12.8 s at 192; 2 threads 11.2 s vs 9.7 s);
    # max_batch_tokens still bounds the cache.
    max_episodes: int = 192
    prefill_tokens: int = 8192
    backend: str = "torch"
    # torch intra-op threads while the engine runs on the CPU (None: the caller's). One: the tiny model's matrices are
    # too small to split, and on shared cores a second thread waits for its turn at every op (a sampled run of 120
    # episodes, 2-core box under load: 123 s on 2 threads, 12 s on 1).
    cpu_threads: int | None = 1
    # Run Qwen3/Qwen2/Llama decoders through FusedDecoder (the same ops on the model's own weights, without the
    # modules' per-call overhead: on the tiny model a decode step was ~4/5 framework overhead). False: the model's
    # own decoder forward.
    fused: bool = True

    def __post_init__(self) -> None:
        if self.max_batch_tokens < 1 or self.max_episodes < 1 or self.prefill_tokens < 1:
            raise ValueError(f"EngineConfig fields must be >= 1, got {self}")
        if self.backend not in ("torch", "vllm"):
            raise ValueError(f"unknown engine backend {self.backend!r}; accepted: torch, vllm")


@dataclass
class EngineStats:
    forwards: int = 0
    prefill_tokens: int = 0       # prompt tokens run through the model (after cache and prefix reuse)
    reused_tokens: int = 0        # prompt tokens served from a cache instead
    generated_tokens: int = 0
    turns: int = 0
    rerender_mismatches: int = 0  # turns whose re-render diverged inside the model's own previous output
    peak_episodes: int = 0
    batch_rows: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        rows = self.batch_rows
        return {"forwards": self.forwards, "prefill_tokens": self.prefill_tokens, "reused_tokens": self.reused_tokens,
                "generated_tokens": self.generated_tokens, "turns": self.turns,
                "rerender_mismatches": self.rerender_mismatches, "peak_episodes": self.peak_episodes,
                "mean_decode_rows": round(sum(rows) / len(rows), 2) if rows else 0.0}


def episode_seed(seed: int, key: str) -> int:
    """The sampling seed of one episode (or one completion): a function of the run seed and its own key only."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def supports_engine(model: Any) -> bool:
    """True for a torch causal LM whose decoder takes a cache object and full-attention masks (HF Qwen3, Llama...)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency of every model path
        return False
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_output_embeddings"):
        return False
    try:
        decoder = model.get_decoder()
    except Exception:
        return False
    layer_types = getattr(getattr(model, "config", None), "layer_types", None) or ["full_attention"]
    params = inspect.signature(decoder.forward).parameters
    return set(layer_types) == {"full_attention"} and ("cache" in params or "past_key_values" in params)


# ----------------------------------------------------------------------------------------------- KV cache
class SlotKVCache:
    """Per-layer K/V buffers ``[slots, kv_heads, capacity, head_dim]``; each batch row writes at its own positions.

    Before a forward the runner sets ``rows`` (slot of each batch row; ``None`` = slots ``0..b-1``), ``index``
    (absolute write position of each query token, ``[b, q]``) and ``kv_len`` (keys each row may see, padded).
    The decoder's attention layers call :meth:`update` (the HF ``Cache`` protocol's one method they use).
    """

    def __init__(self, n_layers: int, kv_heads: int, head_dim: int, dtype: Any, device: Any) -> None:
        self.n_layers, self.kv_heads, self.head_dim = n_layers, kv_heads, head_dim
        self.dtype, self.device = dtype, device
        self.slots = 0
        self.capacity = 0
        self.k: list[Any] = []
        self.v: list[Any] = []
        self.rows: Any = None
        self.index: Any = None
        self.kv_len = 0

    def ensure(self, slots: int, capacity: int) -> None:
        import torch

        if slots <= self.slots and capacity <= self.capacity:
            return
        new_slots = max(slots, self.slots * 2 if slots > self.slots else self.slots, 8)
        new_cap = max(capacity, self.capacity * 2 if capacity > self.capacity else self.capacity, 256)
        new_cap = -(-new_cap // 128) * 128
        shape = (new_slots, self.kv_heads, new_cap, self.head_dim)
        k = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(self.n_layers)]
        v = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(self.n_layers)]
        for old, new in ((self.k, k), (self.v, v)):
            for o, n in zip(old, new, strict=False):
                n[: self.slots, :, : self.capacity] = o
        self.k, self.v, self.slots, self.capacity = k, v, new_slots, new_cap

    def move(self, src: int, dst: int, length: int) -> None:
        for buf in (*self.k, *self.v):
            buf[dst, :, :length] = buf[src, :, :length]

    def copy_in(self, dst: int, layers_kv: Sequence[tuple[Any, Any]], length: int) -> None:
        for (pk, pv), k, v in zip(layers_kv, self.k, self.v, strict=True):
            k[dst, :, :length] = pk[:, :length]
            v[dst, :, :length] = pv[:, :length]

    def snapshot(self, slot: int, length: int) -> list[tuple[Any, Any]]:
        return [(k[slot, :, :length].clone(), v[slot, :, :length].clone()) for k, v in zip(self.k, self.v, strict=True)]

    def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        kb, vb = self.k[layer_idx], self.v[layer_idx]
        b, h, q, d = key_states.shape
        if self.rows is None:
            idx = self.index[:, None, :, None].expand(b, h, q, d)
            kb[:b].scatter_(2, idx, key_states)
            vb[:b].scatter_(2, idx, value_states)
            return kb[:b, :, : self.kv_len], vb[:b, :, : self.kv_len]
        rows = self.rows[:, None].expand(b, q)
        kb[rows, :, self.index] = key_states.transpose(1, 2)
        vb[rows, :, self.index] = value_states.transpose(1, 2)
        return kb[self.rows, :, : self.kv_len], vb[self.rows, :, : self.kv_len]


#: decoder families whose layer is RMSNorm -> attention (optional q/k norm, RoPE) -> RMSNorm -> SiLU-gated MLP
FUSED_MODEL_TYPES = frozenset({"qwen3", "qwen2", "llama"})


class FusedDecoder:
    """The decoder's forward written out on the model's own weights: the same operations as the HF modules (RMSNorm
    in float32, default RoPE, SDPA with the runner's additive mask, SiLU-gated MLP), without the per-module Python
    overhead that dominates a small model's decode step. :meth:`supports` says when a model qualifies; anything
    else runs the model's own decoder."""

    def __init__(self, model: Any) -> None:
        dec, cfg = model.get_decoder(), model.config
        self.embed = dec.embed_tokens.weight
        self.layers = []
        for layer in dec.layers:
            a, m = layer.self_attn, layer.mlp
            self.layers.append((
                (layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon),
                (a.q_proj.weight, a.q_proj.bias), (a.k_proj.weight, a.k_proj.bias), (a.v_proj.weight, a.v_proj.bias),
                (a.o_proj.weight, a.o_proj.bias),
                _norm(getattr(a, "q_norm", None)), _norm(getattr(a, "k_norm", None)),
                (layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon),
                m.gate_proj.weight, m.up_proj.weight, m.down_proj.weight))
        self.final = (dec.norm.weight, dec.norm.variance_epsilon)
        self.inv_freq = dec.rotary_emb.inv_freq
        self.rope_scale = float(getattr(dec.rotary_emb, "attention_scaling", 1.0))
        self.lm_head = model.get_output_embeddings().weight
        self.heads = cfg.num_attention_heads
        self.kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.scale = self.head_dim ** -0.5
        self.dtype = self.embed.dtype

    @staticmethod
    def supports(model: Any) -> bool:
        cfg = getattr(model, "config", None)
        rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
        try:
            import torch

            dec = model.get_decoder()
            # plain nn.Linear projections only: an adapter (LoRA) or a quantised layer computes something else
            linears = [m for layer in dec.layers for m in (*layer.self_attn.children(), *layer.mlp.children())
                       if isinstance(m, torch.nn.Linear)]
            plain_layers = len(linears) == 7 * len(dec.layers) and all(type(m) is torch.nn.Linear for m in linears)
            plain_layers = plain_layers and type(model.get_output_embeddings()) is torch.nn.Linear
        except Exception:
            return False
        return (getattr(cfg, "model_type", None) in FUSED_MODEL_TYPES and getattr(cfg, "hidden_act", None) == "silu"
                and rope.get("rope_type", "default") == "default" and not getattr(cfg, "use_sliding_window", False)
                and not getattr(cfg, "mlp_bias", False) and plain_layers
                and getattr(dec, "rotary_emb", None) is not None
                and getattr(cfg, "_attn_implementation", "sdpa") in ("sdpa", "eager", None))

    @staticmethod
    def _rms(x: Any, weight: Any, eps: float) -> Any:
        import torch

        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        return weight * h.to(dtype)

    @staticmethod
    def _rotate(x: Any, cos: Any, sin: Any) -> Any:
        import torch

        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

    def forward(self, cache: SlotKVCache, ids: Any, pos: Any, mask: Any, last: Any) -> Any:
        """Logits (float32) after token ``last[i]`` of each row; writes the rows' K/V into ``cache`` (its ``rows``,
        ``index`` and ``kv_len`` set by the runner, as for :meth:`SlotKVCache.update`)."""
        import torch
        import torch.nn.functional as F

        b, q = ids.shape
        x = F.embedding(ids, self.embed)
        freqs = pos[..., None].float() * self.inv_freq.float()
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * self.rope_scale).to(self.dtype)[:, None]
        sin = (emb.sin() * self.rope_scale).to(self.dtype)[:, None]
        gqa = self.heads != self.kv_heads
        for li, (n1, wq, wk, wv, wo, qn, kn, n2, gate, up, down) in enumerate(self.layers):
            h = self._rms(x, *n1)
            qs = F.linear(h, *wq).view(b, q, self.heads, self.head_dim)
            ks = F.linear(h, *wk).view(b, q, self.kv_heads, self.head_dim)
            vs = F.linear(h, *wv).view(b, q, self.kv_heads, self.head_dim).transpose(1, 2)
            if qn is not None:
                qs = self._rms(qs, *qn)
            if kn is not None:
                ks = self._rms(ks, *kn)
            qs = self._rotate(qs.transpose(1, 2), cos, sin)
            ks = self._rotate(ks.transpose(1, 2), cos, sin)
            keys, values = cache.update(ks, vs, li)
            o = F.scaled_dot_product_attention(qs, keys, values, attn_mask=mask, scale=self.scale, enable_gqa=gqa)
            x = x + F.linear(o.transpose(1, 2).reshape(b, q, -1), *wo)
            h = self._rms(x, *n2)
            x = x + F.linear(F.silu(F.linear(h, gate)) * F.linear(h, up), down)
        x = self._rms(x[torch.arange(b), last], *self.final)
        return F.linear(x, self.lm_head).float()


def _norm(module: Any) -> tuple[Any, float] | None:
    return None if module is None else (module.weight, module.variance_epsilon)


class ModelRunner:
    """One forward of the model over some slots: rows feed ``q_i`` new tokens after ``start_i`` cached ones."""

    def __init__(self, model: Any, fused: bool = True) -> None:
        import torch

        self.model = model
        self.fused = FusedDecoder(model) if fused and FusedDecoder.supports(model) else None
        self.decoder = model.get_decoder()
        self.lm_head = model.get_output_embeddings()
        cfg = model.config
        params = next(model.parameters())
        self.device, self.dtype = params.device, params.dtype
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        self.cache = SlotKVCache(cfg.num_hidden_layers, kv_heads, head_dim, self.dtype, self.device)
        self.layer_types = set(getattr(cfg, "layer_types", None) or ["full_attention"])
        self.cache_arg = "cache" if "cache" in inspect.signature(self.decoder.forward).parameters else "past_key_values"
        self._neg = torch.finfo(self.dtype).min

    def forward(self, slots: Sequence[int] | None, feeds: Sequence[Sequence[int]], starts: Sequence[int]) -> Any:
        """Logits (float32, ``[b, vocab]``) after each row's last fed token. ``slots=None``: rows are slots 0..b-1."""
        import torch

        b = len(feeds)
        q = max(len(f) for f in feeds)
        dev = self.device
        ids = torch.tensor([list(f) + [0] * (q - len(f)) for f in feeds], dtype=torch.long)
        start = torch.as_tensor(list(starts), dtype=torch.long)
        steps = torch.arange(q)
        pos = start[:, None] + steps[None, :]                     # [b, q] absolute positions
        kv_len = int(pos.max()) + 1
        n_slots = (max(slots) + 1) if slots is not None else b
        self.cache.ensure(n_slots, kv_len)
        keys = torch.arange(kv_len)
        allowed = keys[None, None, :] <= pos[:, :, None]          # causal over each row's own cache
        mask = torch.where(allowed[:, None], 0.0, self._neg).to(self.dtype)
        self.cache.rows = None if slots is None else torch.as_tensor(list(slots), dtype=torch.long, device=dev)
        self.cache.index = pos.to(dev)
        self.cache.kv_len = kv_len
        mask = mask.to(dev)
        kwargs = {self.cache_arg: self.cache}
        return self._forward(ids, mask, pos, feeds, b, kwargs)

    def _forward(self, ids: Any, mask: Any, pos: Any, feeds: Sequence[Sequence[int]], b: int,
                 kwargs: dict[str, Any]) -> Any:
        import torch

        dev = self.device
        with torch.inference_mode():
            if self.fused is not None:
                last = torch.as_tensor([len(f) - 1 for f in feeds], dtype=torch.long, device=dev)
                logits = self.fused.forward(self.cache, ids.to(dev), pos.to(dev), mask, last)
                self.cache.rows = self.cache.index = None
                return logits
            out = self.decoder(input_ids=ids.to(dev), attention_mask={t: mask for t in self.layer_types},
                               position_ids=pos.to(dev), use_cache=True, **kwargs)
            hidden = out.last_hidden_state
            last = torch.as_tensor([len(f) - 1 for f in feeds], dtype=torch.long, device=dev)
            picked = hidden[torch.arange(b, device=dev), last]
            logits = self.lm_head(picked).float()
        self.cache.rows = self.cache.index = None
        # Logits stay on the model's device: sampling there, only the picked ids come back. On a GPU with Qwen3's
        # 151,936-token vocabulary the top-p sort on the CPU cost ~180 ms of CPU per 8-row decode step.
        return logits


def sample_tokens(logits: Any, temperature: float, top_p: float, generators: Sequence[Any]) -> list[int]:
    """One token per row: argmax at temperature 0, else temperature + top-p (HF's warper rule) sampled with the
    row's own generator (a ``random.Random``)."""
    import torch

    if temperature <= 0:
        return logits.argmax(dim=-1).tolist()
    scores = logits / temperature
    if top_p < 1.0:
        sorted_logits, sorted_idx = torch.sort(scores, descending=False)
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove = cum <= (1 - top_p)
        remove[..., -1:] = False
        scores = scores.masked_fill(remove.scatter(1, sorted_idx, remove), float("-inf"))
    # Inverse-CDF sampling with one uniform draw from each row's own generator (a per-row torch.multinomial costs
    # ~0.4 ms on a 3k vocabulary, a per-row torch.rand ~10 us; this is one vectorised search). right=True never lands
    # on a zero-probability token; float64 keeps a draw just under 1 from rounding up to the total.
    cdf = scores.softmax(dim=-1).cumsum(dim=-1).double()
    u = torch.tensor([g.random() for g in generators], dtype=torch.float64, device=cdf.device)
    picked = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True).squeeze(1)
    return picked.clamp_(max=cdf.shape[-1] - 1).tolist()


# ----------------------------------------------------------------------------------------------- sequences
class _Seq:
    """One resident sequence (an episode across its turns, or one completion)."""

    __slots__ = ("key", "slot", "cached", "sampled", "feed", "feed_sampled", "out", "gen", "prompt_tokens", "owner",
                 "finish", "stop_token")

    def __init__(self, key: str, gen: Any, owner: Any) -> None:
        self.key = key
        self.slot = -1
        self.cached: list[int] = []   # tokens whose K/V are in the slot
        self.sampled: list[bool] = []  # per cached token: the model sampled it (not a prompt token)
        self.feed: list[int] = []     # tokens to run next (the last one's logits give the next token)
        self.feed_sampled = False
        self.out: list[int] = []      # tokens generated in the current turn
        self.gen = gen
        self.prompt_tokens = 0
        self.owner = owner            # the driver's handle (episode thread) or None
        self.finish = ""              # the last turn's finish reason (stop | length)
        self.stop_token: int | None = None  # the end token that stopped the last turn

    def trace(self) -> tuple[list[int], list[int]]:
        """The sequence as the model last saw it, its last turn's output and end token included, with a mask of
        1 where the model sampled the token (0: prompt, tool results, template). A token the template later
        re-rendered differently is the re-rendered one, masked 0."""
        ids, mask = list(self.cached), [int(x) for x in self.sampled]
        if self.finish == "length" and self.out:
            ids.append(self.out[-1])
            mask.append(1)
        elif self.finish == "stop" and self.stop_token is not None:
            ids.append(self.stop_token)
            mask.append(1)
        return ids, mask


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class RolloutEngine:
    """Continuous-batching generation over one model with per-sequence KV caches (see the module doc).

    ``eos_ids`` end a turn; ``temperature`` 0 is greedy; ``seed`` with each sequence's key seeds its sampler.
    """

    def __init__(self, model: Any, tokenizer: Any, *, eos_ids: Sequence[int], temperature: float = 0.0,
                 top_p: float = 1.0, max_new_tokens: int = 256, seed: int = 0,
                 config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.runner = ModelRunner(model, fused=self.config.fused)
        self.tokenizer = tokenizer
        self.eos = frozenset(int(e) for e in eos_ids)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_new_tokens = int(max_new_tokens)
        self.seed = int(seed)
        self.stats = EngineStats()
        self._prefix: tuple[list[int], list[tuple[Any, Any]]] | None = None

    # -- sequences ----------------------------------------------------------------------------------------
    def new_seq(self, key: str, owner: Any = None) -> _Seq:
        gen = random.Random(episode_seed(self.seed, key)) if self.temperature > 0 else None
        return _Seq(key, gen, owner)

    def set_prompt(self, seq: _Seq, ids: Sequence[int]) -> None:
        """The sequence's whole prompt for its next turn; only what differs from the cache is fed."""
        ids = list(ids)
        keep = min(_lcp(seq.cached, ids), len(ids) - 1)
        if seq.cached and keep < len(seq.cached) - 1:
            self.stats.rerender_mismatches += 1
        seq.cached = ids[:keep]
        del seq.sampled[keep:]
        seq.feed = ids[keep:]
        seq.feed_sampled = False
        seq.out = []
        seq.prompt_tokens = len(ids)
        self.stats.reused_tokens += keep
        self.stats.prefill_tokens += len(seq.feed)

    def _resident_tokens(self, active: Sequence[_Seq]) -> int:
        return sum(len(s.cached) + len(s.feed) + self.max_new_tokens for s in active)

    def _place(self, seq: _Seq, slot: int) -> None:
        seq.slot = slot
        if seq.cached or self._prefix is None:
            return
        ids, kv = self._prefix
        n = min(_lcp(ids, seq.feed), len(seq.feed) - 1)
        if n >= 8:
            self.runner.cache.ensure(slot + 1, n + 1)
            self.runner.cache.copy_in(slot, kv, n)
            seq.cached, seq.feed = seq.feed[:n], seq.feed[n:]
            seq.sampled = [False] * n
            self.stats.reused_tokens += n
            self.stats.prefill_tokens -= n

    # -- the loop ------------------------------------------------------------------------------------------
    def run(self, next_seq: Callable[[], _Seq | None], answer: Callable[[_Seq, list[int], str], None],
            resume: Callable[[_Seq], bool]) -> None:
        """Serve sequences until ``next_seq`` has none left and every resident one is released.

        ``next_seq()`` gives a new sequence with its first prompt set (or None). Each ended turn is handed out
        with ``answer(seq, tokens, finish)`` (not blocking: every turn that ended in a step is answered before
        any is waited for, so their episodes run their tools side by side); then ``resume(seq)`` returns True
        when the sequence continues (after calling :meth:`set_prompt`) or False to release its slot.
        """
        import torch

        threads = torch.get_num_threads()
        pin = self.config.cpu_threads if self.runner.device.type == "cpu" else None
        if pin and pin != threads:
            torch.set_num_threads(pin)
        try:
            self._loop(next_seq, answer, resume)
        finally:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)

    def _loop(self, next_seq: Callable[[], _Seq | None], answer: Callable[[_Seq, list[int], str], None],
              resume: Callable[[_Seq], bool]) -> None:
        cfg = self.config
        active: list[_Seq] = []
        held: _Seq | None = None
        exhausted = False
        while True:
            while not exhausted and len(active) < cfg.max_episodes:
                seq = held if held is not None else next_seq()
                held = None
                if seq is None:
                    exhausted = True
                    break
                need = len(seq.feed) + self.max_new_tokens
                if active and self._resident_tokens(active) + need > cfg.max_batch_tokens:
                    held = seq
                    break
                self._place(seq, len(active))
                active.append(seq)
                if self._prefix is None and not seq.cached:
                    break  # its prompt becomes the shared prefix the next admissions copy
            if not active:
                if held is None and exhausted:
                    return
                continue
            self.stats.peak_episodes = max(self.stats.peak_episodes, len(active))
            ended: list[tuple[_Seq, str]] = []
            # Prefill every sequence that has a prompt chunk to run, in groups of similar length.
            prefill = sorted((s for s in active if len(s.feed) > 1), key=lambda s: len(s.feed))
            while prefill:
                group = [prefill.pop()]
                while prefill and len(group[0].feed) * (len(group) + 1) <= cfg.prefill_tokens:
                    group.append(prefill.pop())
                logits = self.runner.forward([s.slot for s in group], [s.feed for s in group],
                                             [len(s.cached) for s in group])
                self.stats.forwards += 1
                self._advance(group, logits, ended)
            decoding = [s for s in active if len(s.feed) == 1]
            if decoding:
                contiguous = len(decoding) == len(active)
                if contiguous:
                    decoding.sort(key=lambda s: s.slot)
                logits = self.runner.forward(None if contiguous else [s.slot for s in decoding],
                                             [s.feed for s in decoding], [len(s.cached) for s in decoding])
                self.stats.forwards += 1
                self.stats.batch_rows.append(len(decoding))
                self._advance(decoding, logits, ended)
            for seq, finish in ended:
                self.stats.turns += 1
                answer(seq, seq.out, finish)
            released = [seq for seq, _ in ended if not resume(seq)]
            for seq in released:
                self._release(active, seq)

    def _advance(self, rows: Sequence[_Seq], logits: Any, ended: list[tuple[_Seq, str]]) -> None:
        tokens = sample_tokens(logits, self.temperature, self.top_p, [s.gen for s in rows])
        for seq, tok in zip(rows, tokens, strict=True):
            seq.cached.extend(seq.feed)
            seq.sampled.extend([seq.feed_sampled] * len(seq.feed))
            # The first fresh prompt is kept: later first turns share its system prompt and tool schemas.
            if self._prefix is None and len(seq.feed) > 1 and len(seq.cached) == len(seq.feed):
                self._prefix = (list(seq.cached), self.runner.cache.snapshot(seq.slot, len(seq.cached)))
            if tok in self.eos:
                seq.feed, seq.finish, seq.stop_token = [], "stop", tok
                ended.append((seq, "stop"))
                continue
            seq.out.append(tok)
            self.stats.generated_tokens += 1
            if len(seq.out) >= self.max_new_tokens:
                seq.feed, seq.finish = [], "length"
                ended.append((seq, "length"))
            else:
                seq.feed, seq.feed_sampled = [tok], True

    def _release(self, active: list[_Seq], seq: _Seq) -> None:
        last = active[-1]
        if last is not seq:
            self.runner.cache.move(last.slot, seq.slot, len(last.cached))
            last.slot = seq.slot
            active[seq.slot] = last
        active.pop()
        seq.slot = -1

    # -- single-turn completions (Dr. GRPO) ----------------------------------------------------------------
    def complete(self, prompts: Sequence[Sequence[int]], keys: Sequence[str]) -> list[tuple[list[int], str]]:
        """One completion per prompt (token ids without the end token, finish reason ``stop`` | ``length``);
        each sampled from its own generator seeded by ``(seed, key)``."""
        if len(prompts) != len(keys):
            raise ValueError("one key per prompt")
        queue = deque(range(len(prompts)))
        results: list[tuple[list[int], str] | None] = [None] * len(prompts)

        def next_seq() -> _Seq | None:
            if not queue:
                return None
            i = queue.popleft()
            if not prompts[i]:
                raise ValueError(f"prompt {i} is empty")
            seq = self.new_seq(str(keys[i]), owner=i)
            self.set_prompt(seq, prompts[i])
            return seq

        def answer(seq: _Seq, tokens: list[int], finish: str) -> None:
            results[seq.owner] = (list(tokens), finish)

        self.run(next_seq, answer, lambda seq: False)
        return [r for r in results if r is not None]


def grpo_rollout_func(tokenizer: Any, *, eos_ids: Sequence[int], temperature: float = 1.0, top_p: float = 1.0,
                      max_new_tokens: int = 256, seed: int = 0, config: EngineConfig | None = None
                      ) -> Callable[[list, Any], dict[str, Any]]:
    """TRL ``GRPOTrainer(rollout_func=...)``: the trainer's completions generated by this engine on the model being
    trained. Prompts are text (or message lists, rendered with the chat template); every completion samples from
    its own generator keyed by (training step, call, position), so a group's samples are independent of how the
    trainer batched them. Completions that stopped carry their end token (TRL masks after it); ``logprobs`` is
    None: generation is on-policy, so there is no importance-sampling correction to make."""
    calls = iter(range(1 << 62))

    def rollout_func(prompts: list, trainer: Any) -> dict[str, Any]:
        accelerator = getattr(trainer, "accelerator", None)
        model = accelerator.unwrap_model(trainer.model) if accelerator is not None else trainer.model
        ids = []
        for p in prompts:
            text = p if isinstance(p, str) else tokenizer.apply_chat_template(p, add_generation_prompt=True,
                                                                              tokenize=False)
            ids.append(list(tokenizer(text, add_special_tokens=False)["input_ids"]))
        step, call = getattr(getattr(trainer, "state", None), "global_step", 0), next(calls)
        was_training = model.training
        model.eval()  # checkpointed layers drop the cache in training mode
        try:
            engine = RolloutEngine(model, tokenizer, eos_ids=eos_ids, temperature=temperature, top_p=top_p,
                                   max_new_tokens=max_new_tokens, seed=seed, config=config)
            done = engine.complete(ids, [f"{step}/{call}/{i}" for i in range(len(ids))])
        finally:
            model.train(was_training)
        stop = int(next(iter(eos_ids)))
        completions = [toks + [stop] if finish == "stop" else toks for toks, finish in done]
        return {"prompt_ids": ids, "completion_ids": completions, "logprobs": None}

    return rollout_func
