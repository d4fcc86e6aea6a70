"""Regenerate notebooks/explore.ipynb from the cells below (the notebook is committed without outputs).

Run: ``.venv/bin/python scripts/make_notebook.py``. ``oro_assets_tests/ops/test_notebook.py`` executes
the result headless against a freshly materialised data root.
"""

from pathlib import Path

import nbformat

CELLS = [
    ("markdown", """# Exploring an oro-assets partition

DuckDB views over the warehouse, the rejection funnel and a plot, one training example's lineage, and the
evaluation report. Every path comes from `ORO_DATA_DIR` (default `./data`), like the rest of oro-assets;
run `bash scripts/main.sh` (or `oro-assets main`) first."""),
    ("code", """from pathlib import Path

import duckdb
import polars as pl

from oro_assets.settings import load_settings

settings = load_settings()
# read_only: the notebook never competes with a running materialisation for the write lock.
con = duckdb.connect(str(settings.duckdb_path), read_only=True)
print('data root:', settings.data_dir)
con.sql('show tables').pl()"""),
    ("markdown", "## One partition of the trace ledger\n\nOne row per raw record: its fate, the stage that decided it and one reason code."),
    ("code", """partition = con.sql('select max(partition) from trace_ledger').fetchall()[0][0]
ledger = con.sql('select * from trace_ledger where partition = ?', params=[partition]).pl()
print(partition, ledger.height, 'raw records,', ledger.filter(pl.col('fate') == 'kept').height, 'kept')
reasons = (
    ledger.group_by('fate', 'stage', 'reason')
    .len(name='records')
    .sort(['records', 'stage', 'reason'], descending=[True, False, False])
)
reasons"""),
    ("markdown", "## Rejection funnel\n\nRecords entering each curation stage, rejected there, and remaining after it."),
    ("code", """STAGES = ['ingest', 'normalize', 'structural', 'gates', 'dedup', 'split']
rejected_at = dict(
    ledger.filter(pl.col('fate') == 'rejected').group_by('stage').len().iter_rows()
)
rows, remaining = [], ledger.height
for stage in STAGES:
    rejected = rejected_at.get(stage, 0)
    rows.append({'stage': stage, 'entering': remaining, 'rejected': rejected, 'remaining': remaining - rejected})
    remaining -= rejected
funnel = pl.DataFrame(rows)
funnel"""),
    ("code", """import matplotlib.pyplot as plt

by_reason = reasons.filter(pl.col('fate') == 'rejected').sort('records')
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
left.bar(funnel['stage'].to_list(), funnel['remaining'].to_list(), color='tab:green')
left.set_ylabel('records remaining')
left.set_title(f'Funnel, {partition}')
right.barh(by_reason['reason'].to_list(), by_reason['records'].to_list(), color='tab:red')
right.set_xlabel('records')
right.set_title('Rejections by reason')
fig.tight_layout()
plt.show()"""),
    ("markdown", "## SQL across assets\n\nThe DuckDB views join the warehouse tables directly: kept traces per input format and pool."),
    ("code", """con.sql('''
    select n.format, l.pool, count(*) as traces, round(avg(n.n_steps), 1) as avg_steps
    from trace_ledger l join normalized_traces n using (trace_id, partition)
    where l.partition = ? and l.fate = 'kept'
    group by all order by traces desc
''', params=[partition]).pl()"""),
    ("markdown", "## Lineage of one training example\n\nFrom the raw file and line through every curation decision to the datasets and checkpoints."),
    ("code", """from oro_assets.ops.lineage import explain, format_explanation

sft_path = settings.warehouse_dir / 'sft_dataset.parquet'
sft_ids = pl.read_parquet(sft_path, columns=['id'])['id'] if sft_path.exists() else pl.Series('id', [], pl.String)
if sft_ids.len() > 0:
    example_id = sft_ids.sort()[0]
else:  # a small day can leave the SFT set empty: any kept trace tells the same story
    example_id = ledger.filter(pl.col('fate') == 'kept')['trace_id'].sort()[0]
story = explain(example_id, settings.warehouse_dir, settings.checkpoints_dir)
print(format_explanation(story))"""),
    ("markdown", "## Evaluation report\n\nWritten by the `eval_report` asset (the evaluation group of the main job)."),
    ("code", """import json

from IPython.display import Image, Markdown, display

report_md = settings.reports_dir / 'eval_report.md'
report_json = settings.reports_dir / 'eval_report.json'
if report_json.exists():
    summary = json.loads(report_json.read_text())
    asr = pl.DataFrame(
        [{'stage': s, 'asr': summary['metrics'][s].get('asr')} for s in summary['stages']],
        schema={'stage': pl.String, 'asr': pl.Float64},
    )
    display(asr)
    display(Markdown(report_md.read_text()))
    for png in ('asr_per_stage.png', 'pass_at_k.png'):
        if (settings.reports_dir / png).exists():
            display(Image(filename=str(settings.reports_dir / png)))
else:
    print(f'no evaluation report yet at {report_md}: materialise the main job (oro-assets main)')"""),
]


def build() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src)
        for kind, src in CELLS
    ]
    # Stable cell ids keep the committed notebook byte-identical across regenerations.
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def main() -> None:
    out = Path(__file__).resolve().parents[1] / "notebooks" / "explore.ipynb"
    nbformat.write(build(), out)
    print(out)


if __name__ == "__main__":
    main()
