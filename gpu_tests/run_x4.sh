#!/usr/bin/env bash
# The GPU gate on a lent 4-GPU host without network (nvidia-h200-x4), in three phases that fit
# the 600 s command limit, each one call while the machine stays warm:
#   bash gpu_tests/run_x4.sh 1   JIT builds of both versions in parallel (and 0.6.10's
#                                trtllm_comm), then the A/B gate 0.6.8.post1 -> 0.6.11 on 4 GPUs
#   bash gpu_tests/run_x4.sh 2   2-GPU allreduce suites (GPUs 0,1), fused-vs-unfused timing on
#                                2 and 4 GPUs for both versions
#   bash gpu_tests/run_x4.sh 3   0.6.10's allreduce suite on 4 GPUs, short rank deadlines
# Wheels come along in .whl/{old,new,v0610,shared}; installs, JIT caches and results go to
# .out/x4 (git-ignored, so they survive between calls on a warm machine); each phase leaves
# phaseN.tgz in $OUT. NVLink multicast stays off throughout.
set -uo pipefail
export PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
phase=${1:?phase 1, 2 or 3}
W=${WHEELS:-.whl}
R=${RUNDIR:-$PWD/.out/x4}
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

case $phase in
1)
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  nvidia-smi topo -m
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
  stamp "JIT builds start"
  warm "$MID" comm &
  mid=$!
  for v in $OLD $NEW; do for g in comm norm fp4 host; do warm "$v" "$g" & done; done
  for j in $(jobs -p); do [ "$j" = "$mid" ] || wait "$j"; done
  cat "$R"/logs/warm-$OLD-*.log "$R"/logs/warm-$NEW-*.log | grep -E "^warm|Error" | head -40
  stamp "JIT builds done; A/B gate on 4 GPUs"
  timeout 420 python3 -m bot gpu-gate --baseline "$R/fi_$OLD" --candidate "$R/fi_$NEW" \
    --extra-path "$R/site" --out "$R/gate-x4" --workspace "$R/ws" \
    --pytest-arg=-m --pytest-arg=gpu --pytest-arg=-rs > "$R/gate-x4.md" 2> "$R/gate-x4.log"
  echo "gate exit $?"
  stamp "gate done"
  cat "$R/gate-x4.log" "$R/gate-x4/summary.md" 2>/dev/null
  for label in baseline candidate; do
    echo "== pytest $label"; grep -E "passed|failed|FAILED|SKIPPED|Error" "$R/gate-x4/pytest-$label.log" | head -40
  done
  wait "$mid"; grep -h "^warm" "$R"/logs/warm-$MID-*.log
  tar czf "$O/phase1.tgz" -C "$R" gate-x4 gate-x4.log gate-x4.md logs
  ;;
2)
  for v in $OLD $NEW; do
    (export CUDA_VISIBLE_DEVICES=0,1; suite "$v" x2 -m multigpu)
  done
  stamp "2-GPU suites done"
  grep -hE "passed|failed|FAILED|SKIPPED" "$R"/x2/pytest-*.log | head -20
  for n in 2 4; do
    devs=$([ "$n" = 2 ] && echo 0,1 || echo 0,1,2,3)
    CUDA_VISIBLE_DEVICES=$devs timeout 240 python3 gpu_tests/fused_perf.py \
      --baseline "$R/fi_$OLD" --candidate "$R/fi_$NEW" --extra-path "$R/site" \
      --world "$n" --out "$R/fused" --workspace "$R/ws" > "$R/logs/fused-$n.log" 2>&1
    echo "fused_perf $n GPUs exit $?"; stamp "fused $n done"; cat "$R/fused/fused-${n}gpu.md" 2>/dev/null || tail -n 60 "$R/logs/fused-$n.log"
  done
  tar czf "$O/phase2.tgz" -C "$R" x2 fused logs
  ;;
3)
  grep -h "^warm" "$R"/logs/warm-$MID-*.log
  PINBUMP_GPU_RANK_TIMEOUT=${RANK_TIMEOUT:-45} timeout "${SUITE_TIMEOUT:-500}" \
    bash -c "$(declare -f on suite); R='$R'; suite $MID x4-0.6.10 -m multigpu"
  echo "0.6.10 exit $?"; stamp "0.6.10 done"
  grep -E "passed|failed|FAILED|SKIPPED|did not finish|hang" "$R/x4-0.6.10/pytest-$MID.log" | head -40
  tar czf "$O/phase3.tgz" -C "$R" x4-0.6.10 logs
  ;;
esac
stamp "phase $phase done"
