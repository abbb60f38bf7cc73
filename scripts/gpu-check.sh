#!/usr/bin/env bash
# Checks graphlane's GPU backend on a machine with an NVIDIA GPU, in a few minutes, and prints a summary.
# Every result line starts with GPUCHECK, so `grep ^GPUCHECK` gives the report:
#   0. a probe: java, nvidia-smi -L, the nvidia wheels of python3 (each bounded to 10 s);
#   1. host-side: the host-side laws of backend-gpu (scripted device, missing-library messages);
#   2. backend-gpu: the submission, parameter and transfer conformance suites on CUDA streams/events, stream-ordered
#      device memory, every neural op against the CPU, NCCL on one GPU (collectives of a group of one, all-reduce
#      busbw of 64 MiB);
#   3. fixture-model: the tiny-llama fixture at stages 1 and 2 on the GPU (logits within 1e-3 of the PyTorch reference,
#      greedy tokens exact, also through the pipeline on streams);
#   4. decode-benchmark: decode tokens/s of the demo model on the GPU at 1 and 8 concurrent requests (and on the CPU at 8);
#   5. torch-baseline: the same model in PyTorch eager on the same GPU (scripts/torch_decode_baseline.py), and the ratio.
#
#   scripts/gpu-check.sh            build (Maven, offline if ~/.m2 has everything) and run the checks
#   scripts/gpu-check.sh --prepare  build only, and gather what the checks need under backend-gpu/target/gpu-check
#   scripts/gpu-check.sh --bundle   build, then write ONE archive (at most 60 MiB) for a GPU host without Java, Maven or
#                                   network: a jlink'd Java runtime, thin jars (Linux x86_64 natives only), the test
#                                   classes, the fixture and these scripts; prints the archive's path as its last line
#   scripts/gpu-check.sh --pack     the second half of --bundle, from what is already built: GPU_CHECK_CLASSPATH_FILE
#                                   names a file with the class path (jars and class folders, ':'-separated)
#   scripts/gpu-check.sh --run      run the checks from the bundle (after `tar xJf graphlane-gpu-check.tar.xz`,
#                                   run graphlane-gpu-check/scripts/gpu-check.sh --run): with the bundle's own Java
#                                   runtime when it has one, else the java on PATH
#
# A GPU host needs the NVIDIA driver (libcuda.so.1) and the CUDA user libraries of the build's CUDA major version
# (13 by default; build with GPU_CHECK_MAVEN_ARGS=-Pcuda12 for CUDA 12): libcublas.so.N, libcublasLt.so.N,
# libnvrtc.so.N, libcudart.so.N and libnccl.so.2, from a toolkit on the loader path or the pip wheels nvidia-cublas,
# nvidia-cuda-nvrtc, nvidia-cuda-runtime, nvidia-nccl-cuN of the python3 on PATH: --run puts their lib folders on
# LD_LIBRARY_PATH. CUDA_VISIBLE_DEVICES is honoured; GPU_CHECK_DEVICE=N picks the ordinal (default 0);
# GPU_CHECK_BUDGET_S bounds the checks' wall time (default 450 s); GPU_CHECK_OUT moves the bundle folder and archive.
#
# Exit status: 0 every check passed; 1 a check failed or timed out; 2 no bundle, no java, or the build failed;
# 3 nothing failed but no check could use a GPU (each skip names what is missing).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${GPU_CHECK_OUT:-backend-gpu/target}
BUNDLE=$OUT/gpu-check
ARCHIVE=$OUT/graphlane-gpu-check.tar.xz
ARCHIVE_LIMIT=$(( 60 * 1024 * 1024 ))
MODE=${1:-all}
DEVICE=${GPU_CHECK_DEVICE:-0}
BUDGET=${GPU_CHECK_BUDGET_S:-450}
START=$(date +%s)
# The modules the checks load: Pekko and Kryo need jdk.unsupported, logback java.xml (its configuration) and java.naming,
# Pekko java.management, Jackson java.sql; nothing needs a GUI, TLS or the compiler.
JLINK_MODULES=java.base,java.logging,java.management,java.naming,java.sql,java.xml,jdk.unsupported

case "$MODE" in
  all|--prepare|--bundle|--pack|--run) ;;
  *) echo "usage: scripts/gpu-check.sh [--prepare|--bundle|--pack|--run]   (got '$MODE')" >&2; exit 2 ;;
esac

# Builds with Maven and writes the class path of the checks to $OUT/gpu-check-classpath.txt.
build() {
  command -v mvn >/dev/null || { echo "GPUCHECK build FAILED: mvn not found (build with --bundle on a machine with Maven, then --run there)"; exit 2; }
  mkdir -p "$OUT"
  local log="$OUT/gpu-check-build.log"
  # package (tests compiled, not run), and the exact test class path of the two modules whose tests run here.
  mvnw() {
    mvn -B "$@" ${GPU_CHECK_MAVEN_ARGS:-} -pl backend-gpu,inference -am package -DskipTests \
        dependency:build-classpath -DincludeScope=test -Dmdep.outputFile=target/gpu-check-classpath.txt >"$log" 2>&1
  }
  echo "== building backend-gpu, inference and their tests (Maven offline, online if that fails)"
  mvnw -o || mvnw || { tail -40 "$log"; echo "GPUCHECK build FAILED (log: $log)"; exit 2; }
  { echo -n "backend-gpu/target/test-classes:inference/target/test-classes:inference/target/classes:"
    cat backend-gpu/target/gpu-check-classpath.txt; echo -n ":"; cat inference/target/gpu-check-classpath.txt; } > "$OUT/gpu-check-all-classpath.txt"
  GPU_CHECK_CLASSPATH_FILE="$OUT/gpu-check-all-classpath.txt"
}

# Gathers the class path into $BUNDLE: every jar (thinned) into lib/, every class folder into classes/N.
assemble() {
  local cpfile=${GPU_CHECK_CLASSPATH_FILE:-}
  [ -n "$cpfile" ] && [ -f "$cpfile" ] || { echo "GPUCHECK pack FAILED: GPU_CHECK_CLASSPATH_FILE='$cpfile' is not a file"; exit 2; }
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE/lib" "$BUNDLE/classes"
  local n=0 entry
  while read -r entry; do
    [ -z "$entry" ] && continue
    if [ -d "$entry" ]; then
      n=$((n + 1)); cp -r "$entry" "$BUNDLE/classes/$n"
    elif [[ "$entry" == *.jar ]] && [ -f "$entry" ]; then
      [ -f "$BUNDLE/lib/$(basename "$entry")" ] || cp "$entry" "$BUNDLE/lib/"
    fi
  done < <(tr ':' '\n' < "$cpfile")
  (( n > 0 )) || { echo "GPUCHECK pack FAILED: no class folder in $cpfile"; exit 2; }
  # Build and IDE leftovers that no check reads.
  rm -f "$BUNDLE"/lib/surefire*.jar
  # The HF fixtures (inference's test resources) are read by CPU tests only; no device check below loads them.
  rm -rf "$BUNDLE"/classes/*/hf-fixtures
  slim
}

# Leaves out what no check loads: other platforms' natives, JCuda's PTX compiler glue (NVRTC is used), OpenBLAS's
# headers, its LAPACK bindings (graphlane loads openblas_nolapack) and its LAPACK-complete variant (openblas_full), and the classes and JNI glue of every CUDA library but the
# runtime, cuBLAS, NVRTC and NCCL.
slim() {
  command -v zip >/dev/null && command -v unzip >/dev/null \
    || { echo "GPUCHECK pack FAILED: zip and unzip are needed to thin the jars"; exit 2; }
  local jar drop
  for jar in "$BUNDLE"/lib/*.jar; do
    drop=$(unzip -Z1 "$jar" | grep -E \
      -e '^native/lib/(linux-aarch64|osx-|win-)' \
      -e '^lib/libJNvPTXCompiler-' \
      -e '^org/bytedeco/openblas/linux-x86_64/include/' \
      -e '^org/bytedeco/openblas/linux-x86_64/libjniopenblas_full\.so$' \
      -e '^org/bytedeco/openblas/(global|presets)/openblas_full' \
      -e '^org/bytedeco/openblas/linux-x86_64/libjniopenblas\.so$' \
      -e '^org/bytedeco/openblas/(global|presets)/openblas(\$[^/]*)?\.class$' \
      -e '^org/bytedeco/cuda/(cudnn|cufft|cufftw|cufile|cupti|curand|cusolver|cusparse|npp[a-z]*|nvblas|nvcomp|nvjpeg|nvml|nvToolsExt)/' \
      -e '^org/bytedeco/cuda/(global|presets)/(cudnn|cufft|cufftw|cufile|cupti|curand|cusolver|cusparse|npp[a-z]*|nvblas|nvcomp|nvjpeg|nvml|nvToolsExt)[.$]' \
      -e '^org/bytedeco/[a-z0-9_]+/(linux-(arm64|armhf|ppc64le|aarch64)|macosx-|windows-|android-|ios-)' \
      -e '^org/bytedeco/cuda/linux-x86_64/libjni(cudnn|cufft|cufftw|cufile|cupti|curand|cusolver|cusparse|npp[a-z]*|nvblas|nvcomp|nvjpeg|nvml|nvToolsExt)\.so$' \
      || true)
    if [ -n "$drop" ]; then
      echo "$drop" | zip -q -d "$jar" -@ >/dev/null || { echo "GPUCHECK pack FAILED: could not thin $jar"; exit 2; }
    fi
    store_natives "$jar"
  done
}

# Stores the shared objects of a jar uncompressed, so that xz packs them (about a quarter smaller than deflate does).
store_natives() {
  local jar natives tmp
  jar=$(readlink -f "$1")
  natives=$(unzip -Z1 "$jar" | grep -E '\.so(\.[0-9]+)*$' || true)
  [ -z "$natives" ] && return 0
  tmp=$(mktemp -d)
  unzip -q -o "$jar" $natives -d "$tmp" \
    && (cd "$tmp" && echo "$natives" | zip -q -0 "$jar" -@) \
    || { rm -rf "$tmp"; echo "GPUCHECK pack FAILED: could not store the natives of $jar uncompressed"; exit 2; }
  rm -rf "$tmp"
}

# A Java runtime holding only the modules the checks need. Not compressed by jlink: xz packs the raw image to about
# 15 MB, jlink's own compression to about 20 MB. Native debug symbols are stripped (libjvm.so shrinks by a sixth).
runtime() {
  local jlink
  jlink=$(command -v jlink || true)
  [ -z "$jlink" ] && [ -n "${JAVA_HOME:-}" ] && jlink="$JAVA_HOME/bin/jlink"
  [ -x "$jlink" ] || { echo "GPUCHECK pack FAILED: jlink not found (a JDK 17 with jmods is needed)"; exit 2; }
  rm -rf "$BUNDLE/runtime"
  local strip=()
  command -v objcopy >/dev/null && strip=(--strip-native-debug-symbols "objcopy=$(command -v objcopy)")
  "$jlink" --add-modules "$JLINK_MODULES" --strip-debug --no-header-files --no-man-pages "${strip[@]}" \
      --output "$BUNDLE/runtime" || { echo "GPUCHECK pack FAILED: jlink failed"; exit 2; }
}

# Writes the archive: the bundle folder and the scripts, under one top folder graphlane-gpu-check/.
pack() {
  assemble
  runtime
  local stage="$OUT/gpu-check-stage" top=graphlane-gpu-check
  rm -rf "$stage" && mkdir -p "$stage/$top/scripts" "$stage/$top/backend-gpu/target"
  cp scripts/gpu-check.sh scripts/torch_decode_baseline.py "$stage/$top/scripts/"
  cp -r "$BUNDLE" "$stage/$top/backend-gpu/target/gpu-check"
  rm -f "$ARCHIVE"
  # xz's default preset: the jars are compressed already, but the runtime image and the natives (stored uncompressed
  # above) are not, and -6 packs them about 8 MB smaller than -1 (64.6 against 56.4 MB with the chat template's
  # dependencies on the class path), which keeps the archive under the 60 MiB upload with room to spare.
  tar -C "$stage" -cf - "$top" | xz -T0 -6 > "$ARCHIVE" || { echo "GPUCHECK pack FAILED: writing $ARCHIVE"; exit 2; }
  rm -rf "$stage"
  local size
  size=$(stat -c %s "$ARCHIVE")
  echo "== archive: $(( size / 1024 / 1024 )) MiB ($size bytes; the limit is $ARCHIVE_LIMIT); on a GPU host:"
  echo "   tar xJf $(basename "$ARCHIVE") && graphlane-gpu-check/scripts/gpu-check.sh --run"
  if (( size > ARCHIVE_LIMIT )); then
    echo "GPUCHECK pack FAILED: $ARCHIVE is $size bytes, over the $ARCHIVE_LIMIT-byte limit"
    exit 2
  fi
  readlink -f "$ARCHIVE"
}

prepare() {
  build
  assemble
  echo "== bundle ready: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1)); on a GPU host: scripts/gpu-check.sh --run"
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

# The lib folders of the nvidia wheels of the python3 on PATH (one per line; nothing when there are none).
wheel_lib_dirs() {
  command -v python3 >/dev/null || return 0
  timeout 10 python3 -c 'import nvidia
for p in nvidia.__path__: print(p)' 2>/dev/null | while read -r root; do
    for lib in "$root"/*/lib; do [ -d "$lib" ] && echo "$lib"; done
  done
}

probe() {
  echo "GPUCHECK probe java on PATH: $(command -v java || echo none); bundle runtime: $([ -x "$BUNDLE/runtime/bin/java" ] && echo "$BUNDLE/runtime" || echo none)"
  if command -v nvidia-smi >/dev/null; then
    timeout 10 nvidia-smi -L 2>&1 | sed 's/^/GPUCHECK probe /'
    timeout 10 nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/GPUCHECK device /'
  else
    echo "GPUCHECK probe nvidia-smi not found (no NVIDIA driver on this host?)"
  fi
  if command -v python3 >/dev/null; then
    timeout 10 python3 -c 'import nvidia, os; print("nvidia wheels under", os.path.dirname(list(nvidia.__path__)[0]))' 2>&1 | tail -1 \
      | sed 's/^/GPUCHECK probe python3: /'
  else
    echo "GPUCHECK probe python3 not found"
  fi
}

run_checks() {
  [ -d "$BUNDLE/lib" ] && [ -d "$BUNDLE/classes" ] \
    || { echo "GPUCHECK no bundle at $BUNDLE: run scripts/gpu-check.sh --prepare or --bundle first"; exit 2; }
  probe
  local java
  if [ -x "$BUNDLE/runtime/bin/java" ]; then
    java="$BUNDLE/runtime/bin/java"
  else
    java=$(command -v java || true)
    [ -n "$java" ] || { echo "GPUCHECK java not found: the bundle has no runtime and PATH has no java"; exit 2; }
  fi
  local wheels
  wheels=$(wheel_lib_dirs | paste -sd: -)
  if [ -n "$wheels" ]; then
    export LD_LIBRARY_PATH="$wheels${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "GPUCHECK probe LD_LIBRARY_PATH gets the wheels' lib folders: $wheels"
  fi
  export CUDA_MODULE_LOADING=EAGER
  mkdir -p "$BUNDLE/logs"
  local cp="" dir
  for dir in "$BUNDLE"/classes/*; do cp="$cp$dir:"; done
  cp="$cp$BUNDLE/lib/*"
  local jvm=("$java" -Dgraphlane.gpu.test-device="$DEVICE" -Dgraphlane.demo.dir="$BUNDLE/demo-model" -cp "$cp")
  local failed=0 rc
  step 60 host-side "${jvm[@]}" io.graphlane.backend.gpu.GpuCheck \
      io.graphlane.backend.gpu.GpuBackendSubmissionTest \
      io.graphlane.backend.gpu.StreamOrderedMemoryTest \
      io.graphlane.backend.gpu.GpuUnavailableTest
  rc=$?; (( rc != 0 )) && failed=1
  step 220 backend-gpu "${jvm[@]}" io.graphlane.backend.gpu.GpuCheck \
      io.graphlane.backend.gpu.GpuSubmissionConformanceTest \
      io.graphlane.backend.gpu.StreamOrderedMemoryDeviceTest \
      io.graphlane.backend.gpu.param.GpuParameterConformanceTest \
      io.graphlane.backend.gpu.param.GpuTransferConformanceTest \
      io.graphlane.backend.gpu.nn.GpuNeuralOpsDeviceTest \
      io.graphlane.backend.gpu.nccl.NcclSingleGpuTest
  rc=$?; (( rc != 0 )) && failed=1
  step 120 fixture-model "${jvm[@]}" io.graphlane.backend.gpu.GpuCheck io.graphlane.inference.gpu.GpuFixtureModelTest
  rc=$?; (( rc != 0 )) && failed=1
  step 180 decode-benchmark "${jvm[@]}" io.graphlane.inference.gpu.GpuDecodeCheck --device "$DEVICE" \
      --stages 2 --requests 1,8 --new-tokens 128
  rc=$?; (( rc != 0 )) && failed=1
  if [ -f "$BUNDLE/demo-model/config.json" ] && command -v python3 >/dev/null; then
    step 120 torch-baseline python3 scripts/torch_decode_baseline.py "$BUNDLE/demo-model" --requests 1,8 --new-tokens 128 \
        --device "cuda:$DEVICE"
    rc=$?; (( rc != 0 )) && failed=1
  else
    echo "GPUCHECK torch-decode-tokens-per-second SKIPPED: $(command -v python3 >/dev/null && echo "no demo model was written (the decode check did not run on a GPU)" || echo "python3 not found")" \
      | tee "$BUNDLE/logs/torch-baseline.log"
  fi
  summary "$failed"
}

# One verdict per check: FAILED if anything failed, passed if something ran and nothing failed, SKIPPED if nothing ran.
verdict() {
  local log=$1 counts
  if grep -q "budget is spent" "$log"; then echo "FAILED (not run: the ${BUDGET}s budget was spent)"; return; fi
  if grep -q "TIMED OUT" "$log"; then echo "FAILED (timed out)"; return; fi
  counts=$(grep -h -m1 "^GPUCHECK classes " "$log")
  if [ -n "$counts" ]; then
    local p f s
    p=$(sed 's/.*passed=\([0-9]*\).*/\1/' <<<"$counts"); f=$(sed 's/.*failed=\([0-9]*\).*/\1/' <<<"$counts")
    s=$(sed 's/.*skipped=\([0-9]*\).*/\1/' <<<"$counts")
    if (( f > 0 )); then echo "FAILED ($f of $((p + f + s)) classes)"
    elif (( p > 0 )); then
      if (( s > 0 )); then echo "passed ($p classes; $s skipped: $(grep -h -m1 "^GPUCHECK class .* SKIPPED: " "$log" | sed 's/^GPUCHECK class //'))"
      else echo "passed ($p classes)"; fi
    else echo "SKIPPED: $(grep -h -m1 "^GPUCHECK class .* SKIPPED: " "$log" | sed 's/.* SKIPPED: //')"; fi
    return
  fi
  if grep -q "^GPUCHECK .*FAILED" "$log"; then echo "FAILED"
  elif grep -q "^GPUCHECK .*SKIPPED" "$log"; then echo "SKIPPED: $(grep -h -m1 "^GPUCHECK .*SKIPPED: " "$log" | sed 's/.*SKIPPED: //')"
  elif grep -q "^GPUCHECK " "$log"; then echo "passed"
  else echo "FAILED (no result; see $log)"; fi
}

summary() {
  local failed=$1 ran_on_gpu=0 name v
  echo
  echo "GPUCHECK summary (device $DEVICE, $(( $(date +%s) - START ))s):"
  for name in host-side backend-gpu fixture-model decode-benchmark torch-baseline; do
    v=$(verdict "$BUNDLE/logs/$name.log")
    [[ "$v" == FAILED* ]] && failed=1
    if [[ "$v" == passed* ]] && [[ "$name" != host-side && "$name" != torch-baseline ]]; then ran_on_gpu=1; fi
    printf 'GPUCHECK   %-18s %s\n' "$name" "$v"
  done
  local busbw
  busbw=$(grep -h "^GPUCHECK nccl-allreduce" "$BUNDLE/logs/backend-gpu.log" | head -1 | sed 's/^GPUCHECK nccl-allreduce-64MiB //')
  echo "GPUCHECK   nccl all-reduce    ${busbw:-not measured} (64 MiB, one GPU)"
  local r g t
  for r in 1 8; do
    g=$(grep -h "^GPUCHECK decode-tokens-per-second requests=$r " "$BUNDLE/logs/decode-benchmark.log" | head -1 | sed 's/.* gpu=\([0-9.]*\).*/\1/')
    t=$(grep -h "^GPUCHECK torch-decode-tokens-per-second requests=$r " "$BUNDLE/logs/torch-baseline.log" | head -1 | sed 's/.* torch=\([0-9.]*\).*/\1/')
    if [ -n "$g" ] && [ -n "$t" ]; then
      echo "GPUCHECK   decode requests=$r  graphlane=$g torch=$t tokens/s graphlane/torch=$(awk -v g="$g" -v t="$t" 'BEGIN { printf "%.2fx", g / t }')"
    else
      echo "GPUCHECK   decode requests=$r  graphlane=${g:-not measured} torch=${t:-not measured} tokens/s"
    fi
  done
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
  --bundle) build && pack ;;
  --pack) pack ;;
  --run) run_checks ;;
  all) prepare && run_checks ;;
esac
