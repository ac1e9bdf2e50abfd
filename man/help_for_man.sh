#!/usr/bin/env bash
# help2man runs this in place of a tool: --help prints the tool's help followed by the
# help of each of its subcommands (trainctl's verbs), so one man page covers them all.
# With a VERB, only that verb's help: its own page, trainctl-VERB(1), as git-status(1) is.
# Usage (by man/CMakeLists.txt): help2man ... "help_for_man.sh TOOL [VERB]"
set -euo pipefail
tool=$1
verb=""
if [ $# -eq 3 ]; then
  verb=$2
  set -- "$1" "$3"
fi
case "${2:-}" in
  --version)
    # "trainctl-status 0.1.0" for a verb's page: help2man names the page by it.
    [ -z "$verb" ] || { "$tool" --version | sed "s/^\([^ ]*\) /\1-$verb /"; exit 0; }
    exec "$tool" --version
    ;;
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
if [ -n "$verb" ]; then
  help_of "$verb"
  exit 0
fi
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
