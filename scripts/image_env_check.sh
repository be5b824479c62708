#!/usr/bin/env bash
# Build the image's Python environment the way the Dockerfile does, offline, and run the README's first job in it.
# For a GPU machine with no Docker daemon and no package index: the wheels the machine lacks travel in .whl/
# (and .whl/fallback/); torch comes from there too if carried, else it is the machine's own python3's.
# Usage: scripts/image_env_check.sh OUT_DIR [JOB_TIMEOUT_S]
#   writes OUT_DIR/image_env_check.txt (what ran and how it ended), install.log and run.log
set -uo pipefail
mkdir -p "${1:?output folder}" && out=$(cd "$1" && pwd)
job_timeout=${2:-480}
repo=$(cd "$(dirname "$0")/.." && pwd)
result="$out/image_env_check.txt"
venv=$(mktemp -d /tmp/kg-image-venv.XXXXXX)
data=$(mktemp -d /tmp/kg-image-data.XXXXXX)  # stands for the image's /data volume
spec="ReLU on a float32 tensor x of shape [1000, 1000]"  # README.md, the first set-up command
: >"$result"
note() { echo "$1=$2" | tee -a "$result"; }
fail() { note outcome "$1"; exit 1; }

# Never an index: every install below must be satisfied by what is carried or already on the machine.
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
links=(--find-links "$repo/.whl")
[ -d "$repo/.whl/fallback" ] && links+=(--find-links "$repo/.whl/fallback")
note machine "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo none)"
note user "$(id -un)"

# The Dockerfile: python -m venv /opt/venv. Made without pip (and so without the old setuptools a 3.11 venv bundles,
# which would shadow the machine's and need an index to upgrade); the machine's pip installs into it.
python3 -m venv --without-pip "$venv" >>"$out/install.log" 2>&1 || fail "no venv could be made"
pip=(python3 -m pip --python "$venv/bin/python")
py="$venv/bin/python"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

# The Dockerfile's torch layer: pip install "$TORCH". Offline that is a carried torch wheel, or else the machine's
# torch (and with it its Triton and CUDA wheels) seen through a .pth file, the way a base image would provide it.
if compgen -G "$repo/.whl/torch-*.whl" >/dev/null; then
  note torch_from carried
  "${pip[@]}" install "${links[@]}" torch >>"$out/install.log" 2>&1 || fail "torch install failed"
else
  machine_site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))') \
    || fail "no torch carried and none on the machine"
  note torch_from "machine ($machine_site)"
  echo "$machine_site" >"$site/_machine_torch.pth"
fi

# The Dockerfile's dependency layer, then the project without them. Build isolation would need setuptools as a
# carried wheel; without one, the setuptools already visible builds the project.
cd "$repo" || fail "no repository"
"$py" -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
  >"$venv/requirements.txt"
"${pip[@]}" install "${links[@]}" -r "$venv/requirements.txt" >>"$out/install.log" 2>&1 \
  || fail "dependencies did not install offline (install.log names the missing one)"
isolation=(--no-build-isolation)
compgen -G "$repo/.whl/setuptools-*.whl" >/dev/null && isolation=()
"${pip[@]}" install "${links[@]}" "${isolation[@]}" --no-deps . >>"$out/install.log" 2>&1 \
  || fail "the project did not install"
rm -rf "$repo/build"
note versions "$("$py" -c 'import sys, torch, triton; print(sys.version.split()[0], "torch", torch.__version__,
  "triton", triton.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1)"

# The image's settings and working folder (/data); the job itself on the offline defaults, as README.md runs it.
export KERNELGEN_DATABASE_URL="sqlite:///$data/kernelgen.db" KERNELGEN_WORK_DIR="$data/work" \
  KERNELGEN_ARTIFACT_ROOT="$data/jobs" PATH="$venv/bin:$PATH" PYTHONUNBUFFERED=1
unset PYTHONPATH  # only the venv: nothing of the checkout or of earlier carried wheels
cd "$data" || fail "no data folder"
note kernelgen "$(command -v kernelgen)"
note command "kernelgen run \"$spec\""
start=$(date +%s.%N)
timeout "$job_timeout" kernelgen run "$spec" >"$out/run.log" 2>&1
code=$?
end=$(date +%s.%N)
note exit_code "$code"
note seconds "$("$py" -c "print(round($end - $start, 1))")"
report=$(compgen -G "$data/kernelgen_out/*/report.json" | head -1)
status=$([ -n "$report" ] && "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["status"])' "$report")
note report_status "${status:-no report.json}"
if [ "$code" -eq 0 ] && [ "$status" = verified ]; then note outcome verified; else note outcome "not verified"; fi
[ "$code" -eq 0 ]
