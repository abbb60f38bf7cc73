#!/usr/bin/env bash
# Checks graphlane's GPU backend on a machine with an NVIDIA GPU, in well under 8 minutes.
#
#   scripts/gpu-check.sh            build (Maven, offline if ~/.m2 has everything) and run the checks
#   scripts/gpu-check.sh --prepare  build only, and bundle every jar under backend-gpu/target/gpu-check
#                                   (for a GPU host without Maven or network: copy that folder along)
#   scripts/gpu-check.sh --run      run the checks from that bundle, with java only
#
# A GPU host needs: JDK 17, the NVIDIA driver (libcuda.so.1), and libnvrtc.so.12, libcublas.so.12,
# libnccl.so.2, libcudart.so.12 on the loader path (a CUDA 12 toolkit + NCCL, or the nvidia-*-cu12
# wheels' lib folders on LD_LIBRARY_PATH). CUDA_VISIBLE_DEVICES is honoured; GPU_CHECK_DEVICE=N picks
# the ordinal (default 0). Every check that cannot run says so, and why, in the summary.
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=backend-gpu/target/gpu-check
MODE=${1:-all}
DEVICE=${GPU_CHECK_DEVICE:-0}
START=$(date +%s)

prepare() {
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE"
  local log="$BUNDLE/build.log"
  build() {
    mvn -B "$@" -pl backend-gpu -am package -DskipTests \
        dependency:copy-dependencies -DincludeScope=test -DoutputDirectory="$(pwd)/$BUNDLE/lib" >"$log" 2>&1 \
      && mvn -B "$@" -pl backend-gpu -am test-compile -DskipTests >>"$log" 2>&1
  }
  echo "== building backend-gpu and its tests (Maven offline, online if that fails)"
  build -o || build || { tail -40 "$log"; echo "GPUCHECK build FAILED (log: $log)"; exit 2; }
  rm -f "$BUNDLE"/lib/graphlane-backend-gpu-*.jar
  cp -r backend-gpu/target/classes "$BUNDLE/classes"
  cp -r backend-gpu/target/test-classes "$BUNDLE/test-classes"
  echo "== bundle ready: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1))"
}

run_checks() {
  command -v java >/dev/null || { echo "GPUCHECK java not found: install a JDK 17"; exit 2; }
  [ -d "$BUNDLE/lib" ] || { echo "GPUCHECK no bundle at $BUNDLE: run scripts/gpu-check.sh --prepare first"; exit 2; }
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader \
    | sed 's/^/GPUCHECK device /' || echo "GPUCHECK nvidia-smi not found (no NVIDIA driver on this host?)"
  local cp="$BUNDLE/test-classes:$BUNDLE/classes:$BUNDLE/lib/*"
  # 1. conformance, 2. neural ops vs CPU, 3. NCCL all-reduce busbw, plus the host-side laws and the unavailable error.
  timeout 420 java -Dgraphlane.gpu.test-device="$DEVICE" -cp "$cp" io.graphlane.backend.gpu.GpuCheck \
      io.graphlane.backend.gpu.GpuSubmissionConformanceTest \
      io.graphlane.backend.gpu.nn.GpuNeuralOpsDeviceTest \
      io.graphlane.backend.gpu.nccl.NcclSingleGpuTest \
      io.graphlane.backend.gpu.GpuBackendSubmissionTest \
      io.graphlane.backend.gpu.GpuUnavailableTest
  local rc=$?
  # 4. The fixture model (stages 1 and 2) and decode tokens/s GPU vs CPU need a GPU runner of the
  #    inference module's Llama stages; run it when one exists, otherwise say so.
  if ls "$BUNDLE"/test-classes/io/graphlane/backend/gpu/GpuFixtureModelCheck.class >/dev/null 2>&1; then
    timeout 240 java -cp "$cp" io.graphlane.backend.gpu.GpuFixtureModelCheck || rc=1
  else
    echo "GPUCHECK fixture-model-stages-1-2 SKIPPED: no GPU runner of the inference module's Llama stages exists yet"
    echo "GPUCHECK decode-tokens-per-second SKIPPED: same reason (needs the fixture/demo model on GpuNeuralOps)"
  fi
  echo "GPUCHECK summary: exit $rc after $(( $(date +%s) - START ))s (see the GPUCHECK lines above)"
  return $rc
}

case "$MODE" in
  --prepare) prepare ;;
  --run) run_checks ;;
  all|*) prepare && run_checks ;;
esac
