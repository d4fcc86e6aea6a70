"""The firehose sensor's change detection: a day is fingerprinted by the part files the reader reads."""

from oro_assets.defs.ops.automation import _day_fingerprints


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_days_with_several_parts_and_parquet_parts_are_fingerprinted(tmp_path):
    _write(tmp_path / "2026-01-02" / "part-00000.jsonl", '{"a": 1}\n')
    _write(tmp_path / "2026-01-02" / "part-00001.jsonl", '{"a": 2}\n')
    _write(tmp_path / "2026-01-03" / "train-00000-of-00001.parquet", "PAR1")
    _write(tmp_path / "2026-01-04" / "_SUCCESS", "")  # only a marker: not a day with parts
    _write(tmp_path / "notes" / "part.jsonl", "{}\n")  # not a day folder
    before = _day_fingerprints(str(tmp_path))
    assert sorted(before) == ["2026-01-02", "2026-01-03"]

    _write(tmp_path / "2026-01-02" / ".part-00002.jsonl.tmp", "{}\n")  # hidden: the reader skips it
    assert _day_fingerprints(str(tmp_path)) == before

    _write(tmp_path / "2026-01-03" / "train-00000-of-00001.parquet", "PAR1 longer")
    after = _day_fingerprints(str(tmp_path))
    assert after["2026-01-02"] == before["2026-01-02"] and after["2026-01-03"] != before["2026-01-03"]
