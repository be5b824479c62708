#!/usr/bin/env bash
# Build .site/site.tar.xz: our dependencies and Ray, unpacked for the device's Python 3.12, in one archive under the
# 64 MiB a device call may carry (Ray's own wheel is 78 MB; without its Java jars and its ML libraries, and with xz,
# everything fits in about 50 MB). _device_env.sh unpacks it into /tmp/site.
# Usage: scripts/build_device_site.sh [--no-ray]   (from the repository root; .site/ is ignored through .git/info/exclude)
# --no-ray: the local executor's packages only (about 19 MB), leaving room in the carry for a batch's folder.
set -euo pipefail
work=$(mktemp -d)
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
  -d "$work/wheels" "langgraph>=1.0" "sqlmodel>=0.0.22" "alembic>=1.13" "pydantic>=2.7" "pydantic-settings>=2.4" \
  "typer>=0.12" "rich>=13" "jinja2>=3.1" "psycopg[binary]>=3.1" "fastapi>=0.115" "uvicorn>=0.30" \
  "langgraph-checkpoint-sqlite>=2" "langgraph-checkpoint-postgres>=2" "psycopg-pool>=3.2" "openai>=1.40" \
  $([ "${1:-}" = --no-ray ] || echo "ray==${RAY_VERSION:-2.60.0}")
mkdir -p "$work/site"
for wheel in "$work"/wheels/*.whl; do unzip -q -o "$wheel" -d "$work/site"; done
rm -rf "$work"/site/ray/{jars,rllib,data,serve,tune,train,llm}
mkdir -p .site
tar cJf .site/site.tar.xz -C "$work/site" .
rm -rf "$work"
ls -la .site/site.tar.xz
