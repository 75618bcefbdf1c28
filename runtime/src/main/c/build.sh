#!/bin/sh
# Builds jquant's native kernel library (libjqk) into the runtime's classes directory, so that it
# lands in the jars beside the Java classes (jquant.runtime.nativelib.NativeLibrary loads it). Run
# by the Maven build (runtime/pom.xml, phase process-classes; -Djquant.native.skip=true skips it).
#
# usage: build.sh CLASSES_DIR
#
# Without a C compiler ($CC, else cc) nothing is built and the Java kernels run: that is not an
# error. With one, a failed compilation is (fix the source, or skip the native build).
set -eu
src=$(cd "$(dirname "$0")" && pwd)
classes=$1
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "jquant: no C compiler ($cc): native kernels not built, the Java kernels will run"
  exit 0
fi
machine=$("$cc" -dumpmachine)
case "$(uname -s)" in
  Linux) os=linux; lib=libjqk.so; shared=-shared ;;
  Darwin) os=macos; lib=libjqk.dylib; shared=-dynamiclib ;;
  *) echo "jquant: native kernels are not built on $(uname -s); the Java kernels will run"; exit 0 ;;
esac
# Each instruction set's source with its target flags, then the sources every platform has.
case "$machine" in
  x86_64*|amd64*)
    arch=x86_64
    avx512="-mavx512f -mavx512bw -mavx512vl -mavx512vnni -mf16c -mfma"
    # x86_avx512.c twice: as it is, and with GFNI's byte maps for the weightlet unpacker (jq_*_avx512gfni)
    set -- "x86_avx512.c $avx512" "x86_avx512.c $avx512 -mgfni -DJQK_GFNI" "x86_avx2.c -mavx2 -mfma -mf16c" ;;
  aarch64*|arm64*)
    arch=aarch64
    set -- "arm_neon.c -march=armv8.2-a+dotprod" ;;
  *)
    echo "jquant: no native kernels for $machine; the Java kernels will run"
    exit 0 ;;
esac
out="$classes/jquant/runtime/native/$os-$arch"
# Up to date: the library is newer than every source.
if [ -f "$out/$lib" ] && [ -z "$(find "$src" -newer "$out/$lib" -print -quit)" ]; then exit 0; fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# -ffp-contract=off: the float formula must round as the Java kernels do, never fused into an FMA.
# -funroll-loops: at -O2 GCC left the kernels' short loops (a chunk's row pointers and prefetches, the block
# steps) rolled; unrolled, the TQ2_0 kernel ran 1.2 times as fast from L2 and the GGUF block kernels' decode
# 1.05-1.18 times (bench/RESULTS.md).
flags="-O2 -funroll-loops -fPIC -fvisibility=hidden -ffp-contract=off -fno-strict-aliasing -std=c11 -Wall -Wextra -Werror"
objects=""
n=0
for unit in "$@" "common.c"; do
  file=${unit%% *}
  target=""
  [ "$file" != "$unit" ] && target=${unit#* }
  n=$((n + 1))
  # shellcheck disable=SC2086
  "$cc" $flags $target -c "$src/$file" -o "$tmp/$n-${file%.c}.o"
  objects="$objects $tmp/$n-${file%.c}.o"
done
# shellcheck disable=SC2086
"$cc" $shared -o "$tmp/$lib" $objects
mv "$tmp/$lib" "$out/$lib"
echo "jquant: built $out/$lib with $cc ($machine)"
