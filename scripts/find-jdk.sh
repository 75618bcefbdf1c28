# Sourced by ./jquant and ./run-tests: sets JQUANT_JDK to a JDK (java + javac) of version 25 or newer,
# trying $JAVA_HOME first, then every JDK under /usr/lib/jvm.
# The version comes from the JDK's `release` file when it has one, read with bash alone: starting a
# JVM just to ask costs 0.1-0.3 s per candidate, and a `sed` per candidate cost the launcher 50 ms
# on every command where four JDKs are installed.

# Sets JQUANT_FEATURE_VERSION to the feature version of the JDK at $1 (empty if it has no java).
java_feature_version() {
  JQUANT_FEATURE_VERSION=""
  [ -x "$1/bin/java" ] || return 0
  local line
  if [ -f "$1/release" ]; then
    while IFS= read -r line; do
      if [[ $line =~ ^JAVA_VERSION=\"([0-9]+) ]]; then JQUANT_FEATURE_VERSION=${BASH_REMATCH[1]}; return 0; fi
    done < "$1/release"
  fi
  JQUANT_FEATURE_VERSION=$("$1/bin/java" -XshowSettings:properties -version 2>&1 \
    | awk -F'= ' '/java.specification.version/ {print $2; exit}' | cut -d. -f1)
}
find_jdk() {
  local d v
  for d in ${JAVA_HOME:+"$JAVA_HOME"} /usr/lib/jvm/*; do
    java_feature_version "$d"
    v=$JQUANT_FEATURE_VERSION
    if [ -n "$v" ] && [ "$v" -ge 25 ] && [ -x "$d/bin/javac" ]; then JQUANT_JDK="$d"; return 0; fi
  done
  echo "jquant: needs a JDK 25 or newer (set JAVA_HOME, or install one under /usr/lib/jvm)" >&2
  return 1
}
