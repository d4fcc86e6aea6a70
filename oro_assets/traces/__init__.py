"""Raw firehose traces: format detection, normalisation to the canonical schema, streaming reader.

* :mod:`.formats` — the raw formats and shared field parsing (``detect_format``)
* :mod:`.sharegpt` — ShareGPT / NeMo ``conversations`` rows read as OpenAI messages
* :mod:`.normalize` — ``normalize_record(obj, provenance=...)`` / ``NormalizationError``
* :mod:`.schema` — Arrow schemas, ``validate_row``, ``arguments_dict``, ``to_hf_messages``,
  ``parse_json_columns``, ``to_oro_steps``
* :mod:`.reader` — ``iter_partition_files``, ``read_records`` (JSONL and Parquet parts; provenance + ingest
  quarantine)
* :mod:`.ingest` — ``normalize_partition`` (two Parquet tables, atomic), ``ingest_batches``, ``iter_normalized``
* :mod:`.samples` — realistic example records of every format (tests, benchmarks)

No Dagster imports here.
"""
