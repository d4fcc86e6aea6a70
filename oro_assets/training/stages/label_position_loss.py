"""TRL's ``SFTTrainer`` with the loss over the labelled positions only (the tiny profile).

Why: ``training.losses``. Same loss (the labelled tokens' NLL summed over ``num_items_in_batch``), same
logged metrics (entropy, token accuracy, tokens); ``benchmarks/sft_step.py`` times both trainers in one run.
"""

from __future__ import annotations

import functools
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
            nll, logits, targets = labelled_nll(model, labels, shifted=shifted, **forward)
            n_valid = max(int(targets.numel()), 1)
            n_items = n_valid if num_items_in_batch is None else num_items_in_batch
            loss = nll / torch.as_tensor(n_items, device=nll.device).clamp(min=1)
            with torch.no_grad():  # the metrics TRL's own loss logs, on the same positions
                log_p = torch.log_softmax(logits, dim=-1)
                entropy = -(log_p.exp() * log_p).sum(-1).sum().item() / n_valid
                accuracy = (logits.argmax(-1) == targets).sum().item() / n_valid
            self._metrics[mode]["entropy"].append(entropy)
            self._metrics[mode]["mean_token_accuracy"].append(accuracy)
            if mode == "train":
                if "attention_mask" in inputs:
                    self._total_train_tokens += int(inputs["attention_mask"].sum().item())
                else:
                    self._total_train_tokens += int(inputs["input_ids"].numel())
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
            return loss

    return LabelPositionSFTTrainer
