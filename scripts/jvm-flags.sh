# Sourced by ./jquant and scripts/side-by-side, with $root the checkout: sets JQUANT_JVM_FLAGS, the
# JVM flags every jquant process gets (the Vector API module, native access for mapped files, the
# parallel collector, and the compiler settings below).
#
# scripts/compiler-directives.json keeps C2 from compiling the Vector API's own methods, which are hot
# only while our kernels wait for C2; with it the kernels compile sooner, and jquant's background
# warm-up of them only took cores from the compiler, except for the dense row kernels that read the
# mapped file (jquant.kernelWarmup=dense-rows); together they bring the first token much sooner
# (docs/runtime.md, bench/RESULTS.md). It also always inlines FloatExp's vector helpers, which C2 left
# out of line in some runs, slow (the file says why). The JVM prints "2 compiler directives added" on
# stdout when it reads the file, which would corrupt --json output: VM output off
# (-XX:-DisplayVMOutput; warnings and errors still reach stderr; JQUANT_JAVA_OPTS can turn it back on).
JQUANT_JVM_FLAGS=(--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC
  -XX:+UnlockDiagnosticVMOptions "-XX:CompilerDirectivesFile=$root/scripts/compiler-directives.json"
  -XX:-DisplayVMOutput -Djquant.kernelWarmup=dense-rows)
