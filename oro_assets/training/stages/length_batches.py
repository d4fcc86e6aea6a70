"""Batches of similar length, in random order: less padding without a length curriculum.

transformers' ``LengthGroupedSampler`` sorts each mega-batch (50 batches) longest first, so a run sees its long
rows (multi-item episodes) in one stretch of consecutive steps and its short ones (first-turn drills, product
episodes) in another. Here each mega-batch is cut into batches of neighbouring lengths and then *every* batch of the
epoch is shuffled: a batch pads to its own longest row, and the order of batches stays as random as without
grouping. Only the epoch's last batch may be short, so the DataLoader's cut of the index stream falls on batch
boundaries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

MEGA_BATCH = 50  # batches per mega-batch, as transformers' LengthGroupedSampler


def length_batches(lengths: Sequence[int], batch_size: int, generator: Any,
                   mega_batch: int = MEGA_BATCH) -> list[list[int]]:
    """The epoch's batches: a random permutation cut into mega-batches, each sorted by length and cut into
    ``batch_size`` batches, the full batches shuffled, a short remainder last."""
    import torch

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = torch.randperm(len(lengths), generator=generator).tolist()
    span = batch_size * mega_batch
    batches: list[list[int]] = []
    for start in range(0, len(order), span):
        mega = sorted(order[start:start + span], key=lengths.__getitem__)
        batches.extend(mega[i:i + batch_size] for i in range(0, len(mega), batch_size))
    short = [b for b in batches if len(b) < batch_size]
    full = [b for b in batches if len(b) == batch_size]
    return [full[i] for i in torch.randperm(len(full), generator=generator).tolist()] + short


def shuffled_length_sampler(lengths: Sequence[int], batch_size: int, seed: int) -> Any:
    """A torch ``Sampler`` yielding :func:`length_batches`' indices, a new draw each epoch."""
    import torch
    from torch.utils.data import Sampler

    class ShuffledLengthBatches(Sampler[int]):
        def __init__(self) -> None:
            self.generator = torch.Generator().manual_seed(seed)

        def __len__(self) -> int:
            return len(lengths)

        def __iter__(self) -> Iterator[int]:
            return iter([i for batch in length_batches(lengths, batch_size, self.generator) for i in batch])

    return ShuffledLengthBatches()


def length_batched(trainer_cls: type) -> type:
    """``trainer_cls`` training on :func:`shuffled_length_sampler` batches (lengths: the tokenized ``input_ids``)."""

    class LengthBatched(trainer_cls):  # type: ignore[misc, valid-type]
        def _get_train_sampler(self, train_dataset: Any = None) -> Any:
            dataset = train_dataset if train_dataset is not None else self.train_dataset
            lengths = [len(ids) for ids in dataset["input_ids"]]
            batch = self.args.train_batch_size * self.args.gradient_accumulation_steps
            return shuffled_length_sampler(lengths, batch, self.args.data_seed or self.args.seed)

    LengthBatched.__name__ = f"LengthBatched{trainer_cls.__name__}"
    return LengthBatched
