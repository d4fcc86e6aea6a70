"""Where the curation chain's CPU goes, cold: a SIGPROF sampler over ``curation_chain.chain`` (issue 33).

Runs the chain ``--passes`` times over the cached day in this process, each on a fresh work dir (a cold judge cache)
with the rule judge's, the structural filter's and dedup's per-text caches cleared first, as in a fresh process;
samples the Python stack every CPU tick and prints each function's inclusive and self share of the samples, in us a
record. Run it under ``nice``; ``ORO_NATIVE=0`` profiles the Python references.

    nice -n 19 .venv/bin/python benchmarks/chain_profile.py --traces 3000 --passes 5
"""

from __future__ import annotations

import argparse
import collections
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import curation_chain as cc  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--cache", default="/tmp/chain-bench", help="where generated days are kept (curation_chain's)")
    ap.add_argument("--passes", type=int, default=5, help="chain runs sampled (more samples, same shares)")
    ap.add_argument("--top", type=int, default=60)
    args = ap.parse_args(argv)

    files = cc.generate(Path(args.cache), args.traces, args.seed)[1]
    from oro_assets.curation import dedup, structural
    from oro_assets.judge import rule

    cc.warm_up()  # one-time imports and tables paid before sampling

    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    samples = 0

    def sample(signum, frame) -> None:
        nonlocal samples
        samples += 1
        seen = set()
        first = True
        while frame is not None:
            code = frame.f_code
            name = f"{code.co_name} ({code.co_filename.rsplit('/oro_assets/', 1)[-1]}:{code.co_firstlineno})"
            if first:
                own[name] += 1
                first = False
            if name not in seen:
                seen.add(name)
                inclusive[name] += 1
            frame = frame.f_back

    signal.signal(signal.SIGPROF, sample)
    cpu = 0.0
    records = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.passes):
            cc.clear_text_caches(rule, structural, dedup)
            dedup._word_hash.clear()
            work = Path(tmp) / f"pass{i}"
            t0 = time.process_time()
            signal.setitimer(signal.ITIMER_PROF, 0.0005, 0.0005)
            result = cc.chain(files, work)
            signal.setitimer(signal.ITIMER_PROF, 0, 0)
            cpu += time.process_time() - t0
            records += result["records"]
            shutil.rmtree(work, ignore_errors=True)
    per_sample = 1e6 * cpu / max(1, samples) / max(1, records)
    print(f"{samples} samples, {1e6 * cpu / max(1, records):.1f} us a record under the sampler")
    for title, counts in (("inclusive", inclusive), ("self", own)):
        print(f"--- {title}")
        for name, n in counts.most_common(args.top):
            print(f"{100 * n / samples:5.1f}% {n * per_sample:7.1f} us  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
