import gzip
import hashlib

import pytest

from oro_assets import jsonio

SIM_DATE = "2026-01-02"


@pytest.fixture(scope="session")
def simulated_day(tmp_path_factory):
    """A small simulated firehose day, normalised: list of (canonical row, truth row)."""
    from oro_assets.arena.firehose import simulate_day
    from oro_assets.traces.normalize import NormalizationError, normalize_record

    out = tmp_path_factory.mktemp("firehose")
    simulate_day(SIM_DATE, 300, out, seed=15, workers=1)
    truth = {}
    for line in (out / "_truth" / f"{SIM_DATE}.jsonl").read_text().splitlines():
        row = jsonio.loads(line)
        truth[row["line_key"]] = row
    pairs = []
    for part in sorted((out / SIM_DATE).glob("part-*.jsonl.gz")):
        with gzip.open(part) as fh:
            lines = fh.read().split(b"\n")
        for line_no, raw in enumerate(lines, start=1):
            if not raw:
                continue
            try:
                obj = jsonio.loads(raw)
                row = normalize_record(obj, provenance={"source_file": str(part), "line_no": line_no,
                                                        "partition": SIM_DATE,
                                                        "raw_sha256": hashlib.sha256(raw).hexdigest()})
            except (jsonio.JSONDecodeError, NormalizationError):
                continue  # broken lines are the ingest's business, not the judge's
            pairs.append((row, truth[f"{part.name}:{line_no}"]))
    return pairs
