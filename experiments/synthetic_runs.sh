#!/usr/bin/env bash
# One measured run per synthetic task (docs/RESULTS.md). Usage: bash experiments/synthetic_runs.sh OUTDIR
set -euo pipefail
out="${1:-/tmp/lvf_synthetic}"
mkdir -p "$out"
run() {  # name config overrides...
  local name="$1" config="$2"; shift 2
  python -m experiments.main --config="$config" --workdir="$out/$name" \
    --config.train.progress_bar=False --config.train.tensorboard=False "$@"
}
run adding_ncgru configs/adding.py:ncgru --config.train.steps=1500 --config.train.eval_every=250
run parenthesis_ncgru configs/parenthesis.py:ncgru --config.train.steps=1500 --config.train.eval_every=250
run denoise_ncgru configs/denoise.py:ncgru --config.train.steps=800 --config.train.batch_size=64 --config.train.eval_every=200
python - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
for name in sorted(os.listdir(out)):
  p = os.path.join(out, name, "summary.json")
  if os.path.exists(p):
    s = json.load(open(p))
    print(name, json.dumps({k: s[k] for k in ("model", "task", "parameters", "steps", "seconds",
                                             "baseline_loss", "test_at_best_validation")}))
PY
