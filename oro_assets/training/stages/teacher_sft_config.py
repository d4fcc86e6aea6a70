"""Config of the ``teacher_sft`` stage: continued SFT on a teacher's successful trajectories."""

from __future__ import annotations

from dataclasses import dataclass, field

from oro_assets.training.stages.train_args import TrainArgs


@dataclass(frozen=True)
class TeacherSFTStageConfig:
    """Teacher-SFT (reference §6: teacher trajectories on train problems, voucher bucket upsampled)."""

    train: TrainArgs = field(default_factory=TrainArgs, metadata={"help": "Optimiser and schedule."})
    max_length: int = field(default=14_336, metadata={"help": "Token length an example is cut to."})
    voucher_upsample: int = field(default=3, metadata={"help": "Copies of each Voucher trajectory."})
    shop_upsample: int = field(default=1, metadata={
        "help": "Copies of each Shop trajectory: beside thousands of one-product drills the few Shop episodes are "
                "where the stage sees a request answered with several products."})
    max_problems: int | None = field(default=None, metadata={"help": "Train problems the teacher plays (None: all)."})
    repeats: int = field(default=1, metadata={
        "help": "Trajectories per problem (scripted teachers are deterministic: >1 only repeats them)."})
    synthetic_problems: int = field(default=0, metadata={
        "help": "Extra Product problems generated over catalogue products that are not eval ground truths "
                "(corpus.synthetic_product_problems)."})
    synthetic_option_share: float = field(default=0.0, metadata={
        "help": "Share of the synthetic problems that also ask for one or two of the target's own variant options "
                "or attributes, which only view_product_information shows (the teacher then views and checks)."})
    categories: tuple[str, ...] | None = field(default=None, metadata={
        "help": "Curriculum: train problems of these categories only (None: all)."})
    # on real data the brand word is predictable from the product words, and a tiny model then memorises brands
    # instead of copying them
    copy_drills: int = field(default=0, metadata={"help": "Copy drills (corpus.copy_drill_rows) mixed in."})
    word_swaps: int = field(default=0, metadata={"help": "Word-swap variants per teacher row (training.augment)."})
    option_drills: int = field(default=0, metadata={
        "help": "Made-up episodes in the teacher's words where the hits tie on the list and only the viewed details "
                "decide (corpus.option_drill_rows): reading a detail page against the request."})
    quote_shop_items: bool = field(default=False, metadata={
        "help": "The scripted teacher's plan for each item of a Shop request first quotes the request's clause for it "
                "('Item 2: Second, a ...; words ...'): the search words of a later item are then copied from a quote a "
                "few tokens back, and the quote itself from the request by its ordinal."})
    count_items: bool = field(default=False, metadata={
        "help": "The scripted teacher names each item of a request for several products with their number ('Item 2 "
                "of 4: words ...'): whether another item follows is then read from the plan a few tokens back, not "
                "counted over the request."})
    list_items: bool = field(default=False, metadata={
        "help": "The scripted teacher and the option drills open the first plan with every item's first key word "
                "('Items: tilace, mofonu, end.') and follow each choice with the word after the chosen item's there "
                "('Then mofonu.' / 'Then end.'), one product or several: going on after a choice is then a copy from "
                "a line a few tokens back, which the one-product episodes teach too, not a count over the request."})
    option_drill_plain_share: float = field(default=0.0, metadata={
        "help": "Share of the option drills whose request asks for no option and is answered from the list without "
                "a view, so that viewing stays conditional on the request."})
    option_drill_multi_share: float = field(default=0.0, metadata={
        "help": "Share of the other option drills that are Shop requests for 2-4 products, in the teacher's multi-item "
                "words: the next item's plan follows each choice but the last. One-product drills "
                "teach answering right after the first choice, which a request for several products must not do."})

    def __post_init__(self) -> None:
        for name in ("option_drill_plain_share", "option_drill_multi_share", "synthetic_option_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"teacher_sft.{name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("voucher_upsample", "shop_upsample", "repeats"):
            if getattr(self, name) < 1:
                raise ValueError(f"teacher_sft.{name} must be at least 1 (copies of a row), got {getattr(self, name)}")
