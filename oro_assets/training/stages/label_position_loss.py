"""SFT loss that sends only the labelled positions through the LM head (the tiny profile, on CPU).

TRL's ``SFTTrainer`` computes the loss with a fused, chunked LM head. On a Triton device it scores only
the positions that carry a label; elsewhere it scores every position of the padded batch, in torch ops
over a ``[tokens, vocab]`` tile. For the tiny model on one CPU thread that tile *is* the training step:
with assistant-only loss most positions are prompt or tool output, yet they were projected onto the
2,988-word vocabulary forward and backward (measured 2026-12-01, 15 SFT steps on one day's curated rows:
2.4 of 3.7 s a step in the chunked loss). This trainer projects ``hidden[labels != -100]`` only: the same
loss (the sum of the labelled tokens' negative log-likelihoods over ``num_items_in_batch``), computed on
a fraction of the positions (``benchmarks/sft_step.py`` measures both in one run).
"""

from __future__ import annotations

from typing import Any


def label_position_sft_trainer() -> type:
    """``SFTTrainer`` with :meth:`compute_loss` over the labelled positions only (built lazily: TRL is heavy)."""
    import torch
    import torch.nn.functional as F
    from trl import SFTTrainer

    class LabelPositionSFTTrainer(SFTTrainer):
        def compute_loss(self, model: Any, inputs: dict, return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            if return_outputs:
                raise ValueError("LabelPositionSFTTrainer computes the loss only; it builds no logits to return")
            mode = "train" if self.model.training else "eval"
            labels = inputs.get("shift_labels")
            shifted = labels is not None
            if labels is None:
                labels = inputs["labels"]
            forward = {k: v for k, v in inputs.items() if k not in ("labels", "shift_labels")}
            hidden = model.base_model(**forward, use_cache=False).last_hidden_state
            if not shifted:
                hidden, labels = hidden[:, :-1], labels[:, 1:]
            mask = labels != -100
            lm_head = model.get_output_embeddings()
            logits = lm_head(hidden[mask]).float()
            targets = labels[mask]
            nll = F.cross_entropy(logits, targets, reduction="sum")
            n_items = mask.sum() if num_items_in_batch is None else num_items_in_batch
            loss = nll / torch.as_tensor(n_items, device=nll.device).clamp(min=1)

            with torch.no_grad():  # the metrics TRL's own loss logs, on the same positions
                n_valid = max(int(targets.numel()), 1)
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
