#!/usr/bin/env bash
# The longest functions and the largest files of the tree, to keep both short.
#
#   bash scripts/longest-functions.sh [-n N] [PATH...]
#
# PATHs are files or directories (default: the source directories); their
# .c, .cc and .h files are read. Prints the N longest functions (default 10)
# as "lines  file:line  name", then the N largest files as "lines  file".
#
# A function is what the tree's style makes of one: a definition that starts
# in column 0 (its signature may span lines and ends with "{") and ends at
# the next "}" in column 0 (or on its own line: "int f(void) { return 0; }");
# its length counts the signature and both braces.
# Declarations (a signature ending with ";"), initializers ("=" before the
# first "(") and preprocessor lines are not functions.
set -euo pipefail
cd "$(dirname "$0")/.."

n=10
if [ "${1:-}" = "-n" ]; then
  n=$2
  shift 2
fi
[ $# -gt 0 ] || set -- core sim runtime calibrate cli

mapfile -t files < <(find "$@" -type f \( -name '*.c' -o -name '*.cc' -o -name '*.h' \) | sort)
[ ${#files[@]} -gt 0 ] || { echo "longest-functions: no .c, .cc or .h files under $*" >&2; exit 1; }

echo "longest functions (lines, where, name):"
awk '
  function reset() { sig = ""; start = 0 }
  FNR == 1 { reset(); infn = 0 }
  infn {
    if ($0 ~ /^}/) {
      printf "%6d  %s:%d  %s\n", FNR - start + 1, FILENAME, start, name
      infn = 0
      reset()
    }
    next
  }
  start == 0 && /^[A-Za-z_]/ && !/^(typedef|struct|union|enum|extern "C")[^(]*$/ {
    start = FNR
    sig = ""
  }
  start > 0 {
    sig = sig " " $0
    if ($0 ~ /^[ \t]*$/ || $0 ~ /;[ \t]*(\/\*.*\*\/|\/\/.*)?$/) { reset(); next }
    one_line = $0 ~ /\{.*\}[ \t]*$/
    if (one_line || $0 ~ /\{[ \t]*$/) {
      p = index(sig, "(")
      if (p == 0 || index(substr(sig, 1, p), "=") > 0) { reset(); next }
      head = substr(sig, 1, p - 1)
      sub(/[ \t]+$/, "", head)
      m = match(head, /[A-Za-z_][A-Za-z_0-9:~]*$/)
      name = m ? substr(head, RSTART) : "?"
      if (one_line) {
        printf "%6d  %s:%d  %s\n", FNR - start + 1, FILENAME, start, name
        reset()
      } else {
        infn = 1
      }
    }
  }
' "${files[@]}" | sort -k1,1nr -k2,2 | head -n "$n"

echo
echo "largest files (lines, file):"
wc -l "${files[@]}" | grep -v ' total$' | sort -k1,1nr -k2,2 | head -n "$n"
