"""The tiny profile's label-position SFT loss equals TRL's own fused loss, value and gradient, on a real batch."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from oro_assets.training.stages import build_sft_trainer_for_inspection


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

