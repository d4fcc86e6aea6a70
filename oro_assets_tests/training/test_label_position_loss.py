"""The tiny profile's label-position SFT loss equals TRL's own fused loss, value and gradient, on a real batch."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest
import torch

from oro_assets.training.stages import build_sft_trainer_for_inspection


@contextlib.contextmanager
def backbone_widths(model):
    """The (rows, columns) of every input the model's backbone is called on inside the block."""
    widths: list[tuple[int, int]] = []
    hook = model.base_model.register_forward_pre_hook(
        lambda mod, args, kwargs: widths.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    try:
        yield widths
    finally:
        hook.remove()


def _loss_and_grads(trainer, batch, num_items):
    model = trainer.model
    model.zero_grad(set_to_none=True)
    loss = trainer.compute_loss(model, dict(batch), num_items_in_batch=num_items)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return float(loss.detach()), grads


@pytest.fixture(scope="module")
def trainers(small_profile, base_ckpt, teacher_traj, tmp_path_factory):
    fused = dataclasses.replace(small_profile, label_position_loss=False)
    label = dataclasses.replace(small_profile, label_position_loss=True)
    rows = teacher_traj[:4]
    out = tmp_path_factory.mktemp("lpl")
    return (build_sft_trainer_for_inspection(fused, rows, base_ckpt, out / "fused"),
            build_sft_trainer_for_inspection(label, rows, base_ckpt, out / "label"))


def test_trainer_classes_differ(trainers):
    fused, label = trainers
    assert type(label).__name__ == "LabelPositionSFTTrainer"
    assert type(fused).__name__ == "SFTTrainer"
    assert type(label).compute_loss is not type(fused).compute_loss


@pytest.mark.parametrize("num_items", [None, 37])
def test_same_loss_and_gradients_as_trl(trainers, num_items):
    fused, label = trainers
    torch.manual_seed(0)
    batch = next(iter(fused.get_train_dataloader()))
    assert (batch["labels"] == -100).float().mean() > 0.3, "the batch must hold unlabelled positions"
    label.model.load_state_dict(fused.model.state_dict())
    fused.model.train()
    label.model.train()
    n = None if num_items is None else torch.tensor(num_items)
    loss_f, grads_f = _loss_and_grads(fused, batch, n)
    loss_l, grads_l = _loss_and_grads(label, batch, n)
    assert loss_l == pytest.approx(loss_f, rel=1e-5)
    assert grads_f.keys() == grads_l.keys() and grads_f
    for name, g in grads_f.items():
        torch.testing.assert_close(grads_l[name], g, rtol=1e-4, atol=1e-6, msg=name)
    # the token count both log (tokens/s in the stage history)
    assert label._metrics["train"]["num_tokens"] == fused._metrics["train"]["num_tokens"]


def test_unlabelled_positions_do_not_count(trainers):
    """Control: a loss over every position (what a wrong mask gives) is not what either trainer computes."""
    fused, label = trainers
    batch = next(iter(fused.get_train_dataloader()))
    model = label.model
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
        everything = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)),
                                                       batch["input_ids"][:, 1:].reshape(-1))
        ours = label.compute_loss(model, dict(batch))
    assert abs(float(ours) - float(everything)) > 1e-3


def test_labelled_nll_matches_the_models_own_loss(trainers):
    """``training.losses.labelled_nll`` (copy pre-training's loss) against transformers' causal-LM loss."""
    from oro_assets.training.losses import labelled_nll

    model = trainers[1].model
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, model.config.vocab_size, (3, 17), generator=gen)
    attention = torch.ones_like(ids)
    attention[2, :5] = 0  # a left-padded row
    labels = ids.clone()
    labels[:, :9] = -100  # loss only on the second half, as copy pre-training sets it
    with torch.no_grad():
        reference = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        nll, logits, targets = labelled_nll(model, labels, input_ids=ids, attention_mask=attention)
    assert targets.numel() == 3 * 8 and logits.shape == (24, model.config.vocab_size)
    assert float(nll / targets.numel()) == pytest.approx(float(reference), rel=1e-5)



def test_length_groups_cut_where_the_padding_saved_outweighs_a_call():
    from oro_assets.training.losses import length_groups

    # two clusters: one group costs 4 x 100 + 8 = 408, two cost 2 x 10 + 8 + 2 x 100 + 8 = 236
    assert length_groups([100, 10, 99, 9], overhead=8) == [[1, 3], [0, 2]]
    # a call dearer than the padding it saves: one group
    assert length_groups([100, 10, 99, 9], overhead=500) == [[0, 1, 2, 3]]
    # free calls: every distinct length alone (equal lengths share one call at no padding cost)
    assert length_groups([5, 7, 5], overhead=0) in ([[0], [2], [1]], [[0, 2], [1]])
    assert length_groups([3], overhead=96) == [[0]]


def test_length_groups_is_the_cheapest_partition_into_length_runs():
    import itertools
    import random

    from oro_assets.training.losses import length_groups

    def cost(groups, lengths, overhead):
        return sum(len(g) * max(lengths[i] for i in g) + overhead for g in groups)

    rng = random.Random(0)
    for _ in range(30):
        lengths = [rng.randint(1, 60) for _ in range(rng.randint(1, 7))]
        overhead = rng.choice([0, 5, 20, 200])
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        brute = min(cost([order[a:b] for a, b in zip((0, *cuts), (*cuts, len(order)), strict=True)], lengths, overhead)
                    for k in range(len(order)) for cuts in itertools.combinations(range(1, len(order)), k))
        groups = length_groups(lengths, overhead=overhead)
        assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
        assert cost(groups, lengths, overhead) == brute


def test_right_padded_batch_runs_in_length_groups_with_the_padded_batchs_loss_and_gradients(trainers):
    """Rows of very different lengths, right-padded (as TRL's collator and copy pre-training pad): the grouped,
    unpadded backbone gives the model's own masked loss and its gradients; the backbone sees no pad column."""
    from oro_assets.training.losses import labelled_nll

    model = trainers[1].model
    model.train()
    gen = torch.Generator().manual_seed(2)
    lengths = [200, 20, 190, 30, 25]  # one call: 5 x 200 + 96 tokens; two: 3 x 30 + 96 + 2 x 200 + 96
    ids = torch.full((5, 200), 0, dtype=torch.long)
    attention = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(1, model.config.vocab_size, (n,), generator=gen)
        attention[i, :n] = 1
        labels[i, n // 2: n] = ids[i, n // 2: n]
    with backbone_widths(model) as widths:
        model.zero_grad(set_to_none=True)
        nll, _, targets = labelled_nll(model, labels, input_ids=ids, attention_mask=attention)
        (nll / targets.numel()).backward()
    ours = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    assert sorted(widths) == [(2, 200), (3, 30)]
    model.zero_grad(set_to_none=True)
    reference = model(input_ids=ids, attention_mask=attention, labels=labels).loss
    reference.backward()
    assert float(nll / targets.numel()) == pytest.approx(float(reference), rel=1e-5)
    for name, p in model.named_parameters():
        if p.grad is not None:
            torch.testing.assert_close(ours[name], p.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_label_on_a_pad_keeps_the_batch_whole():
    """Labels past a row's attention mask (not a batch any collator here builds): no grouping, the batch as given."""
    from oro_assets.training.losses import _right_padded_lengths

    ids = torch.ones((2, 6), dtype=torch.long)
    attention = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    labels = ids.clone()
    assert _right_padded_lengths({"input_ids": ids, "attention_mask": attention}, labels) is None
    labels[1, 3:] = -100
    assert _right_padded_lengths({"input_ids": ids, "attention_mask": attention}, labels) == [6, 3]
    left = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1]])
    assert _right_padded_lengths({"input_ids": ids, "attention_mask": left}, labels) is None


@pytest.fixture(scope="module")
def kto_trainers(small_profile, base_ckpt, teacher_traj, tmp_path_factory):
    """TRL's KTOTrainer and the label-position one on the same per-turn examples (both classes, one batch order)."""
    from datasets import Dataset
    from trl import KTOConfig, KTOTrainer

    from oro_assets.training.data import kto_examples
    from oro_assets.training.stages.common import base_args, default_tools, load_for_training
    from oro_assets.training.stages.kto import kto_trainer_class

    rows = [dict(r, label=i % 2 == 0) for i, r in enumerate(teacher_traj[:4])]
    examples = [e for r in rows for e in kto_examples(r, small_profile.view, default_tools())]
    ds = Dataset.from_list([{k: e[k] for k in ("prompt", "completion", "label", "tools")} for e in examples])
    out = tmp_path_factory.mktemp("kto")
    built = []
    for name, cls in (("trl", KTOTrainer), ("label", kto_trainer_class(small_profile))):
        model, tok = load_for_training(small_profile, base_ckpt)
        base = base_args(small_profile, small_profile.kto.train, str(out / name), name)
        base["per_device_train_batch_size"] = 6
        args = KTOConfig(**base, beta=0.1, max_length=512)
        built.append(cls(model=model, args=args, train_dataset=ds, processing_class=tok))
    return built


def test_kto_label_position_head_gives_trls_loss_gradients_and_metrics(kto_trainers):
    trl_trainer, label = kto_trainers
    assert type(label).__name__ == "LabelPositionKTOTrainer" and type(trl_trainer).__name__ == "KTOTrainer"
    assert "add_label_position_head" in label.model.forward.__func__.__code__.co_qualname
    assert "add_label_position_head" in label.ref_model.forward.__func__.__code__.co_qualname
    assert "add_fused_lm_head" in trl_trainer.model.forward.__func__.__code__.co_qualname
    batch = next(iter(trl_trainer.get_train_dataloader()))
    widths = batch["attention_mask"].sum(1)
    assert widths.min() < widths.max(), "the batch must be padded"
    assert batch["label"].any() and not batch["label"].all(), "both classes"
    # the policy moved off the reference, so the log-ratios and the KL term are not zero
    with torch.no_grad():
        for p in trl_trainer.model.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    label.model.load_state_dict(trl_trainer.model.state_dict())
    results = []
    for trainer in (trl_trainer, label):
        trainer.model.train()
        trainer.model.zero_grad(set_to_none=True)
        trainer._metrics["train"].clear()
        loss = trainer.compute_loss(trainer.model, dict(batch))
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
        results.append((float(loss.detach()), grads, {k: list(v) for k, v in trainer._metrics["train"].items()}))
    (loss_t, grads_t, metrics_t), (loss_l, grads_l, metrics_l) = results
    assert loss_l == pytest.approx(loss_t, rel=1e-5)
    assert grads_t.keys() == grads_l.keys() and grads_t
    for name, g in grads_t.items():
        torch.testing.assert_close(grads_l[name], g, rtol=1e-4, atol=1e-7, msg=name)
    assert metrics_t.keys() == metrics_l.keys()
    assert abs(metrics_t["logps/chosen"][0]) > 1.0 and metrics_t["kl"][0] > 0
    for key, values in metrics_t.items():
        # rewards are beta x differences of log-probs summed over a completion (tens): float32 leaves ~1e-5 there
        assert metrics_l[key] == pytest.approx(values, rel=1e-4, abs=1e-5), key


def test_label_position_head_leaves_the_plain_forward_alone(kto_trainers):
    _, label = kto_trainers
    ids = torch.tensor([[5, 6, 7, 8]])
    out = label.model(input_ids=ids)
    assert out.logits.shape == (1, 4, label.model.config.vocab_size)


def _grpo_batch(vocab: int, completion: int = 20,
                ends: tuple[int, ...] = (20, 20, 7, 15)) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A GRPO-shaped batch: left-padded prompts (row 1's prompt is shorter), right-padded completions (row i's
    completion is ``ends[i]`` tokens), labels on the completion tokens only."""
    gen = torch.Generator().manual_seed(3)
    prompt = 12
    ids = torch.randint(1, vocab, (len(ends), prompt + completion), generator=gen)
    attention = torch.ones_like(ids)
    attention[1, :5] = 0
    for i, end in enumerate(ends):
        attention[i, prompt + end:] = 0
    labels = ids.masked_fill(attention == 0, -100)
    labels[:, :-completion] = -100
    return ids, attention, labels


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_grpo_label_position_head_gives_trls_log_probs_entropy_and_gradients(small_profile, base_ckpt, temperature):
    """The head the tiny profile's Dr. GRPO trainer installs answers TRL's GRPO scoring call as TRL's fused head
    does, at the trainer's sampling temperature; the gradient of the log-probabilities is the same."""
    from trl.trainer.utils import add_fused_lm_head

    from oro_assets.training.stages.common import load_for_training
    from oro_assets.training.stages.label_position_loss import add_label_position_head

    ours, _ = load_for_training(small_profile, base_ckpt)
    theirs, _ = load_for_training(small_profile, base_ckpt)
    add_label_position_head(ours, outputs=("log_probs", "entropy"), temperature=temperature)
    add_fused_lm_head(theirs, temperature=temperature, cast_lm_head_to_fp32=True, outputs=("log_probs", "entropy"))
    ids, attention, labels = _grpo_batch(ours.config.vocab_size)
    results = []
    for model in (ours, theirs):
        model.train()
        model.zero_grad(set_to_none=True)
        out = model(input_ids=ids, attention_mask=attention, labels=labels, fused_lm_head=True)
        weights = torch.linspace(0.5, 1.5, out.log_probs.numel()).view_as(out.log_probs)  # a loss that is not a mean
        (out.log_probs * weights).sum().backward()
        grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append((out.log_probs.detach(), out.entropy.detach(), grads))
    (lp_o, ent_o, g_o), (lp_t, ent_t, g_t) = results
    assert (lp_t != 0).sum() == (labels[:, 1:] != -100).sum() > 0
    torch.testing.assert_close(lp_o, lp_t, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent_o, ent_t, rtol=1e-5, atol=1e-5)
    assert g_o.keys() == g_t.keys() and g_o
    for name, g in g_t.items():
        torch.testing.assert_close(g_o[name], g, rtol=1e-4, atol=1e-6, msg=name)


def test_grpo_label_position_head_is_not_temperature_blind(small_profile, base_ckpt):
    """Control: the head at temperature 1 differs from TRL's at 0.7 (the comparison above can fail)."""
    from trl.trainer.utils import add_fused_lm_head

    from oro_assets.training.stages.common import load_for_training
    from oro_assets.training.stages.label_position_loss import add_label_position_head

    ours, _ = load_for_training(small_profile, base_ckpt)
    theirs, _ = load_for_training(small_profile, base_ckpt)
    add_label_position_head(ours, outputs=("log_probs",), temperature=1.0)
    add_fused_lm_head(theirs, temperature=0.7, cast_lm_head_to_fp32=True, outputs=("log_probs",))
    ids, attention, labels = _grpo_batch(ours.config.vocab_size)
    with torch.no_grad():
        a = ours(input_ids=ids, attention_mask=attention, labels=labels, fused_lm_head=True).log_probs
        b = theirs(input_ids=ids, attention_mask=attention, labels=labels, fused_lm_head=True).log_probs
    assert (a - b).abs().max() > 1e-2
    with pytest.raises(ValueError, match="temperature"):
        add_label_position_head(ours, temperature=0.0)


def test_dr_grpo_uses_the_label_position_trainer_where_the_profile_asks(small_profile):
    from trl import GRPOTrainer

    from oro_assets.training.stages.dr_grpo import grpo_trainer_class

    label = grpo_trainer_class(dataclasses.replace(small_profile, label_position_loss=True))
    assert label.__name__ == "LabelPositionGRPOTrainer" and issubclass(label, GRPOTrainer)
    assert grpo_trainer_class(dataclasses.replace(small_profile, label_position_loss=False)) is GRPOTrainer


def test_left_padded_rows_run_moved_to_column_0_with_the_padded_batchs_outputs(trainers):
    """GRPO's batches: prompts padded on the left, completions on the right. The rows run moved to column 0 in
    length groups (no pad column reaches the backbone), and the labelled positions get the padded batch's hidden
    states and gradients (rotary positions: moving a row changes no attention score)."""
    from oro_assets.training.losses import labelled_hidden

    model = trainers[1].model
    model.train()
    ids, attention, labels = _grpo_batch(model.config.vocab_size, completion=200, ends=(200, 30, 190, 20, 25))
    with backbone_widths(model) as widths:
        model.zero_grad(set_to_none=True)
        hidden, targets, mask = labelled_hidden(model, labels, input_ids=ids, attention_mask=attention)
        weights = torch.linspace(0.5, 1.5, hidden.numel()).view_as(hidden)
        (hidden * weights).sum().backward()
    ours = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    # two length groups; row 1 (7 prompt + 30 completion tokens) sets the short group's width only once its 5 left
    # pads are gone (42 with them)
    assert sorted(widths) == [(2, 212), (3, 37)], widths
    assert mask.shape == (5, ids.size(1) - 1) and torch.equal(targets, labels[:, 1:][mask])
    model.zero_grad(set_to_none=True)
    full = model.base_model(input_ids=ids, attention_mask=attention, use_cache=False).last_hidden_state[:, :-1]
    (full[mask] * weights).sum().backward()
    torch.testing.assert_close(hidden, full[mask].detach(), rtol=1e-4, atol=1e-5)
    for name, p in model.named_parameters():
        if p.grad is not None:  # float rounding of sums over ~1,000 positions: tolerance scaled to the gradient
            scale = float(p.grad.abs().max())
            torch.testing.assert_close(ours[name], p.grad, rtol=1e-4, atol=1e-6 * scale, msg=name)


def test_a_left_padded_batch_whose_move_would_lose_a_label_runs_as_given(trainers):
    from oro_assets.training.losses import _left_aligned

    model = trainers[1].model
    ids, attention, labels = _grpo_batch(model.config.vocab_size)
    forward = {"input_ids": ids, "attention_mask": attention}
    assert _left_aligned(model, forward, labels, shifted=False) is not None
    first = labels.clone()
    first[1, 5] = ids[1, 5]  # a label on row 1's first real token (its left padding is 5 wide)
    assert _left_aligned(model, forward, first, shifted=False) is None
    assert _left_aligned(model, forward, first, shifted=True) is not None
    holed = attention.clone()
    holed[0, 3] = 0
    assert _left_aligned(model, {"input_ids": ids, "attention_mask": holed}, labels, shifted=False) is None
    assert _left_aligned(model, {**forward, "position_ids": ids}, labels, shifted=False) is None
