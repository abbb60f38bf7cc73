#!/usr/bin/env bash
# Checks graphlane's GPU backend on a machine with an NVIDIA GPU, in under 8 minutes, and prints a summary:
#   1. backend-gpu: the submission, parameter and transfer conformance suites on CUDA streams/events (checkpoint
#      uploads and F16/BF16 widening, lease release after the exact completion, copies that hold their source and
#      destination), stream-ordered device memory (no reuse before the last read, the pool's release threshold),
#      every neural op against the CPU,
#      NCCL on one GPU (collectives of a group of one, all-reduce busbw of 64 MiB), the host-side laws;
#   2. the tiny-llama fixture at stages 1 and 2 on the GPU (weights through the materialization supervisor,
#      logits within 1e-3 of the PyTorch reference, greedy tokens exact, also through the pipeline on streams);
#   3. decode tokens/s of the demo model on the GPU and on the CPU (same model, stages and requests).
#
#   scripts/gpu-check.sh            build (Maven, offline if ~/.m2 has everything) and run the checks
#   scripts/gpu-check.sh --prepare  build only, and bundle what the checks need under backend-gpu/target/gpu-check
#                                   (for a GPU host without Maven or network: copy that folder along)
#   scripts/gpu-check.sh --run      run the checks from that bundle, with java only
#
# A GPU host needs: JDK 17, the NVIDIA driver (libcuda.so.1), and libnvrtc.so.12, libcublas.so.12,
# libnccl.so.2, libcudart.so.12 on the loader path (a CUDA 12 toolkit + NCCL, or the nvidia-*-cu12
# wheels' lib folders on LD_LIBRARY_PATH). CUDA_VISIBLE_DEVICES is honoured; GPU_CHECK_DEVICE=N picks
# the ordinal (default 0); GPU_CHECK_BUDGET_S bounds the checks' wall time (default 450 s).
#
# Exit status: 0 every check passed; 1 a check failed or timed out; 2 no bundle, no java, or the build
# failed; 3 nothing failed but no check could use a GPU (each skip names what is missing).
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=backend-gpu/target/gpu-check
MODE=${1:-all}
DEVICE=${GPU_CHECK_DEVICE:-0}
BUDGET=${GPU_CHECK_BUDGET_S:-450}
START=$(date +%s)

case "$MODE" in
  all|--prepare|--run) ;;
  *) echo "usage: scripts/gpu-check.sh [--prepare|--run]   (got '$MODE')" >&2; exit 2 ;;
esac

prepare() {
  command -v mvn >/dev/null || { echo "GPUCHECK build FAILED: mvn not found (build with --prepare on a machine with Maven, then --run here)"; exit 2; }
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE"
  local log="$BUNDLE/build.log"
  # package (tests compiled, not run), and the exact test class path of the two modules whose tests run here.
  build() {
    mvn -B "$@" -pl backend-gpu,inference -am package -DskipTests \
        dependency:build-classpath -DincludeScope=test -Dmdep.outputFile=target/gpu-check-classpath.txt >"$log" 2>&1
  }
  echo "== building backend-gpu, inference and their tests (Maven offline, online if that fails)"
  build -o || build || { tail -40 "$log"; echo "GPUCHECK build FAILED (log: $log)"; exit 2; }
  # Every jar on those class paths (reactor modules as their jars) goes to lib/; inference's own classes, the test
  # classes and the fixture travel as folders.
  mkdir -p "$BUNDLE/lib"
  cat backend-gpu/target/gpu-check-classpath.txt <(echo) inference/target/gpu-check-classpath.txt | tr ':' '\n' \
    | grep '\.jar$' | sort -u | while read -r jar; do cp "$jar" "$BUNDLE/lib/"; done
  cp -r inference/target/classes "$BUNDLE/inference-classes"
  cp -r backend-gpu/target/test-classes "$BUNDLE/backend-gpu-test-classes"
  cp -r inference/target/test-classes "$BUNDLE/inference-test-classes"
  slim
  echo "== bundle ready: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1)); on a GPU host: scripts/gpu-check.sh --run"
}

# Leaves out what no check loads, so the bundle stays small enough to carry (under 64 MiB): the tokenizer's
# natives for other platforms, JCuda's PTX compiler glue (NVRTC is used), OpenBLAS's headers.
slim() {
  if command -v zip >/dev/null; then
    zip -q -d "$BUNDLE"/lib/tokenizers-*.jar 'native/lib/linux-aarch64/*' 'native/lib/osx-*' 'native/lib/win-*' >/dev/null || true
    zip -q -d "$BUNDLE"/lib/jcuda-natives-*.jar 'lib/libJNvPTXCompiler-*' >/dev/null || true
    zip -q -d "$BUNDLE"/lib/openblas-*-linux-x86_64.jar 'org/bytedeco/openblas/linux-x86_64/include/*' >/dev/null || true
  else
    echo "== zip not found: the bundle keeps the natives of other platforms"
  fi
}

# Runs one check with what is left of the budget (at most $1 seconds); its output goes to the screen and to $BUNDLE/logs/$2.log.
step() {
  local cap=$1 name=$2; shift 2
  local left=$(( BUDGET - ($(date +%s) - START) ))
  (( left < cap )) && cap=$left
  if (( cap < 10 )); then
    echo "GPUCHECK $name FAILED: the ${BUDGET}s budget is spent" | tee "$BUNDLE/logs/$name.log"
    return 1
  fi
  echo "== $name (at most ${cap}s)"
  timeout "$cap" "$@" 2>&1 | tee "$BUNDLE/logs/$name.log"
  local rc=${PIPESTATUS[0]}
  if (( rc == 124 || rc == 137 )); then
    echo "GPUCHECK $name TIMED OUT after ${cap}s" | tee -a "$BUNDLE/logs/$name.log"
  fi
  return "$rc"
}

run_checks() {
  command -v java >/dev/null || { echo "GPUCHECK java not found: install a JDK 17"; exit 2; }
  [ -d "$BUNDLE/lib" ] && [ -d "$BUNDLE/inference-classes" ] && [ -d "$BUNDLE/inference-test-classes" ] \
    || { echo "GPUCHECK no bundle at $BUNDLE: run scripts/gpu-check.sh --prepare first"; exit 2; }
  mkdir -p "$BUNDLE/logs"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | sed 's/^/GPUCHECK device /'
  else
    echo "GPUCHECK nvidia-smi not found (no NVIDIA driver on this host?)"
  fi
  local cp="$BUNDLE/backend-gpu-test-classes:$BUNDLE/inference-test-classes:$BUNDLE/inference-classes:$BUNDLE/lib/*"
  local jvm=(java -Dgraphlane.gpu.test-device="$DEVICE" -Dgraphlane.demo.dir="$BUNDLE/demo-model" -cp "$cp")
  local failed=0 rc
  step 220 backend-gpu "${jvm[@]}" io.graphlane.backend.gpu.GpuCheck \
      io.graphlane.backend.gpu.GpuSubmissionConformanceTest \
      io.graphlane.backend.gpu.StreamOrderedMemoryDeviceTest \
      io.graphlane.backend.gpu.param.GpuParameterConformanceTest \
      io.graphlane.backend.gpu.param.GpuTransferConformanceTest \
      io.graphlane.backend.gpu.nn.GpuNeuralOpsDeviceTest \
      io.graphlane.backend.gpu.nccl.NcclSingleGpuTest \
      io.graphlane.backend.gpu.GpuBackendSubmissionTest \
      io.graphlane.backend.gpu.StreamOrderedMemoryTest \
      io.graphlane.backend.gpu.GpuUnavailableTest
  rc=$?; (( rc != 0 )) && failed=1
  step 120 fixture-model "${jvm[@]}" io.graphlane.backend.gpu.GpuCheck io.graphlane.inference.gpu.GpuFixtureModelTest
  rc=$?; (( rc != 0 )) && failed=1
  step 180 decode-benchmark "${jvm[@]}" io.graphlane.inference.gpu.GpuDecodeCheck --device "$DEVICE" \
      --stages 2 --requests 8 --new-tokens 32
  rc=$?; (( rc != 0 )) && failed=1
  summary "$failed"
}

# One line per check, from the GPUCHECK lines of its log.
summary() {
  local failed=$1 ran_on_gpu=0 name
  echo
  echo "GPUCHECK summary (device $DEVICE, $(( $(date +%s) - START ))s):"
  for name in backend-gpu fixture-model decode-benchmark; do
    local log="$BUNDLE/logs/$name.log" verdict
    if grep -q "budget is spent" "$log"; then
      verdict="FAILED (not run: the ${BUDGET}s budget was spent)"
    elif grep -q "TIMED OUT" "$log"; then
      verdict="FAILED (timed out)"
    elif grep -q "^GPUCHECK .*\(failed=\|FAILED\)" "$log"; then
      verdict="FAILED"
    elif grep -q "^GPUCHECK .*\(aborted=\|skipped=\|SKIPPED\)" "$log"; then
      verdict="SKIPPED: $(grep -h -m1 "^ *aborted .*: \|^ *skipped .*: \|SKIPPED: " "$log" | sed 's/^ *//; s/.*Assumption failed: //; s/.*SKIPPED: //')"
    elif grep -q "^GPUCHECK " "$log"; then
      verdict="passed"; ran_on_gpu=1
    else
      verdict="FAILED (no result; see $log)"
    fi
    printf '  %-18s %s\n' "$name" "$verdict"
  done
  local busbw decode
  busbw=$(grep -h "^GPUCHECK nccl-allreduce" "$BUNDLE/logs/backend-gpu.log" | head -1)
  decode=$(grep -h "^GPUCHECK decode-tokens-per-second [a-z]*=" "$BUNDLE/logs/decode-benchmark.log" | head -1)
  echo "  nccl all-reduce    ${busbw:-not measured}" | sed 's/GPUCHECK nccl-allreduce-64MiB /64 MiB on one GPU: /'
  echo "  decode tokens/s    ${decode:-not measured}" | sed 's/GPUCHECK decode-tokens-per-second //'
  if (( failed != 0 )); then
    echo "GPUCHECK result: FAILED (logs under $BUNDLE/logs)"
    return 1
  fi
  if (( ran_on_gpu == 0 )); then
    echo "GPUCHECK result: nothing ran on a GPU (each skip above says what is missing)"
    return 3
  fi
  echo "GPUCHECK result: passed"
  return 0
}

case "$MODE" in
  --prepare) prepare ;;
  --run) run_checks ;;
  all) prepare && run_checks ;;
esac
