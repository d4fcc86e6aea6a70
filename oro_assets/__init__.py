"""oro-assets: the ORO SN15 trajectory firehose as Dagster software-defined assets."""
