#!/usr/bin/env bash
# Every C, C++ and header file of the project is laid out as .clang-format
# says: clang-format changes nothing (virtual environments the benchmarks
# install under bench/ are not the project's). Prints each file it would change and
# the first lines of the change.
#
#   test_format.sh SOURCE_DIR
set -u
src=${1:?usage: test_format.sh SOURCE_DIR}
. "$src/tests/integration/need.sh"
need_tools test_format clang-format
cd "$src" || exit 1
bad=0 n=0
while IFS= read -r f; do
  n=$((n + 1))
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then
    echo "FAIL: $f is not laid out as .clang-format says (clang-format -i $f); first differences:"
    clang-format --style=file "$f" | diff "$f" - | head -8
    bad=$((bad + 1))
  fi
done < <(find core sim runtime calibrate cli tests bench -name .venv -prune -o -type f \
  \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.hpp' \) -print | sort)
echo "test_format: $n files, $bad not formatted"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
