#!/usr/bin/env bash
# JupyterLab on the notebooks, in .venv (created on first use). Extra arguments go to jupyter lab.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
extra=()
if [[ $(id -u) == 0 ]]; then
  # Containers often run as root, and jupyter refuses root unless told: say so once, then allow it.
  echo "ortnb: running as root (common in containers): starting JupyterLab with --allow-root" >&2
  extra+=(--allow-root)
fi
exec jupyter lab --notebook-dir=notebooks "${extra[@]}" "$@"
