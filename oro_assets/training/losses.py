"""Causal-LM loss over the labelled positions only: the LM head projects ``hidden[labels != -100]``.

A full forward projects every position of the padded batch onto the vocabulary, forward and backward.
With assistant-only (or copy-only) labels most positions carry no label, and for the tiny model on one
CPU thread that projection was most of a training step (measured 2026-12-01: 2.4 of 3.7 s an SFT step
under TRL's fused head, which scores every position off-Triton; ``benchmarks/sft_step.py``). The sum of
negative log-likelihoods is the same quantity; only its cost changes.
"""

from __future__ import annotations

from typing import Any


def labelled_nll(model: Any, labels: Any, *, shifted: bool = False, **forward: Any) -> tuple[Any, Any, Any]:
    """``(sum of NLL, logits, targets)`` over the positions whose label is not -100.

    ``labels`` are aligned with ``input_ids`` (shifted here by one) unless ``shifted`` (then label ``t``
    is the target of position ``t``, TRL's ``shift_labels``). ``forward`` goes to the backbone
    (``model.base_model``: input ids, attention mask, position ids).
    """
    import torch.nn.functional as F

    hidden = model.base_model(**forward, use_cache=False).last_hidden_state
    if not shifted:
        hidden, labels = hidden[:, :-1], labels[:, 1:]
    mask = labels != -100
    logits = model.get_output_embeddings()(hidden[mask]).float()
    targets = labels[mask]
    return F.cross_entropy(logits, targets, reduction="sum"), logits, targets
