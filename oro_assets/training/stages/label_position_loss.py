"""TRL's ``SFTTrainer`` and ``KTOTrainer`` with their LM head over the labelled positions only (the tiny profile).

Why: ``training.losses``. SFT: same loss (the labelled tokens' NLL summed over ``num_items_in_batch``) and token
count; not TRL's per-step entropy and token accuracy, which nothing here reads (the stage history and MLflow keep
loss, tokens, learning rate and gradient norm) and which cost two more passes over the labelled positions' logits:
~7% of a first-turn warm-up step (measured 2026-12-04). ``benchmarks/sft_step.py`` times both trainers in one run.
KTO: TRL's fused head (``trl.trainer.utils.add_fused_lm_head``) scores every position of the padded batch
off-Triton, on each of a step's four passes (policy and reference, completion and KL); :func:`add_label_position_head`
gives the same per-token outputs from the completion positions alone. Dr. GRPO: the same head at the trainer's
sampling temperature, on its one scoring pass per step (the completion positions of prompt + episode; the fused head
was ~half of a tiny CPU step's training time, measured 2026-12-05).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Sequence
from typing import Any


@functools.cache
def label_position_sft_trainer() -> type:
    """``SFTTrainer`` with :meth:`compute_loss` over the labelled positions only (built lazily: TRL is heavy)."""
    import torch
    from trl import SFTTrainer

    from oro_assets.training.losses import labelled_nll

    class LabelPositionSFTTrainer(SFTTrainer):
        def compute_loss(self, model: Any, inputs: dict, return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            if return_outputs:
                raise ValueError("LabelPositionSFTTrainer computes the loss only; it builds no logits to return")
            mode = "train" if self.model.training else "eval"
            shifted = inputs.get("shift_labels") is not None
            labels = inputs["shift_labels"] if shifted else inputs["labels"]
            forward = {k: v for k, v in inputs.items() if k not in ("labels", "shift_labels", "use_cache")}
            nll, _, targets = labelled_nll(model, labels, shifted=shifted, **forward)
            n_valid = max(int(targets.numel()), 1)
            n_items = n_valid if num_items_in_batch is None else num_items_in_batch
            loss = nll / torch.as_tensor(n_items, device=nll.device).clamp(min=1)
            if mode == "train":
                if "attention_mask" in inputs:
                    self._total_train_tokens += int(inputs["attention_mask"].sum().item())
                else:
                    self._total_train_tokens += int(inputs["input_ids"].numel())
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
            return loss

    return LabelPositionSFTTrainer


def add_label_position_head(model: Any, outputs: Sequence[str] = ("log_probs",), temperature: float = 1.0) -> None:
    """``model(..., labels=..., fused_lm_head=True)`` as TRL's fused LM head answers it (``FusedCausalLMOutput``:
    per-token fields of the labels' shape less one, zero where the label is -100), computed on the labelled positions
    only (``training.losses.labelled_hidden``). ``outputs``: the per-token fields besides ``log_probs``
    (``entropy``, ``mean_logits``, ``is_top1``, ``log_sum_sq_probs``), all without gradient. The logits are divided
    by ``temperature`` (TRL's head does so for GRPO's sampling temperature). A plain LM head (no logit scale or
    soft-capping: Qwen3). Without ``fused_lm_head`` the model's own forward runs.
    """
    import torch
    from trl.trainer.utils import FusedCausalLMOutput

    from oro_assets.training.losses import labelled_hidden

    if not temperature > 0:
        raise ValueError(f"add_label_position_head: temperature must be > 0, got {temperature}")
    config = model.config.get_text_config()
    if getattr(config, "final_logit_softcapping", None) or getattr(config, "logit_scale", None) not in (None, 1.0):
        raise ValueError("add_label_position_head: a plain LM head only (no logit soft-capping or scale)")
    original_forward = type(model).forward.__get__(model, type(model))

    @functools.wraps(type(model).forward)
    def forward(self: Any, *args: Any, fused_lm_head: bool = False, labels: Any = None, shift_labels: Any = None,
                num_items_in_batch: Any = None, **kwargs: Any) -> Any:
        if not fused_lm_head:
            extra = {"labels": labels, "shift_labels": shift_labels, "num_items_in_batch": num_items_in_batch}
            return original_forward(*args, **kwargs, **{k: v for k, v in extra.items() if v is not None})
        if args:
            raise TypeError("the label-position head takes keyword inputs only")
        kwargs.pop("use_cache", None)
        shifted = shift_labels is not None
        hidden, targets, mask = labelled_hidden(self, shift_labels if shifted else labels, shifted=shifted, **kwargs)
        logits = self.get_output_embeddings()(hidden).float()
        if temperature != 1.0:
            logits = logits / temperature
        log_p = torch.log_softmax(logits, dim=-1)

        def per_token(values: Any) -> Any:
            return values.new_zeros(mask.shape).masked_scatter(mask, values)

        log_probs = per_token(log_p.gather(-1, targets[:, None]).squeeze(-1))
        fields: dict[str, Any] = {}
        with torch.no_grad():
            if "entropy" in outputs:
                fields["entropy"] = per_token(-(log_p.exp() * log_p).sum(-1))
            if "mean_logits" in outputs:
                fields["mean_logits"] = per_token(logits.mean(-1))
            if "is_top1" in outputs:
                fields["is_top1"] = per_token(logits.argmax(-1) == targets)
            if "log_sum_sq_probs" in outputs:
                fields["log_sum_sq_probs"] = per_token(torch.logsumexp(2 * log_p, dim=-1))
        n_items = mask.sum().clamp(min=1) if num_items_in_batch is None else num_items_in_batch
        return FusedCausalLMOutput(loss=-log_probs.sum() / n_items, log_probs=log_probs, label_mask=mask, **fields)

    model.forward = types.MethodType(forward, model)


@functools.cache
def label_position_kto_trainer() -> type:
    """``KTOTrainer`` whose policy and reference models score the completion positions only
    (:func:`add_label_position_head` in place of TRL's fused head, after TRL has set up both models)."""
    from trl import KTOTrainer

    class LabelPositionKTOTrainer(KTOTrainer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            policy = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
            add_label_position_head(policy, outputs=("log_probs", "entropy", "mean_logits"))  # what KTO reads
            if self.ref_model is not None:
                add_label_position_head(self.ref_model)

    return LabelPositionKTOTrainer


@functools.cache
def label_position_grpo_trainer() -> type:
    """``GRPOTrainer`` whose policy (and reference, where ``beta`` > 0) score the completion positions only, at the
    trainer's temperature (:func:`add_label_position_head` in place of TRL's fused head)."""
    from trl import GRPOTrainer

    class LabelPositionGRPOTrainer(GRPOTrainer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            policy = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
            add_label_position_head(policy, outputs=("log_probs", "entropy"), temperature=self.temperature)
            if self.ref_model is not None:
                add_label_position_head(self.ref_model, temperature=self.temperature)

    return LabelPositionGRPOTrainer
