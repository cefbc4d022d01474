#!/usr/bin/env bash
# The GPU gate on a lent multi-GPU host without network (nvidia-h200-x2 or -x4), in phases that
# fit the 600 s command limit, each one call while the machine stays warm:
#   bash gpu_tests/run_multigpu.sh gate     JIT builds of both versions in parallel (and
#                                           0.6.10's trtllm_comm), then the A/B gate
#                                           0.6.8.post1 -> 0.6.11 on every GPU of the host
#   bash gpu_tests/run_multigpu.sh timing   fused-vs-unfused timing on 2 GPUs (and on 4 where
#                                           the host has them), then 0.6.10's allreduce suite
#                                           with short rank deadlines (RUN_MID=0 skips it)
#   bash gpu_tests/run_multigpu.sh x4       on a 4-GPU host: JIT builds, the A/B gate of the
#                                           multi-GPU tests (sub-group contract) on 4 GPUs,
#                                           fused-vs-unfused timing on 4 GPUs
# Wheels come along in .whl/{old,new,v0610,shared}; installs, JIT caches and results go to
# .out/run (git-ignored, so they survive between calls on a warm machine); each phase leaves
# PHASE.tgz in $OUT. NVLink multicast stays off throughout.
set -uo pipefail
export PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
phase=${1:?phase: gate, timing or x4}
W=${WHEELS:-.whl}
R=${RUNDIR:-$PWD/.out/run}
N=$(nvidia-smi -L | wc -l)
O=${OUT:-/tmp/out}
OLD=0.6.8.post1 NEW=0.6.11 MID=0.6.10
mkdir -p "$R/ws" "$R/logs"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

install() {  # install DIR WHEEL...: once per machine
  [ -f "$1/.installed" ] && return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$1" "${@:2}" \
    && touch "$1/.installed"
}
install "$R/site" "$W"/shared/*.whl && install "$R/fi_$OLD" "$W"/old/*.whl \
  && install "$R/fi_$NEW" "$W"/new/*.whl && install "$R/fi_$MID" "$W"/v0610/*.whl || exit 1

on() {  # on VERSION CMD...: run CMD with that install and its JIT workspace
  local v=$1; shift
  PYTHONPATH="$R/fi_$v:$R/site" FLASHINFER_WORKSPACE_BASE="$R/ws/workspace-fi_$v" "$@"
}

warm() {  # warm VERSION GROUP: build one JIT group, log its time
  on "$1" python3 gpu_tests/warm_jit.py "$2" > "$R/logs/warm-$1-$2.log" 2>&1
  echo "warm $1 $2 exit $?" >> "$R/logs/warm-$1-$2.log"
}

suite() {  # suite VERSION NAME [pytest args]: the suite against one install, JUnit + observations
  local v=$1 name=$2; shift 2
  mkdir -p "$R/$name"
  on "$v" env PINBUMP_GPU_REPORT="$R/$name/observations-$v.json" python3 -m pytest gpu_tests \
    -q -rs --junitxml="$R/$name/junit-$v.xml" -o "junit_suite_name=gpu-$v" "$@" \
    > "$R/$name/pytest-$v.log" 2>&1
  echo "pytest $v ($name) exit $?: $(tail -n 1 "$R/$name/pytest-$v.log")"
}

info() {
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  nvidia-smi topo -m
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
}

gate() {  # gate NAME TIMEOUT [gpu-gate args]: the A/B gate old -> new into $R/NAME
  local name=$1 limit=$2; shift 2
  timeout "$limit" python3 -m bot gpu-gate --baseline "$R/fi_$OLD" --candidate "$R/fi_$NEW" \
    --extra-path "$R/site" --out "$R/$name" --workspace "$R/ws" --pytest-arg=-rs "$@" \
    > "$R/$name.md" 2> "$R/$name.log"
  echo "gate $name exit $?"
  stamp "gate $name done"
  cat "$R/$name.log" "$R/$name/summary.md" 2>/dev/null
  for label in baseline candidate; do
    echo "== pytest $label"
    grep -E "passed|failed|FAILED|SKIPPED|Error" "$R/$name/pytest-$label.log" | head -40
  done
}

fused() {  # fused N LIMIT: fused-vs-unfused timing on GPUs 0..N-1, both versions
  local n=$1 limit=$2 devs
  devs=$(seq -s, 0 $(( n - 1 )))
  CUDA_VISIBLE_DEVICES=$devs timeout "$limit" python3 gpu_tests/fused_perf.py \
    --baseline "$R/fi_$OLD" --candidate "$R/fi_$NEW" --extra-path "$R/site" \
    --world "$n" --out "$R/fused" --workspace "$R/ws" > "$R/logs/fused-$n.log" 2>&1
  echo "fused_perf $n GPUs exit $?"; stamp "fused $n done"
  cat "$R/fused/fused-${n}gpu.md" 2>/dev/null || tail -n 60 "$R/logs/fused-$n.log"
}

case $phase in
gate)
  info
  stamp "JIT builds start"
  warm "$MID" comm &
  mid=$!
  for v in $OLD $NEW; do for g in comm norm fp4 host; do warm "$v" "$g" & done; done
  for j in $(jobs -p); do [ "$j" = "$mid" ] || wait "$j"; done
  grep -hE "^warm|Error" "$R"/logs/warm-$OLD-*.log "$R"/logs/warm-$NEW-*.log | head -40
  stamp "JIT builds done; A/B gate on $N GPUs"
  gate "gate-x$N" "${GATE_TIMEOUT:-400}" --pytest-arg=-m --pytest-arg=gpu
  wait "$mid"; grep -h "^warm" "$R"/logs/warm-$MID-*.log
  tar czf "$O/gate.tgz" -C "$R" "gate-x$N" "gate-x$N.log" "gate-x$N.md" logs
  ;;
timing)
  fused 2 "${FUSED_TIMEOUT:-240}"
  [ "$N" -ge 4 ] && fused 4 "${FUSED_TIMEOUT:-240}"
  if [ "${RUN_MID:-1}" != 0 ]; then
    grep -h "^warm" "$R"/logs/warm-$MID-*.log
    PINBUMP_GPU_RANK_TIMEOUT=${RANK_TIMEOUT:-45} timeout "${SUITE_TIMEOUT:-330}" \
      bash -c "$(declare -f on suite); R='$R'; suite $MID mid-x$N -m multigpu"
    echo "0.6.10 exit $?"; stamp "0.6.10 done"
    grep -E "passed|failed|FAILED|SKIPPED|did not|hang" "$R/mid-x$N/pytest-$MID.log" | head -40
  fi
  tar czf "$O/timing.tgz" -C "$R" fused logs $(ls -d "$R"/mid-x* 2>/dev/null | xargs -rn1 basename)
  ;;
x4)
  info
  stamp "JIT builds start"
  for v in $OLD $NEW; do for g in comm norm; do warm "$v" "$g" & done; done
  wait
  grep -hE "^warm|Error" "$R"/logs/warm-*.log | head -20
  stamp "JIT builds done; multi-GPU A/B gate on $N GPUs"
  gate "gate-x$N-multigpu" "${GATE_TIMEOUT:-300}" --no-perf --pytest-arg=-m --pytest-arg=multigpu
  fused 4 "${FUSED_TIMEOUT:-200}"
  tar czf "$O/x4.tgz" -C "$R" "gate-x$N-multigpu" "gate-x$N-multigpu.log" \
    "gate-x$N-multigpu.md" fused logs
  ;;
esac
stamp "phase $phase done"
