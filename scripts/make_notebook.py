"""Regenerate notebooks/explore.ipynb from the cells below (the notebook is committed without outputs)."""

from pathlib import Path

import nbformat

CELLS = [
    ("markdown", "# Exploring an oro-assets partition\n\nDuckDB views over the warehouse, the rejection funnel, one example's lineage and the evaluation report."),
    ("code", "import os\nfrom pathlib import Path\n\nimport duckdb\nimport polars as pl\n\nfrom oro_assets.settings import load_settings\n\nsettings = load_settings()\ncon = duckdb.connect(str(settings.duckdb_path), read_only=True)\nprint(settings.data_dir)\ncon.sql('show tables').pl()"),
    ("code", "partition = con.sql('select max(partition) from trace_ledger').fetchone()[0]\nledger = con.sql(f\"select * from trace_ledger where partition = '{partition}'\").pl()\nprint(partition, ledger.height, 'raw records')\nfunnel = ledger.group_by('fate', 'stage', 'reason').len().sort('len', descending=True)\nfunnel"),
    ("code", "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\nrejected = funnel.filter(pl.col('fate') == 'rejected')\nfig, ax = plt.subplots(figsize=(7, 3.5))\nax.barh(rejected['reason'].to_list(), rejected['len'].to_list())\nax.set_xlabel('records')\nax.set_title(f'Rejections by reason, {partition}')\nfig.tight_layout()"),
    ("code", "normalized = pl.read_parquet(settings.warehouse_dir / 'normalized_traces' / f'{partition}.parquet')\nnormalized.select('trace_id', 'format', 'problem_id', 'n_steps', 'n_tool_calls').head()"),
    ("code", "from oro_assets.curation.lineage import explain, format_explanation\n\nsft = pl.read_parquet(settings.warehouse_dir / 'sft_dataset.parquet')\nexample_id = sft['id'][0]\nprint(format_explanation(explain(example_id, settings.warehouse_dir, settings.checkpoints_dir)))"),
    ("code", "report = settings.reports_dir / 'eval_report.md'\nprint(report.read_text() if report.exists() else 'no evaluation report yet: run the main job')"),
]


def main() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src) for kind, src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out = Path(__file__).resolve().parents[1] / "notebooks" / "explore.ipynb"
    nbformat.write(nb, out)
    print(out)


if __name__ == "__main__":
    main()
