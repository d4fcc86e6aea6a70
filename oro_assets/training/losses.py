"""Causal-LM loss over the labelled positions only: the LM head projects ``hidden[labels != -100]``.

A full forward projects every position of the padded batch onto the vocabulary, forward and backward.
With assistant-only (or copy-only) labels most positions carry no label, and for the tiny model on one
CPU thread that projection was most of a training step (measured 2026-12-01: 2.4 of 3.7 s an SFT step
under TRL's fused head, which scores every position off-Triton; ``benchmarks/sft_step.py``). The sum of
negative log-likelihoods is the same quantity; only its cost changes.

The backbone itself skips the padding: a right-padded batch runs as a few sub-batches of rows of similar
length (:func:`length_groups`), each cut to its longest row and without an attention mask. Under a causal
model a position never sees a later one, so a real position's hidden state is the one the padded batch
gives (to float rounding); only the pads' own states, which no label reads, are not computed.
"""

from __future__ import annotations

from typing import Any

# What one more backbone call costs, in tokens of compute (measured on the tiny model, 1 and 2 CPU threads: a
# forward + backward of a group costs ~6-9 ms beyond its tokens, ~0.1 ms a token).
GROUP_OVERHEAD_TOKENS = 96


def length_groups(lengths: list[int], overhead: int = GROUP_OVERHEAD_TOKENS) -> list[list[int]]:
    """Rows (indices into ``lengths``) in groups that minimise ``sum(len(g) * longest(g) + overhead)``.

    Each group is a run of rows in length order, so the partition is an exact dynamic programme over the sorted
    lengths (O(n^2), n = batch size).
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    n = len(order)
    best = [0] + [float("inf")] * n  # best[j]: cost of the j shortest rows
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        width = lengths[order[j - 1]]  # the longest of rows i..j-1
        for i in range(j):
            cost = best[i] + (j - i) * width + overhead
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups: list[list[int]] = []
    j = n
    while j > 0:
        groups.append(sorted(order[cut[j]:j]))
        j = cut[j]
    return groups[::-1]


def _right_padded_lengths(forward: dict[str, Any], labels: Any) -> list[int] | None:
    """Each row's length when ``forward`` is a right-padded batch this module can cut into groups, else None."""
    mask = forward.get("attention_mask")
    ids = forward.get("input_ids")
    if mask is None or ids is None or mask.dim() != 2 or mask.shape != ids.shape or labels.shape != ids.shape:
        return None
    if any(not (hasattr(v, "shape") and v.shape == ids.shape) for k, v in forward.items()):
        return None  # an input this module does not know how to cut (embeddings, 4-D masks, ...)
    if mask.size(1) > 1 and not bool((mask[:, 1:] <= mask[:, :-1]).all()):
        return None  # left padding or holes: the mask matters
    import torch

    lengths = mask.sum(1)
    if int(lengths.min()) < 1:
        return None
    pads = torch.arange(mask.size(1), device=mask.device)[None, :] >= lengths[:, None]
    if bool((pads & (labels != -100)).any()):
        return None  # a label on a pad: keep the caller's batch as it is
    return [int(n) for n in lengths]


def _left_aligned(model: Any, forward: dict[str, Any], labels: Any, shifted: bool) -> tuple[dict, Any] | None:
    """``(forward, labels)`` with every row moved left to start at column 0 (a right-padded batch) when the rows are
    padded on the left and maybe the right (one run of real tokens each: GRPO's prompt + completion batches), else
    None. Only for rotary position embeddings, under which moving a whole row changes no attention score (the
    scores depend on relative positions); a label the move would lose (unshifted labels on a row's first real token)
    keeps the batch as it is."""
    config = getattr(model, "config", None)
    if getattr(config, "rope_parameters", None) is None and getattr(config, "rope_theta", None) is None:
        return None
    mask, ids = forward.get("attention_mask"), forward.get("input_ids")
    if mask is None or ids is None or mask.dim() != 2 or mask.shape != ids.shape or labels.shape != ids.shape:
        return None
    if set(forward) != {"input_ids", "attention_mask"}:
        return None  # position ids, embeddings, ...: inputs whose meaning a move would change
    import torch

    lengths = mask.sum(1)
    starts = (mask.cumsum(1) == 0).sum(1)
    if int(lengths.min()) < 1 or not bool(starts.any()):
        return None  # an empty row, or no left padding (the right-padded path takes it)
    cols = torch.arange(mask.size(1), device=mask.device)[None, :]
    real = (cols >= starts[:, None]) & (cols < (starts + lengths)[:, None])
    if not bool((real == mask.bool()).all()):
        return None  # holes in a row
    if bool(((~real) & (labels != -100)).any()):
        return None  # a label on a pad
    if not shifted and bool((labels.gather(1, starts[:, None]) != -100).any()):
        return None
    index = (cols + starts[:, None]).clamp(max=mask.size(1) - 1)
    inside = cols < lengths[:, None]
    moved = {"input_ids": ids.gather(1, index).masked_fill(~inside, 0), "attention_mask": inside.to(mask.dtype)}
    return moved, labels.gather(1, index).masked_fill(~inside, -100)


def labelled_hidden(model: Any, labels: Any, *, shifted: bool = False, **forward: Any) -> tuple[Any, Any, Any]:
    """``(hidden states, targets, label mask)`` at the positions whose label is not -100, in row-major order.

    ``labels`` are aligned with ``input_ids`` (shifted here by one) unless ``shifted`` (then label ``t`` is the
    target of position ``t``, TRL's ``shift_labels``); the mask has the shape of the (shifted) labels. ``forward``
    goes to the backbone (``model.base_model``: input ids, attention mask, position ids). A right-padded batch runs
    in :func:`length_groups`, without padding (module docstring); so does a left-padded one, its rows first moved
    to column 0 (:func:`_left_aligned`); any other batch runs as given.
    """
    import torch

    cut = 0 if shifted else 1
    target_labels = labels if shifted else labels[:, 1:]
    mask = target_labels != -100
    lengths = _right_padded_lengths(forward, labels)
    if lengths is None and (aligned := _left_aligned(model, forward, labels, shifted)) is not None:
        # each row keeps its labelled positions in order, so the row-major hidden states match ``mask``
        hidden, _, _ = labelled_hidden(model, aligned[1], shifted=shifted, **aligned[0])
        return hidden, target_labels[mask], mask
    if lengths is None:
        hidden = model.base_model(**forward, use_cache=False).last_hidden_state
        hidden = hidden if shifted else hidden[:, :-1]
        return hidden[mask], target_labels[mask], mask
    rows: list[Any] = [None] * len(lengths)
    for group in length_groups(lengths):
        width = max(lengths[i] for i in group)
        index = torch.tensor(group, device=labels.device)
        sub = {k: v[index, :width] for k, v in forward.items() if k != "attention_mask"}
        hidden = model.base_model(**sub, use_cache=False).last_hidden_state
        for k, i in enumerate(group):
            rows[i] = hidden[k, : width - cut][mask[i, : width - cut]]
    return torch.cat(rows), target_labels[mask], mask


def labelled_nll(model: Any, labels: Any, *, shifted: bool = False, **forward: Any) -> tuple[Any, Any, Any]:
    """``(sum of NLL, logits, targets)`` over the positions whose label is not -100 (:func:`labelled_hidden`)."""
    import torch.nn.functional as F

    hidden, targets, _ = labelled_hidden(model, labels, shifted=shifted, **forward)
    logits = model.get_output_embeddings()(hidden).float()
    return F.cross_entropy(logits, targets, reduction="sum"), logits, targets
