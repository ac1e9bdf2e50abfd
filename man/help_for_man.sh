#!/usr/bin/env bash
# help2man runs this in place of a tool: --help prints the tool's help followed by the
# help of each of its subcommands (trainctl's verbs), so one man page covers them all.
# Usage (by man/CMakeLists.txt): help2man ... "help_for_man.sh TOOL"
set -euo pipefail
tool=$1
case "${2:-}" in
  --version) exec "$tool" --version ;;
  --help) ;;
  *) echo "help_for_man.sh: expected --help or --version, got '${2:-}'" >&2; exit 2 ;;
esac
# CLI11 2.6 (Debian sid) writes "OPTIONS:"/"SUBCOMMANDS:", a usage line without
# "Usage:", "-h,     --help" and trailing blanks; 2.4 writes "Options:", "Usage: ..." and
# "-h,--help". Both become the second form, which help2man reads.
name=$(basename "$tool")
help_of() {
  "$tool" "$@" --help | sed -E -e 's/[[:space:]]+$//' -e 's/^OPTIONS:$/Options:/' -e 's/^SUBCOMMANDS:$/Subcommands:/' \
    -e 's/^(  +-[[:alnum:]]),[[:space:]]+--/\1,--/' -e "s/^($name( [a-z-]+)? \\[OPTIONS\\].*)$/Usage: \\1/"
}
help_of
subcommands=$(help_of | awk '/^(Subcommands|Verbs):/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
for sub in $subcommands; do
  # A sub-section for help2man (a line ending in ":", the next one indented), then the
  # subcommand's options without CLI11's repeated Options: and -h,--help lines.
  help_of "$sub" | awk -v tool="$name" -v name="$sub" '
    NR == 1 { desc = $0; next }
    /^Usage:/ { printf "\n%s %s:\n  %s (usage: %s)\n\n", tool, name, desc, substr($0, 8); next }
    /^Options:$/ || /-h,--help/ { next }
    { print }'
done
