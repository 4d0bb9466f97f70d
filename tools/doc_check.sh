#!/bin/sh
# doc_check.sh: fail when a doc line is longer than 300 characters or a decision record longer than 150 lines.
# Checks README.md, rtl/README.md and docs/**/*.md; prints file:line for each offence. Usage: tools/doc_check.sh [ROOT]
set -eu
root=${1:-.}
cd "$root"
max_line=300
max_record=150
files=$(
    { ls README.md rtl/README.md 2>/dev/null; find docs -name '*.md' 2>/dev/null; } | sort
)
[ -n "$files" ] || { echo "doc_check: no docs under $root" >&2; exit 2; }
status=0
# Characters, not bytes: awk under a UTF-8 locale counts characters; C.UTF-8 is in every Debian.
LC_ALL=C.UTF-8 awk -v max="$max_line" '
    length($0) > max { printf "%s:%d: line is %d characters (max %d)\n", FILENAME, FNR, length($0), max; bad = 1 }
    END { exit bad }
' $files || status=1
for f in $(find docs/decisions -name '[0-9][0-9][0-9][0-9]-*.md' 2>/dev/null | sort); do
    n=$(wc -l < "$f")
    if [ "$n" -gt "$max_record" ]; then
        echo "$f:$n: decision record is $n lines (max $max_record)"
        status=1
    fi
done
exit $status
