#!/usr/bin/env bash
# README command 1: install into .venv and run the main job on the embedded default
# (arena -> curation -> training (tiny profile) -> evaluation report) for one day.
# Extra arguments go to `oro-assets main` (e.g. --traces 500 --date 2026-03-01).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
export TQDM_DISABLE=1 HF_DATASETS_DISABLE_PROGRESS_BARS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec .venv/bin/oro-assets main "$@"
