#!/usr/bin/env bash
# help2man runs this in place of a tool: --help prints the tool's help followed by the
# help of each of its subcommands, so one man page covers them all.
# Usage (by man/CMakeLists.txt): help2man ... "help_for_man.sh TOOL"
set -euo pipefail
tool=$1
case "${2:-}" in
  --version) exec "$tool" --version ;;
  --help) ;;
  *) echo "help_for_man.sh: expected --help or --version, got '${2:-}'" >&2; exit 2 ;;
esac
"$tool" --help
subcommands=$("$tool" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
for sub in $subcommands; do
  # A sub-section for help2man (a line ending in ":", the next one indented), then the
  # subcommand's options without CLI11's repeated Options: and -h,--help lines.
  "$tool" "$sub" --help | awk -v tool="$(basename "$tool")" -v name="$sub" '
    NR == 1 { desc = $0; next }
    /^Usage:/ { printf "\n%s %s:\n  %s (usage: %s)\n\n", tool, name, desc, substr($0, 8); next }
    /^Options:$/ || /-h,--help/ { next }
    { print }'
done
