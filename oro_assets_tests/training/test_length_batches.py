"""Length batches: every row once an epoch, batches of neighbouring lengths, batch order as random as without."""

from __future__ import annotations

import dataclasses

import torch

from oro_assets.training.stages import build_sft_trainer_for_inspection
from oro_assets.training.stages.length_batches import length_batches

# A bimodal epoch like SFT's: 300 short drills (~120 tokens) and 100 long multi-item rows (~1,000 tokens).
LENGTHS = [120 + (i * 7) % 40 for i in range(300)] + [900 + (i * 13) % 200 for i in range(100)]


def _padded_tokens(batches: list[list[int]]) -> int:
    return sum(len(b) * max(LENGTHS[i] for i in b) for b in batches)


def test_every_row_once_and_only_the_last_batch_short():
    batches = length_batches(LENGTHS, 8, torch.Generator().manual_seed(0), mega_batch=5)
    assert sorted(i for b in batches for i in b) == list(range(len(LENGTHS)))
    assert all(len(b) == 8 for b in batches[:-1])


def test_batches_pad_far_less_than_random_ones():
    grouped = length_batches(LENGTHS, 8, torch.Generator().manual_seed(0), mega_batch=5)
    order = torch.randperm(len(LENGTHS), generator=torch.Generator().manual_seed(0)).tolist()
    random_batches = [order[i:i + 8] for i in range(0, len(order), 8)]
    # Random batches of 8 almost always hold a long row (1 - 0.75^8 = 90%); grouped ones rarely mix.
    assert _padded_tokens(grouped) < 0.6 * _padded_tokens(random_batches)


def test_long_and_short_batches_interleave_not_in_stretches():
    batches = length_batches(LENGTHS, 8, torch.Generator().manual_seed(1))  # the epoch is one mega-batch
    long_batch = [max(LENGTHS[i] for i in b) > 500 for b in batches]
    switches = sum(a != b for a, b in zip(long_batch, long_batch[1:], strict=False))
    # transformers' LengthGroupedSampler orders each mega-batch longest first: here one mega-batch of 50 batches,
    # 13 long ones then 37 short, one switch. Shuffled, they switch ~19 times on average.
    assert switches >= 12


def test_draws_differ_by_epoch_and_repeat_by_seed():
    first = length_batches(LENGTHS, 8, torch.Generator().manual_seed(3))
    again = length_batches(LENGTHS, 8, torch.Generator().manual_seed(3))
    generator = torch.Generator().manual_seed(3)
    length_batches(LENGTHS, 8, generator)
    assert first == again and length_batches(LENGTHS, 8, generator) != first


def test_length_grouped_profile_trains_on_length_batches(small_profile, base_ckpt, teacher_traj, tmp_path):
    profile = dataclasses.replace(small_profile, length_grouped=True)
    rows = teacher_traj[:12]
    trainer = build_sft_trainer_for_inspection(profile, rows, base_ckpt, tmp_path)
    lengths = [len(ids) for ids in trainer.train_dataset["input_ids"]]
    batch = trainer.args.train_batch_size
    indices = list(trainer._get_train_sampler())
    assert sorted(indices) == list(range(len(rows)))
    batches = [indices[i:i + batch] for i in range(0, len(indices), batch)]
    # Whole batches are runs of the sorted lengths: no row outside a batch lies strictly inside its length range.
    for b in batches:
        low, high = min(lengths[i] for i in b), max(lengths[i] for i in b)
        assert not [i for i in range(len(rows)) if i not in b and low < lengths[i] < high]
    plain = build_sft_trainer_for_inspection(small_profile, rows, base_ckpt, tmp_path / "plain")
    assert type(plain._get_train_sampler()).__name__ != "ShuffledLengthBatches"
