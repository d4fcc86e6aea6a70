#!/usr/bin/env bash
# README command 2: install into .venv (with the dev extra) and run the whole test suite.
# As root it also installs Debian's chromium + chromedriver (browser test) and postgresql
# (scale-out test); elsewhere those tests skip with a message (never in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh dev
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  need=()
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  if [ "${#need[@]}" -gt 0 ]; then
    echo "installing Debian packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null; }
  fi
fi
export TQDM_DISABLE=1 HF_DATASETS_DISABLE_PROGRESS_BARS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# two workers (the CI machine's two cores); each folder of tests runs on one of them (oro_assets_tests/conftest.py)
exec .venv/bin/python -m pytest -n 2 --dist loadscope "$@"
