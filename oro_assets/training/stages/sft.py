"""Stage 1, SFT: LoRA SFT (qwen3-4b) / full fine-tune (tiny) on the curated SFT rows with
assistant-only loss (TRL ``SFTTrainer``). The SFT training step is shared with rejection re-SFT and
teacher-SFT, which are continued SFT on other rows."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oro_assets.toolcalls import FIND_PRODUCT
from oro_assets.training.checkpoints import StageResult
from oro_assets.training.data import DatasetError, load_rows, rows_hash, sft_example
from oro_assets.training.profiles import ModelProfile
from oro_assets.training.stages.common import (
    LogFn,
    StageContext,
    base_args,
    default_tools,
    fit,
    load_for_training,
    print_log,
    row_problem_ids,
)
from oro_assets.training.stages.lifecycle import StageCheckpoint, Trained
from oro_assets.training.tracking import Tracking


def _sft_config(profile: ModelProfile, cfg: Any, output_dir: str, run_name: str, max_length: int | None = None):
    from trl import SFTConfig

    return SFTConfig(**base_args(profile, cfg.train, output_dir, run_name, length_grouped=True),
                     max_length=max_length or cfg.max_length,
                     assistant_only_loss=getattr(cfg, "assistant_only_loss", True), dataset_num_proc=None)


def sft_trainer_class(profile: ModelProfile) -> type:
    """TRL's ``SFTTrainer``, or its label-position-loss subclass where the profile asks for it."""
    if profile.label_position_loss:
        from oro_assets.training.stages.label_position_loss import label_position_sft_trainer

        return label_position_sft_trainer()
    from trl import SFTTrainer

    return SFTTrainer


def _dataset(examples: Sequence[dict]):
    from datasets import Dataset

    return Dataset.from_list([{"messages": e["messages"], "tools": e["tools"]} for e in examples])


def train_sft(profile: ModelProfile, stage: str, cfg: Any, examples: list[dict], problem_ids: Sequence[str],
              dataset_hashes: dict[str, str], parent: str | Path, out_root: str | Path, tracking: Tracking,
              log: LogFn, extra_metrics: dict | None = None, force: bool = False,
              vocab_texts: Sequence[str] = ()) -> StageResult:
    """SFT of ``parent`` on ``examples`` (``sft_example`` dicts) as checkpoint ``stage``.

    ``vocab_texts`` (tiny profile): words of these texts the parent's tokenizer lacks are appended to it and the
    embeddings resized before training (``tiny_model.extend_tokenizer``), so they train as themselves.
    """
    if not examples:
        raise DatasetError(f"{stage}: no training examples")
    if vocab_texts:  # the vocabulary the checkpoint gets is part of what it is
        from oro_assets import jsonio

        dataset_hashes = {**dataset_hashes, "vocab_texts": jsonio.content_hash(list(vocab_texts))}
    checkpoint = StageCheckpoint(profile, stage, dataclasses.asdict(cfg), dataset_hashes, parent, out_root, tracking)

    def train(tmp: Path, run: Any) -> Trained:
        model, tok = load_for_training(profile, parent)
        added: list[str] = []
        if vocab_texts and profile.model_source == "tiny":
            from oro_assets.training.tiny_model import extend_tokenizer

            tok, added = extend_tokenizer(tok, vocab_texts)
            if added:
                resize_embeddings(model, len(tok), seed=cfg.train.seed)
                log(f"{stage}: {len(added)} corpus words added to the vocabulary ({', '.join(added[:8])}, ...)")
        args = _sft_config(profile, cfg, str(tmp / "trainer"), f"{stage}-{checkpoint.version}")
        trained, metrics = fit(sft_trainer_class(profile), profile=profile, model=model, run=run, log=log, args=args,
                               train_dataset=_dataset(examples), processing_class=tok)
        metrics.update(extra_metrics or {})
        metrics["vocab_added"] = len(added)
        return Trained(trained, tok, metrics, [e["id"] for e in examples], problem_ids)

    return checkpoint.run_once(train, force=force, log=log)


def resize_embeddings(model: Any, n_tokens: int, *, seed: int) -> None:
    """``model.resize_token_embeddings(n_tokens)`` with its new rows drawn from a seeded generator.

    transformers draws the appended rows from the global torch RNG (mean resizing), whose state differs
    from one process to the next: the same sft stage on the same data gave different checkpoints run to
    run (embedding rows 0.002 apart, a third of the sampled evaluation episodes changed; measured
    2026-12-01). Seeded inside a forked RNG, the rows are a function of the parent, the words and ``seed``.
    """
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model.resize_token_embeddings(n_tokens)


def build_sft_trainer_for_inspection(profile: ModelProfile, rows: Sequence[dict], parent: str | Path,
                                     output_dir: str | Path, max_length: int | None = None):
    """The SFTTrainer ``run_sft`` would build (for tests that inspect masks), without training."""
    examples = [sft_example(r, profile.view, default_tools()) for r in rows]
    model, tok = load_for_training(profile, parent)
    args = _sft_config(profile, profile.sft, str(output_dir), "inspect", max_length)
    return sft_trainer_class(profile)(model=model, args=args, train_dataset=_dataset(examples), processing_class=tok)


def first_turn(row: dict) -> dict:
    """``row`` cut after its first assistant message (system, user, the first thinking and call)."""
    messages = row["messages"]
    first = next(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    return {**row, "id": f"{row['id']}:first_turn", "messages": messages[: first + 1]}


def search_turn(row: dict, seed: int) -> dict:
    """``row`` cut after one of its search turns, drawn per row: a one-product drill's first turn; a multi-item
    drill's j-th search (j uniform over its items), so the warm-up also drills searching a later item - its words
    copied from the middle of the request, within the first item's shop for a Shop request - not only the first."""
    messages = row["messages"]
    searches = [i for i, m in enumerate(messages) if m.get("role") == "assistant"
                and any((c.get("function") or {}).get("name") == FIND_PRODUCT for c in m.get("tool_calls") or [])]
    if len(searches) < 2:
        return first_turn(row)
    j = random.Random(f"search-turn:{seed}:{row['id']}").randrange(len(searches))
    return {**row, "id": f"{row['id']}:search_{j + 1}", "messages": messages[: searches[j] + 1]}


def copy_drills(catalogue: Any, n: int, seed: int, tools: Sequence[dict], style: str = "teacher",
                multi_item: float = 0.0, quote_shop_items: bool = False) -> list[dict]:
    from oro_assets.arena.episode import SYSTEM_PROMPT
    from oro_assets.training.corpus import copy_drill_rows

    if catalogue is None:
        raise ValueError("copy drills need the catalogue")
    return copy_drill_rows(catalogue, n, seed, SYSTEM_PROMPT, tools, style=style, multi_item=multi_item,
                           quote_shop_items=quote_shop_items)


def run_sft(profile: ModelProfile, sft_rows: str | Path | Sequence[dict], parent: str | Path,
            out_root: str | Path, tracking: Tracking = Tracking.disabled(), *, catalogue: Any = None,
            seed: int = 0, log: LogFn = print_log, force: bool = False, curated: bool = True,
            stage: str = "sft") -> StageResult:
    """LoRA SFT (qwen3-4b) / full fine-tune (tiny) on the curated SFT rows, assistant-only loss.

    With ``profile.sft.copy_drills > 0`` and a ``catalogue``, a copy-drill warm-up phase runs first
    (its checkpoint is ``<out_root>/sft_warmup/<version>``, the parent of the SFT checkpoint).
    ``curated=False`` (the ``scaffold`` arm) trains the same warm-up (the same checkpoint, reused) and then the
    same steps on the made-up drills alone: no curated row and none of their variants, as checkpoint ``stage``.
    """
    from oro_assets.training.augment import catalogue_swap_variants

    cfg = profile.sft
    rows, selection, vocab_texts = curated_sft_rows(profile, sft_rows)
    log(f"sft: {selection['rows_kept']} of {selection['rows_in']} curated rows kept (set aside: "
        f"{selection['dropped']}; shapes {selection['shapes']})")
    warm_extra: dict[str, Any] = {}
    if cfg.copy_drills > 0 and catalogue is not None:
        warm, warm_extra = run_warmup(profile, catalogue, parent, out_root, vocab_texts, tracking, seed=seed, log=log,
                                      force=force)
        parent = warm.path
    if not curated:
        if cfg.mixed_drills < 1 or catalogue is None:
            raise DatasetError(f"{stage}: the profile's sft recipe has no drills to train without curated rows "
                               f"(mixed_drills={cfg.mixed_drills}, catalogue {'given' if catalogue else 'missing'})")
        rows = []
    examples = [sft_example(r, profile.view, default_tools()) for r in rows]
    hashes = {"sft": rows_hash(rows)}
    swapped = (catalogue_swap_variants(rows, catalogue, cfg.word_swaps, seed, cfg.word_swap_every_search)
               if rows else [])
    if swapped:
        examples += [sft_example(r, profile.view, default_tools()) for r in swapped]
        hashes["word_swaps"] = rows_hash(swapped)
        log(f"sft: {len(swapped)} word-swap variants of {len(rows)} curated rows")
    mixed_multi = 0
    if cfg.mixed_drills > 0 and catalogue is not None:
        multi = cfg.multi_item_drills if cfg.mixed_multi_item_drills is None else cfg.mixed_multi_item_drills
        mixed = copy_drills(catalogue, cfg.mixed_drills, seed + 1, default_tools(), cfg.copy_drill_style, multi,
                            cfg.quote_shop_items)
        examples += [sft_example(r, profile.view) for r in mixed]
        hashes["mixed_drills"] = rows_hash(mixed)
        mixed_multi = sum(r["id"].endswith("_multi") for r in mixed)
    if len(examples) > len(rows):
        random.Random(seed).shuffle(examples)
    extra = {**warm_extra, "rows_in": selection["rows_in"], "rows_kept": selection["rows_kept"],
             "rows_dropped": selection["dropped"], "row_shapes": selection["shapes"],
             "word_swap_rows": len(swapped), "mixed_multi_item_drills": mixed_multi}
    return train_sft(profile, stage, cfg, examples, row_problem_ids(rows), hashes, parent, out_root, tracking, log,
                     extra_metrics=extra, force=force, vocab_texts=vocab_texts)


def curated_sft_rows(profile: ModelProfile, rows: str | Path | Sequence[dict]) -> tuple[list[dict], dict, list[str]]:
    """The curated rows the sft stage trains (``profile.sft``'s shapes, at most ``max_examples``), what the selection
    set aside, and the texts whose words the tiny tokenizer gains (``extend_vocab``; the warm-up's too)."""
    from oro_assets.training.corpus import dataset_corpus_texts
    from oro_assets.training.data import sft_training_rows

    cfg = profile.sft
    kept, selection = sft_training_rows(load_rows(rows), profile.view, shapes=cfg.row_shapes)
    if cfg.max_examples is not None:
        kept = kept[: cfg.max_examples]
    return kept, selection, dataset_corpus_texts(kept, profile.view) if cfg.extend_vocab else []


#: Seed offset of a restarted warm-up (``copy_drill_restarts``): far from the seeds of the other training seeds.
RESTART_SEED_STRIDE = 1000


def warmup_plan(profile: ModelProfile, catalogue: Any, seed: int,
                restart: int = 0) -> tuple[Any, list[dict], dict[str, str]]:
    """The warm-up's stage config (the sft stage's, with the warm-up's epochs and batch), its examples (the made-up
    copy drills) and their dataset hash, for training seed ``seed``; restart ``r`` > 0 draws its drills and data
    order at ``seed + 1000 r`` (restart 0 is the first warm-up, as it always was)."""
    cfg = profile.sft
    offset = RESTART_SEED_STRIDE * restart
    drills = copy_drills(catalogue, cfg.copy_drills, seed + offset, default_tools(), cfg.copy_drill_style,
                         cfg.multi_item_drills, cfg.quote_shop_items)
    warm_train = dataclasses.replace(cfg.train, num_train_epochs=cfg.copy_drill_epochs, max_steps=-1,
                                     seed=cfg.train.seed + offset)
    if cfg.copy_drill_first_turn_batch:
        drills = [search_turn(r, seed + offset) for r in drills]
        warm_train = dataclasses.replace(warm_train, per_device_train_batch_size=cfg.copy_drill_first_turn_batch)
    examples = [sft_example(r, profile.view) for r in drills]
    return dataclasses.replace(cfg, train=warm_train), examples, {"copy_drills": rows_hash(drills)}


def run_warmup(profile: ModelProfile, catalogue: Any, parent: str | Path, out_root: str | Path,
               vocab_texts: Sequence[str] = (), tracking: Tracking = Tracking.disabled(), *, seed: int = 0,
               log: LogFn = print_log, force: bool = False) -> tuple[StageResult, dict[str, Any]]:
    """The sft stage's copy-drill warm-up of ``parent`` (``profile.sft.copy_drills`` made-up drills, checkpoint
    ``<out_root>/sft_warmup/<version>``), with its extra epochs while the copy has not formed
    (``copy_drill_target_loss``) and fresh warm-ups while one ends above it (``copy_drill_restarts``); returns the
    last checkpoint of the first warm-up that reached the target and what the extra epochs and restarts did.

    Raises ``WarmupStalledError`` when none reached it: every warm-up checkpoint stays on disk, and a rerun with more
    restarts reuses them."""
    cfg = profile.sft
    losses: list[float | None] = []
    for restart in range(cfg.copy_drill_restarts + 1):
        warm_cfg, examples, hashes = warmup_plan(profile, catalogue, seed, restart)
        if restart:
            hashes = {**hashes, "restart": str(restart)}
        warm = train_sft(profile, "sft_warmup", warm_cfg, examples, [], hashes, parent, out_root, tracking, log,
                         force=force, vocab_texts=vocab_texts)
        warm, extra = _warm_up_until_copied(profile, warm_cfg, warm, examples, hashes, out_root, tracking, log,
                                            force)
        losses.append(extra["warmup_tail_loss"])
        if not warmup_stalled(cfg, extra["warmup_tail_loss"]):
            return warm, {**extra, "warmup_restarts": restart}
        if restart < cfg.copy_drill_restarts:
            log(f"sft_warmup: still above {cfg.copy_drill_target_loss} after {extra['warmup_extra_epochs']} extra "
                f"epochs: restart {restart + 1} of at most {cfg.copy_drill_restarts} from the parent")
    shown = ", ".join(f"{x:.3f}" for x in losses if x is not None)
    raise WarmupStalledError(
        f"sft_warmup: the copy-drill warm-up did not reach its target loss {cfg.copy_drill_target_loss} in "
        f"{len(losses)} warm-up{'s' * (len(losses) > 1)}, each with up to {cfg.copy_drill_extra_epochs} extra "
        f"epoch{'s' * (cfg.copy_drill_extra_epochs != 1)} (last-{cfg.copy_drill_loss_window}-step losses: "
        f"{shown}); an sft trained after it drops the request's words from its searches (world 202, session 36: "
        f"0.0% on every category). Its checkpoints are kept under "
        f"{Path(out_root) / 'sft_warmup'}. Raise copy_drill_restarts or copy_drill_extra_epochs (the sft asset's run "
        "config, or the profile's sft config), or raise copy_drill_target_loss above these losses to train the sft "
        "on this warm-up anyway.")


class WarmupStalledError(RuntimeError):
    """No copy-drill warm-up of the sft stage reached ``copy_drill_target_loss``."""


def warmup_stalled(cfg: Any, loss: float | None) -> bool:
    """Whether a warm-up whose tail loss is ``loss`` is above the sft config's target (no target: never)."""
    return cfg.copy_drill_target_loss is not None and loss is not None and loss > cfg.copy_drill_target_loss


def tail_loss(metrics: dict, window: int) -> float | None:
    """Mean training loss over the last ``window`` logged steps of a stage's ``metrics`` (None: none logged)."""
    losses = [h["loss"] for h in metrics.get("history") or [] if h.get("loss") is not None]
    return sum(losses[-window:]) / len(losses[-window:]) if losses else None


def _warm_up_until_copied(profile: ModelProfile, warm_cfg: Any, warm: StageResult, examples: list[dict],
                          hashes: dict[str, str], out_root: str | Path, tracking: Tracking, log: LogFn,
                          force: bool) -> tuple[StageResult, dict[str, Any]]:
    """More warm-up epochs while the warm-up's tail loss is above ``copy_drill_target_loss`` (at most
    ``copy_drill_extra_epochs``), each its own ``sft_warmup`` checkpoint on the one before, on a fresh schedule
    (the first ends with its rate decayed to 0, where a stalled copy stays stalled) and a new data order."""
    cfg = warm_cfg  # the warm-up's own TrainArgs (epochs, batch) with the sft stage's fields
    loss = first = tail_loss(warm.metrics, cfg.copy_drill_loss_window)
    extra = 0
    while warmup_stalled(cfg, loss) and extra < cfg.copy_drill_extra_epochs:
        extra += 1
        log(f"sft_warmup: loss {loss:.3f} over the last {cfg.copy_drill_loss_window} steps is above "
            f"{cfg.copy_drill_target_loss}: extra epoch {extra} of at most {cfg.copy_drill_extra_epochs}")
        train = dataclasses.replace(cfg.train, num_train_epochs=1, seed=cfg.train.seed + extra)
        warm = train_sft(profile, "sft_warmup", dataclasses.replace(cfg, train=train), examples, [],
                         {**hashes, "extra_epoch": str(extra)}, warm.path, out_root, tracking, log, force=force)
        loss = tail_loss(warm.metrics, cfg.copy_drill_loss_window)
    return warm, {"warmup_tail_loss_first": first, "warmup_extra_epochs": extra, "warmup_tail_loss": loss}


def from_params(ctx: StageContext) -> StageResult:
    return run_sft(ctx.profile, ctx.need("sft_rows"), ctx.need("parent"), ctx.out_root, ctx.tracking,
                   catalogue=ctx.optional_catalogue(), seed=ctx.seed, log=ctx.log, force=ctx.force)


def scaffold_from_params(ctx: StageContext) -> StageResult:
    """The ``scaffold`` arm (``training.chain.ARMS``): the sft recipe with no curated row."""
    return run_sft(ctx.profile, ctx.need("sft_rows"), ctx.need("parent"), ctx.out_root, ctx.tracking,
                   catalogue=ctx.catalogue(), seed=ctx.seed, log=ctx.log, force=ctx.force, curated=False,
                   stage="scaffold")
