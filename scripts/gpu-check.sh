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
#   5. torch-baseline: the same model in PyTorch eager on the same GPU (scripts/torch_decode_baseline.py), and the ratio;
#   6. figures (where the bundle holds graphlane.jar, from the second archive of --bundle-figures unpacked over the first):
#      the HBM bandwidth probe and the dense BF16 GEMM peak (cuBLAS); models of the llama-3.2-1b and llama-3.1-8b shapes
#      in BF16 made on the host by `graphlane demo-model`; per shape decode tokens/s at 1, 8 and 64 requests with
#      limit_ratio at 1, prefill tokens/s of a 2048-token prompt with its share of the GEMM peak; the PyTorch anchors in
#      the same run (eager BF16 over a static KV cache, the decode step captured in a torch.cuda.CUDAGraph, and
#      torch.compile(mode="reduce-overhead") on the 1B shape where it compiles); and `graphlane serve --backend gpu`
#      answering a streamed chat completion from curl, with its TTFT and TPOT.
#
#   scripts/gpu-check.sh            build (Maven, offline if ~/.m2 has everything) and run the checks
#   scripts/gpu-check.sh --prepare  build only, and gather what the checks need under backend-gpu/target/gpu-check
#   scripts/gpu-check.sh --bundle   build, then write ONE archive (at most 60 MiB) for a GPU host without Java, Maven or
#                                   network: a jlink'd Java runtime, thin jars (Linux x86_64 natives only), the test
#                                   classes, the fixture and these scripts; prints the archive's path as its last line
#   scripts/gpu-check.sh --pack     the second half of --bundle, from what is already built: GPU_CHECK_CLASSPATH_FILE
#                                   names a file with the class path (jars and class folders, ':'-separated)
#   scripts/gpu-check.sh --bundle-figures  build the graphlane jar, then write a SECOND archive (at most 60 MiB),
#                                   graphlane-gpu-figures.tar.xz: the graphlane.jar thinned for the figures (no OpenBLAS
#                                   natives, no cluster-store natives), under the same top folder, so that unpacking it over
#                                   the first adds the figures (6.), run on the first archive's Java runtime
#   scripts/gpu-check.sh --pack-figures   the second half of --bundle-figures: GPU_CHECK_GRAPHLANE_JAR names the jar
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
# GPU_CHECK_PARTS=checks|figures|checks,figures picks what --run runs (default both; figures need graphlane.jar);
# GPU_CHECK_SHAPES (default "llama-3.2-1b llama-3.1-8b") and GPU_CHECK_MODELS (default the bundle's models/, kept
# between runs so a second run reuses them) steer the figures.
#
# Exit status: 0 every check passed; 1 a check failed or timed out; 2 no bundle, no java, or the build failed;
# 3 nothing failed but no check could use a GPU (each skip names what is missing).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${GPU_CHECK_OUT:-backend-gpu/target}
BUNDLE=$OUT/gpu-check
ARCHIVE=$OUT/graphlane-gpu-check.tar.xz
FIGURES_ARCHIVE=$OUT/graphlane-gpu-figures.tar.xz
PARTS=${GPU_CHECK_PARTS:-checks,figures}
SHAPES=${GPU_CHECK_SHAPES:-llama-3.2-1b llama-3.1-8b}
ARCHIVE_LIMIT=$(( 60 * 1024 * 1024 ))
MODE=${1:-all}
DEVICE=${GPU_CHECK_DEVICE:-0}
BUDGET=${GPU_CHECK_BUDGET_S:-450}
START=$(date +%s)
# The modules the checks load: Pekko and Kryo need jdk.unsupported, logback java.xml (its configuration) and java.naming,
# Pekko java.management, Jackson java.sql; the graphlane jar of the figures java.net.http (its command line loads the
# HTTP client at start); nothing needs a GUI, TLS or the compiler.
JLINK_MODULES=java.base,java.logging,java.management,java.naming,java.sql,java.xml,jdk.unsupported,java.net.http

case "$MODE" in
  all|--prepare|--bundle|--pack|--bundle-figures|--pack-figures|--run) ;;
  *) echo "usage: scripts/gpu-check.sh [--prepare|--bundle|--pack|--bundle-figures|--pack-figures|--run]   (got '$MODE')" >&2; exit 2 ;;
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
  local jar
  for jar in "$BUNDLE"/lib/*.jar; do
    thin_jar "$jar"
  done
}

# Thins one jar (a library's, or the graphlane fat jar) as slim() says, and stores its natives uncompressed.
thin_jar() {
  local jar=$1 drop
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

# Writes the second archive: the Java runtime and the thinned graphlane jar, under the first archive's top folder.
pack_figures() {
  local jar=${GPU_CHECK_GRAPHLANE_JAR:-cli/target/graphlane.jar}
  [ -f "$jar" ] || { echo "GPUCHECK pack FAILED: no graphlane jar at '$jar' (mvn -pl cli -am package -DskipTests, or set GPU_CHECK_GRAPHLANE_JAR)"; exit 2; }
  command -v zip >/dev/null && command -v unzip >/dev/null \
    || { echo "GPUCHECK pack FAILED: zip and unzip are needed to thin the jar"; exit 2; }
  local stage="$OUT/gpu-figures-stage" top=graphlane-gpu-check
  rm -rf "$stage" && mkdir -p "$stage/$top/scripts" "$stage/$top/backend-gpu/target/gpu-check"
  cp "$jar" "$stage/$top/backend-gpu/target/gpu-check/graphlane.jar"
  thin_figures_jar "$stage/$top/backend-gpu/target/gpu-check/graphlane.jar"
  thin_jar "$stage/$top/backend-gpu/target/gpu-check/graphlane.jar"
  cp scripts/gpu-check.sh scripts/torch_decode_baseline.py "$stage/$top/scripts/"
  rm -f "$FIGURES_ARCHIVE"
  tar -C "$stage" -cf - "$top" | xz -T0 -6 > "$FIGURES_ARCHIVE" || { echo "GPUCHECK pack FAILED: writing $FIGURES_ARCHIVE"; exit 2; }
  rm -rf "$stage"
  local size
  size=$(stat -c %s "$FIGURES_ARCHIVE")
  echo "== figures archive: $(( size / 1024 / 1024 )) MiB ($size bytes; the limit is $ARCHIVE_LIMIT); on a GPU host, in the folder"
  echo "   where the first archive was unpacked: tar xJf $(basename "$FIGURES_ARCHIVE") && graphlane-gpu-check/scripts/gpu-check.sh --run"
  if (( size > ARCHIVE_LIMIT )); then
    echo "GPUCHECK pack FAILED: $FIGURES_ARCHIVE is $size bytes, over the $ARCHIVE_LIMIT-byte limit"
    exit 2
  fi
  readlink -f "$FIGURES_ARCHIVE"
}

# What the figures (GpuProbe, demo-model, serve --backend gpu) never load, beyond slim()'s list: OpenBLAS's natives (the
# CPU backend's; its classes stay), the durable cluster store's LMDB and its JNR/jffi natives, JNA's natives of other
# platforms, and JUnit. The first archive's jars keep all of these for the CPU comparisons of the checks.
thin_figures_jar() {
  local jar=$1 drop
  drop=$(unzip -Z1 "$jar" | grep -E \
      -e '^org/bytedeco/openblas/linux-x86_64/' \
      -e '^(jni|jnr)/' -e '^org/lmdbjava/' -e '^org/(junit|opentest4j)/' \
      -e '^com/sun/jna/[^/]+/[^/]+\.(so|dll|dylib|a|jnilib)$' | grep -v '^com/sun/jna/linux-x86-64/' || true)
  if [ -n "$drop" ]; then
    echo "$drop" | zip -q -d "$jar" -@ >/dev/null || { echo "GPUCHECK pack FAILED: could not thin $jar"; exit 2; }
  fi
}

build_jar() {
  command -v mvn >/dev/null || { echo "GPUCHECK build FAILED: mvn not found"; exit 2; }
  mkdir -p "$OUT"
  local log="$OUT/gpu-figures-build.log"
  echo "== building the graphlane jar (Maven offline, online if that fails)"
  mvn -B -o ${GPU_CHECK_MAVEN_ARGS:-} -pl cli -am package -DskipTests >"$log" 2>&1 \
    || mvn -B ${GPU_CHECK_MAVEN_ARGS:-} -pl cli -am package -DskipTests >"$log" 2>&1 \
    || { tail -40 "$log"; echo "GPUCHECK build FAILED (log: $log)"; exit 2; }
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
  if [[ ",$PARTS," != *",checks,"* ]]; then
    run_figures "$java"; rc=$?; (( rc != 0 )) && failed=1
    figures_summary
    (( failed != 0 )) && { echo "GPUCHECK result: FAILED (logs under $BUNDLE/logs)"; return 1; }
    echo "GPUCHECK result: figures done (each line above names its figure or why it is missing)"
    return 0
  fi
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
  if [[ ",$PARTS," == *",figures,"* ]]; then
    run_figures "$java"; rc=$?; (( rc != 0 )) && failed=1
  fi
  summary "$failed"
}

# The figures of issue 31 (6. above), from the graphlane jar of the second archive; nothing when it is not there.
run_figures() {
  local java=$1 jar="$BUNDLE/graphlane.jar" failed=0 rc
  mkdir -p "$BUNDLE/logs"
  if [ ! -f "$jar" ]; then
    echo "GPUCHECK figures SKIPPED: no $jar (scripts/gpu-check.sh --bundle-figures writes the archive that holds it;"\
      "unpack it over this one)" | tee "$BUNDLE/logs/figures.log"
    return 0
  fi
  : > "$BUNDLE/logs/figures.log"
  local models=${GPU_CHECK_MODELS:-$BUNDLE/models}
  mkdir -p "$models"
  local probe=("$java" -cp "$jar" io.graphlane.inference.gpu.GpuProbe)
  step 90 hbm "${probe[@]}" bandwidth --device "$DEVICE"; rc=$?; (( rc != 0 )) && failed=1
  if grep -q "^GPUCHECK hbm-bandwidth-gb-per-s SKIPPED" "$BUNDLE/logs/hbm.log"; then
    echo "GPUCHECK figures SKIPPED: no usable GPU (see the bandwidth probe above); no model is made" | tee -a "$BUNDLE/logs/figures.log"
    return "$failed"
  fi
  step 120 gemm "${probe[@]}" gemm --device "$DEVICE"; rc=$?; (( rc != 0 )) && failed=1
  local bw peak shape
  bw=$(grep -h "^GPUCHECK hbm-bandwidth-gb-per-s value=" "$BUNDLE/logs/hbm.log" | head -1 | sed 's/.*value=\([0-9.]*\).*/\1/')
  peak=$(grep -h "^GPUCHECK bf16-gemm-tflops value=" "$BUNDLE/logs/gemm.log" | head -1 | sed 's/.*value=\([0-9.]*\).*/\1/')
  local first=1
  for shape in $SHAPES; do
    if [ ! -f "$models/$shape/config.json" ]; then
      step 300 "model-$shape" "$java" -jar "$jar" demo-model --shape "$shape" --dtype bf16 --out "$models/$shape"
      rc=$?; (( rc != 0 )) && { failed=1; continue; }
    fi
    step 300 "decode-$shape" "${probe[@]}" figures "$models/$shape" --label "$shape" --requests 1,8,64 --new-tokens 64 \
        --prefill 2048 --bandwidth "${bw:-0}" --gemm-tflops "${peak:-0}" --device "$DEVICE"
    rc=$?; (( rc != 0 )) && failed=1
    if command -v python3 >/dev/null; then
      step 240 "torch-$shape" python3 scripts/torch_decode_baseline.py "$models/$shape" --dtype bfloat16 --requests 1,8,64 \
          --new-tokens 64 --device "cuda:$DEVICE" --mode eager --prefill 2048
      rc=$?; (( rc != 0 )) && failed=1
      step 240 "torch-graph-$shape" python3 scripts/torch_decode_baseline.py "$models/$shape" --dtype bfloat16 --requests 1,8,64 \
          --new-tokens 64 --device "cuda:$DEVICE" --mode graph
      rc=$?; (( rc != 0 )) && failed=1
      if (( first == 1 )); then
        # compiling takes minutes: on the first shape only, and a failure to compile is a skip the line explains
        step 300 "torch-compile-$shape" python3 scripts/torch_decode_baseline.py "$models/$shape" --dtype bfloat16 --requests 1 \
            --new-tokens 64 --device "cuda:$DEVICE" --mode compile
      fi
    else
      echo "GPUCHECK torch-decode-tokens-per-second SKIPPED: python3 not found" | tee "$BUNDLE/logs/torch-$shape.log"
    fi
    if (( first == 1 )); then
      serve_check "$java" "$jar" "$models/$shape"; rc=$?; (( rc != 0 )) && failed=1
      first=0
    fi
  done
  return "$failed"
}

# `graphlane serve --backend gpu` on $3, then one streamed chat completion from curl, timed per SSE line:
# TTFT = first content chunk - request start, TPOT = (last content chunk - first) / (chunks - 1).
serve_check() {
  local java=$1 jar=$2 model=$3 port=${GPU_CHECK_PORT:-18431} log="$BUNDLE/logs/serve.log"
  : > "$log"
  command -v curl >/dev/null || { echo "GPUCHECK serve-chat-stream SKIPPED: curl not found" | tee -a "$log"; return 0; }
  [ -f "$model/config.json" ] || { echo "GPUCHECK serve-chat-stream SKIPPED: no model at $model" | tee -a "$log"; return 0; }
  echo "== serve --backend gpu on $model (port $port)"
  "$java" -jar "$jar" serve --backend gpu --device "$DEVICE" --model "$model" --stages 1 --port "$port" \
      >"$BUNDLE/logs/serve-server.log" 2>&1 &
  local pid=$! up=0 i
  for i in $(seq 1 180); do
    kill -0 "$pid" 2>/dev/null || break
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then up=1; break; fi
    sleep 1
  done
  if (( up == 0 )); then
    echo "GPUCHECK serve-chat-stream FAILED: the server did not answer /health within 180 s; its log ends:" | tee -a "$log"
    tail -15 "$BUNDLE/logs/serve-server.log" | tee -a "$log"
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    return 1
  fi
  local name endpoint body stream="$BUNDLE/logs/serve-stream.txt" t0 rc=0
  name=$(curl -s "http://127.0.0.1:$port/v1/models" | sed -n 's/.*"id" *: *"\([^"]*\)".*/\1/p' | head -1)
  for endpoint in chat/completions completions; do
    if [ "$endpoint" = chat/completions ]; then
      body='{"model":"'"$name"'","messages":[{"role":"user","content":"Write a short story about a lighthouse."}],"max_tokens":64,"temperature":0,"stream":true}'
    else
      body='{"model":"'"$name"'","prompt":"Write a short story about a lighthouse.","max_tokens":64,"temperature":0,"stream":true}'
    fi
    t0=$EPOCHREALTIME
    curl -sN --max-time 120 "http://127.0.0.1:$port/v1/$endpoint" -H 'Content-Type: application/json' -d "$body" \
      | while IFS= read -r line || [ -n "$line" ]; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done > "$stream"
    grep -q ' data: {' "$stream" && break
    echo "GPUCHECK serve-chat-stream note: /v1/$endpoint gave no stream: $(head -c 300 "$stream" | cut -d' ' -f2-)" | tee -a "$log"
  done
  if grep -q ' data: {' "$stream"; then
    awk -v t0="$t0" -v endpoint="$endpoint" '
      / data: \{/ && ($0 ~ /"content":"[^"]/ || $0 ~ /"text":"[^"]/ || $0 ~ /"token_ids":\[[0-9]/) { n++; if (n == 1) first = $1; last = $1 }
      END {
        if (n == 0) { print "GPUCHECK serve-chat-stream FAILED: /v1/" endpoint " streamed no content"; exit 1 }
        printf "GPUCHECK serve-chat-stream endpoint=/v1/%s ttft_ms=%.1f tpot_ms=%s chunks=%d (curl, one request, max_tokens 64)\n",
          endpoint, (first - t0) * 1000, (n > 1 ? sprintf("%.2f", (last - first) * 1000 / (n - 1)) : "n/a"), n
      }' "$stream" | tee -a "$log"
    rc=${PIPESTATUS[0]}
  else
    echo "GPUCHECK serve-chat-stream FAILED: neither /v1/chat/completions nor /v1/completions streamed (see $stream)" | tee -a "$log"
    rc=1
  fi
  curl -s "http://127.0.0.1:$port/metrics" > "$BUNDLE/logs/serve-metrics.txt" || true
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$pid" 2>/dev/null && { echo "GPUCHECK serve-chat-stream note: the server did not drain within 60 s" | tee -a "$log"; kill -9 "$pid"; }
  wait "$pid" 2>/dev/null
  return "$rc"
}

# The figures in one block: graphlane against the faster PyTorch anchor per shape and request count.
figures_summary() {
  local logs="$BUNDLE/logs" shape r g e c best
  [ -f "$logs/figures.log" ] || return 0
  echo "GPUCHECK   figures:"
  grep -h "^GPUCHECK hbm-bandwidth-gb-per-s\|^GPUCHECK bf16-gemm-tflops" "$logs/hbm.log" "$logs/gemm.log" 2>/dev/null | sed 's/^GPUCHECK /GPUCHECK     /'
  for shape in $SHAPES; do
    for r in 1 8 64; do
      g=$(grep -h "^GPUCHECK decode-tokens-per-second shape=$shape requests=$r " "$logs/decode-$shape.log" 2>/dev/null | head -1 | sed 's/.* graphlane=\([0-9.]*\).*/\1/')
      e=$(grep -h "^GPUCHECK torch-decode-tokens-per-second requests=$r " "$logs/torch-$shape.log" 2>/dev/null | head -1 | sed 's/.* torch=\([0-9.]*\).*/\1/')
      c=$(grep -h "^GPUCHECK torch-graph-decode-tokens-per-second requests=$r " "$logs/torch-graph-$shape.log" 2>/dev/null | head -1 | sed 's/.* torch=\([0-9.]*\).*/\1/')
      best=$(awk -v e="${e:-0}" -v c="${c:-0}" 'BEGIN { print (e > c ? e : c) }')
      printf 'GPUCHECK     decode %-13s requests=%-3s graphlane=%s torch-eager=%s torch-graph=%s graphlane/faster-anchor=%s\n' "$shape" "$r" \
        "${g:-not measured}" "${e:-not measured}" "${c:-not measured}" \
        "$( [ -n "$g" ] && awk -v g="$g" -v b="$best" 'BEGIN { if (b > 0) printf "%.2fx", g / b; else print "n/a" }' || echo n/a)"
    done
    grep -h "limit_ratio=" "$logs/decode-$shape.log" 2>/dev/null | head -1 | sed 's/.*\(limit_ratio=[0-9.]*\).*/GPUCHECK     '"$shape"' \1 at 1 request/'
    grep -h "^GPUCHECK prefill-tokens-per-second\|^GPUCHECK torch-prefill-tokens-per-second" "$logs/decode-$shape.log" "$logs/torch-$shape.log" 2>/dev/null \
      | sed 's/^GPUCHECK /GPUCHECK     /'
  done
  grep -h "^GPUCHECK serve-chat-stream" "$logs/serve.log" 2>/dev/null | sed 's/^GPUCHECK /GPUCHECK     /'
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
  figures_summary
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
  --bundle-figures) build_jar && pack_figures ;;
  --pack-figures) pack_figures ;;
  --run) run_checks ;;
  all) prepare && run_checks ;;
esac
