"""benchmarks/curation_chain.py --rounds: the ratios a target is read from are the medians of each round's own."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import curation_chain  # noqa: E402


def test_each_round_is_a_ratio_of_its_own_minutes_and_the_figure_is_their_median():
    # orjson drifts 2.0 -> 1.0 -> 3.0 s between rounds; the chain drifts with it
    rounds = [{"orjson": 2.0, "naive": 20.0, "chain": 10.0, "chain_warm": 8.0},
              {"chain_warm": 4.0, "chain": 5.0, "naive": 15.0, "orjson": 1.0},
              {"orjson": 3.0, "naive": 30.0, "chain": 20.0, "chain_warm": 12.0}]
    paired = curation_chain.paired_rounds(rounds)
    assert [r["chain_vs_orjson_cpu"] for r in paired["rounds"]] == [0.2, 0.2, 0.15]
    assert [r["chain_vs_naive_cpu"] for r in paired["rounds"]] == [2.0, 3.0, 1.5]
    assert [r["chain_warm_vs_orjson_cpu"] for r in paired["rounds"]] == [0.25, 0.25, 0.25]
    assert paired["median"] == {"chain_vs_orjson_cpu": 0.2, "chain_vs_naive_cpu": 2.0,
                                "chain_warm_vs_orjson_cpu": 0.25, "chain_warm_vs_naive_cpu": 2.5}
    assert paired["range"]["chain_vs_orjson_cpu"] == [0.15, 0.2]


def test_rounds_without_a_warm_chain_give_the_cold_ratios_only():
    paired = curation_chain.paired_rounds([{"orjson": 1.0, "naive": 8.0, "chain": 4.0}])
    assert paired["median"] == {"chain_vs_orjson_cpu": 0.25, "chain_vs_naive_cpu": 2.0}
