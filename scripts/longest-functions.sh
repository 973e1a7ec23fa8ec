#!/bin/sh
# The longest functions, as clippy's too_many_lines counts them: the lines of the body that
# hold code (not blank, not only a comment). Relies on rustfmt's layout: a body ends at the
# first `}` back at the indentation of its `fn`.
#
#   scripts/longest-functions.sh [N] [DIR...]    (default: the ten longest under src/)
set -eu
n=${1:-10}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- src
find "$@" -name '*.rs' | sort | xargs awk '
FNR == 1 { depth = 0 }
{
    line = $0
    ind = match(line, /[^ ]/) - 1
    # Close the bodies that end here (innermost first).
    while (depth > 0 && ind == indent[depth] && line ~ /^ *}/) {
        printf "%d\t%s:%d\t%s\n", count[depth], FILENAME, start[depth], name[depth]
        depth--
    }
    code = line !~ /^ *$/ && line !~ /^ *\/\//
    for (d = 1; d <= depth; d++) if (code) count[d]++
    if (match(line, /^ *(pub(\([a-z:]+\))? )?(const )?(async )?(unsafe )?(extern "[A-Za-z]+" )?fn [A-Za-z0-9_]+/)) {
        sig = substr(line, RSTART, RLENGTH)
        sub(/.*fn /, "", sig)
        pending = sig; pending_ind = ind; pending_line = FNR
    }
    if (pending != "") {
        if (line ~ /;$/ && line !~ /\{/) { pending = "" }
        else if (line ~ /\{$/ || line ~ /\{ *\}$/) {
            if (line !~ /\}$/) {
                depth++
                indent[depth] = pending_ind; start[depth] = pending_line
                name[depth] = pending; count[depth] = 0
            }
            pending = ""
        }
    }
}' | sort -rn | head -n "$n" | awk -F'\t' 'BEGIN { printf "%-6s %-44s %s\n", "lines", "where", "fn" }
{ printf "%-6s %-44s %s\n", $1, $2, $3 }'
