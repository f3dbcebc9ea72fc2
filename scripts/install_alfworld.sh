#!/usr/bin/env bash
# Install ALFWorld (TextWorld with its PDDL planner, and alfworld) into .venv; scripts/install.sh calls it.
# Usage: scripts/install_alfworld.sh   (rerunnable; the pip output goes to .venv/alfworld-install.log)
# Exit status 1 with a message naming the failed step, the log and the command to retry.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=.venv/alfworld-install.log
RETRY="bash scripts/install_alfworld.sh"
if [ ! -x .venv/bin/python ]; then
  echo "install_alfworld.sh: .venv is missing; run scripts/install.sh first" >&2
  exit 1
fi
: >"$LOG"

fail() {
  echo "install_alfworld.sh: $1 failed, so ALFWorld is not installed and its tests skip." >&2
  echo "  last lines of the log ($LOG):" >&2
  tail -n 12 "$LOG" | sed 's/^/    /' >&2
  for tool in c++ make; do
    command -v "$tool" >/dev/null || echo "  '$tool' is not on PATH: fast-downward compiles C++ (Debian/Ubuntu: apt-get install g++ make)" >&2
  done
  echo "  retry: $RETRY   (leave ALFWorld out: ACTUNE_NO_ALFWORLD=1 scripts/install.sh)" >&2
  exit 1
}

# textworld[pddl] needs fast-downward-textworld, which PyPI has as source only. Its setup.py compiles
# the planner by running a bare `python` from PATH. Without .venv/bin first on PATH that is another
# interpreter, and inside pip's isolated build it runs pip's sitecustomize, which replays this venv's
# .pth files with an empty sys.path: actune's editable-install hook fails to import there and the
# standard library is left off sys.path ("No module named 'traceback'", then "'glob'"). The venv's
# own python has those imports done before sitecustomize runs, so the build goes through.
echo "install_alfworld.sh: installing TextWorld; fast-downward compiles from source unless pip has a cached wheel (3-5 minutes on 2 cores)"
PATH="$PWD/.venv/bin:$PATH" .venv/bin/pip install -e ".[alfworld]" >>"$LOG" 2>&1 \
  || fail "pip install -e \".[alfworld]\" (textworld[pddl], fast-downward-textworld)"
# alfworld's declared requirements pull packages (torch vision stack, ai2thor...) that text-only play
# never imports.
.venv/bin/pip install --no-deps "alfworld==0.4.2" >>"$LOG" 2>&1 || fail "pip install --no-deps alfworld==0.4.2"
.venv/bin/python -c "import fast_downward, textworld.gym, alfworld.agents.environment.alfred_tw_env; fast_downward.load_lib()" >>"$LOG" 2>&1 \
  || fail "importing textworld, alfworld and fast-downward's compiled library"
echo "install_alfworld.sh: ALFWorld installed"
