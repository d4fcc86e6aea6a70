"""Stage 0, the base model: the tiny profile's model and word-level tokenizer built locally
(deterministic from the corpus, arch and seed), or a pointer to the real weights (qwen3-4b)."""

from __future__ import annotations

from oro_assets.training.checkpoints import StageResult
from oro_assets.training.stages.common import StageContext


def from_params(ctx: StageContext) -> StageResult:
    from oro_assets.training.tiny_model import build_base_checkpoint

    path = build_base_checkpoint(ctx.profile, ctx.out_root, ctx.catalogue(), ctx.optional_rows("problems"),
                                 seed=ctx.seed)
    return StageResult("base", path.name, path, {}, 0)
