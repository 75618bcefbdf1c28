# Sourced by ./jquant and ./run-tests: sets JQUANT_JDK to a JDK (java + javac) of version 25 or newer,
# trying $JAVA_HOME first, then every JDK under /usr/lib/jvm.
# The version comes from the JDK's `release` file when it has one: starting a JVM just to ask costs
# 0.1-0.3 s per candidate, on every command.
java_feature_version() {
  [ -x "$1/bin/java" ] || return 0
  local v=""
  if [ -f "$1/release" ]; then
    v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release")
  fi
  if [ -z "$v" ]; then
    v=$("$1/bin/java" -XshowSettings:properties -version 2>&1 \
      | awk -F'= ' '/java.specification.version/ {print $2; exit}' | cut -d. -f1)
  fi
  echo "$v"
}
find_jdk() {
  local d v
  for d in ${JAVA_HOME:+"$JAVA_HOME"} /usr/lib/jvm/*; do
    v=$(java_feature_version "$d")
    if [ -n "$v" ] && [ "$v" -ge 25 ] && [ -x "$d/bin/javac" ]; then JQUANT_JDK="$d"; return 0; fi
  done
  echo "jquant: needs a JDK 25 or newer (set JAVA_HOME, or install one under /usr/lib/jvm)" >&2
  return 1
}
