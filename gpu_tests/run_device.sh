#!/usr/bin/env bash
# The GPU gate on a lent GPU host without network: flashinfer-python 0.6.8.post1 -> 0.6.11
# (suites + old-vs-new timing) and an A/A timing run (0.6.11 against itself).
# Wheels come along in .whl/{old,new,shared} (see gpu_tests/RESULTS.md for how they were got).
set -uo pipefail
export PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
W=${WHEELS:-.whl}
OUTDIR=${OUT:-/tmp/out}
install() { python3 -m pip install -q --no-index --no-deps --no-compile --target "$1" "${@:2}"; }
install /tmp/site "$W"/shared/*.whl && install /tmp/fi_old "$W"/old/*.whl \
  && install /tmp/fi_new "$W"/new/*.whl || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
mkdir -p /tmp/gate
common=(--extra-path /tmp/site --workspace /tmp/fiws)
timeout "${AB_TIMEOUT:-330}" python3 -m bot gpu-gate --baseline /tmp/fi_old --candidate /tmp/fi_new \
  --out /tmp/gate/ab "${common[@]}" "$@" > /tmp/gate/ab.md 2> /tmp/gate/ab.log
echo "A/B exit $?"; cat /tmp/gate/ab.log; cat /tmp/gate/ab.md
timeout "${AA_TIMEOUT:-150}" python3 -m bot gpu-gate --baseline /tmp/fi_new --candidate /tmp/fi_new \
  --out /tmp/gate/aa --no-tests "${common[@]}" > /tmp/gate/aa.md 2> /tmp/gate/aa.log
echo "A/A exit $?"; cat /tmp/gate/aa.log; cat /tmp/gate/aa.md
for label in baseline candidate; do
  echo "== pytest $label (tail)"; tail -n 25 /tmp/gate/ab/pytest-$label.log 2>/dev/null
done
tar czf "$OUTDIR/gate.tgz" -C /tmp/gate . 2>/dev/null
