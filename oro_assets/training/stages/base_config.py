"""Config of the ``base`` stage: the locally built tiny Qwen3 model (``tiny_model.build_base_model``).

A profile of real weights (qwen3-4b) builds nothing and has no such config."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TinyArch:
    """Architecture and copy pre-training of the tiny base model."""

    # Two wide heads: with Qwen3's per-head q/k RMSNorm, 32-dim heads never learned to copy in 1,500 steps;
    # 64-dim heads start copying after ~500 steps of copy pre-training (measured on 1 CPU thread).
    hidden_size: int = field(default=128, metadata={"help": "Width of the residual stream."})
    num_hidden_layers: int = field(default=2, metadata={"help": "Decoder layers."})
    num_attention_heads: int = field(default=2, metadata={"help": "Query heads per layer."})
    num_key_value_heads: int = field(default=2, metadata={"help": "Key/value heads per layer (GQA when fewer)."})
    intermediate_size: int = field(default=256, metadata={"help": "Width of the MLP."})
    head_dim: int = field(default=64, metadata={"help": "Dimension of one attention head."})
    max_position_embeddings: int = field(default=2048, metadata={"help": "Longest sequence the RoPE table covers."})
    # Tied: the residual stream carries the copied token's input embedding, which then *is* its output
    # direction. Measured on this arena's vocabulary (2.6k words), copy pre-training loss after 600 steps:
    # tied 0.08 vs untied 7.82 (= ln V, nothing learned; 4 layers x 4 heads untied also 7.82).
    tie_word_embeddings: bool = field(default=True, metadata={"help": "Share input and output embeddings."})
    # With tied embeddings the copy loss is ~0.1 after 600 steps (~35 s on one thread).
    copy_pretrain_steps: int = field(default=0, metadata={
        "help": "Steps of copy (induction) pre-training given to the freshly built base (tiny_model.copy_pretrain)."})
    copy_pretrain_span: int = field(default=8, metadata={"help": "Tokens in one span to copy."})
    # 0 puts the copy right after the span; a chat puts the request 30-90 tokens before the search that copies it,
    # so the induction has to reach that far.
    copy_pretrain_gap: int = field(default=0, metadata={
        "help": "Longest run of random tokens between a span and its copy."})
    # A Shop episode asks for item 2's words ~250 tokens after the request named them; a base trained on gaps up to
    # 64 copies nothing past ~100 (copy loss 4.1 at gap 120, 8.0 = ln V at 250; world 15's base, session 26).
    copy_pretrain_long_share: float = field(default=0.0, metadata={
        "help": "Share of copy pre-training batches whose gaps run from copy_pretrain_gap to copy_pretrain_long_gap."})
    copy_pretrain_long_gap: int = field(default=0, metadata={
        "help": "Longest gap of the long batches (copy_pretrain_long_share > 0)."})

    def __post_init__(self) -> None:
        if not 0.0 <= self.copy_pretrain_long_share <= 1.0:
            raise ValueError(f"base.copy_pretrain_long_share must be in [0, 1], got {self.copy_pretrain_long_share}")
        if self.copy_pretrain_long_share > 0 and self.copy_pretrain_long_gap <= self.copy_pretrain_gap:
            raise ValueError(f"base.copy_pretrain_long_gap ({self.copy_pretrain_long_gap}) must exceed "
                             f"copy_pretrain_gap ({self.copy_pretrain_gap}) when copy_pretrain_long_share > 0")
