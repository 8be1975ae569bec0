#!/usr/bin/env bash
# Check the manual's references (README.md, docs/*.md and every other .md
# of the tree): every source path it names exists, and every relative link
# between the pages resolves, to a heading where it names one; and every
# page of docs/ is reached from README.md by links. Prints each one
# missing as FILE:LINE and exits 1; exits 0 when all resolve.
#
# A source path is a word that starts with one of the tree's folders
# (shim/, dpu_agent/, common/, scripts/, tests/, examples/, include/,
# docs/, .ci/) and names a file or folder: it ends in an extension or "/",
# holds a "*" (a glob, which must match something), or has two slashes or
# more. "shim/stock" (a ratio in prose) is not one. A path names a program
# when PATH.c exists (tests/bench/overlap).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

mds=$(find . \( -name .git -o -name build -o -name results \) -prune -o \
           -name '*.md' -type f -print | sed 's|^\./||' | sort)
bad=0 npaths=0 nlinks=0 npages=0
declare -A links    # page -> the pages it links to, space-separated

# slugs FILE: the anchors of FILE's headings, as GitHub makes them.
slugs() {
    sed -n 's/^#\{1,6\} \{1,\}//p' "$1" | LC_ALL=C tr 'A-Z' 'a-z' |
        LC_ALL=C sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

for md in $mds; do
    npages=$((npages + 1))
    # Source paths, outside link targets (the links are checked below).
    while IFS=: read -r line path; do
        while [[ $path == *[.,] ]]; do path=${path%?}; done
        case $path in
        */ | *'*'* | .ci/*) ;;
        */*/*) ;;
        *) [[ ${path##*/} == ?*.[A-Za-z0-9]* ]] || continue ;;
        esac
        npaths=$((npaths + 1))
        if [ -e "$path" ] || [ -e "$path.c" ] ||
           { [[ $path == *'*'* ]] && compgen -G "$path" >/dev/null; }; then
            continue
        fi
        echo "$md:$line: source path $path does not exist"
        bad=1
    done < <(sed -E 's/\]\([^)[:space:]]+\)/]/g' "$md" |
             grep -noP '(?<![\w/.$~<>-])(?:shim|dpu_agent|common|scripts|tests|examples|include|docs|\.ci)/[\w./*-]*')
    # Relative links: [text](target) and [text](target#anchor).
    while IFS=: read -r line link; do
        link=${link#](}
        link=${link%)}
        case $link in
        http:* | https:* | mailto:*) continue ;;
        esac
        nlinks=$((nlinks + 1))
        target=${link%%#*}
        anchor=
        [[ $link == *'#'* ]] && anchor=${link#*#}
        if [ -z "$target" ]; then
            target=$md
        else
            target=$(realpath -m --relative-to=. "$(dirname "$md")/$target")
        fi
        [[ $target == *.md ]] && links[$md]+=" $target"
        if [ ! -e "$target" ]; then
            echo "$md:$line: link $link: no file $target"
            bad=1
        elif [ -n "$anchor" ] && ! slugs "$target" | grep -qxF "$anchor"; then
            echo "$md:$line: link $link: no heading #$anchor in $target"
            bad=1
        fi
    done < <(grep -noP '\]\([^)\s]+\)' "$md")
done

# Pages reached from README.md.
declare -A seen=([README.md]=1)
todo=(README.md)
while [ ${#todo[@]} -gt 0 ]; do
    page=${todo[0]}
    todo=("${todo[@]:1}")
    for t in ${links[$page]:-}; do
        [ -n "${seen[$t]:-}" ] && continue
        seen[$t]=1
        todo+=("$t")
    done
done
for md in docs/*.md; do
    [ -n "${seen[$md]:-}" ] && continue
    echo "$md: not reached from README.md by links"
    bad=1
done

[ $bad = 0 ] || echo "The pages above name files, pages or headings that are" \
    "not in the tree (sources moved or renamed, pages split): fix the pages."
echo "doc_refs: $npaths source paths and $nlinks links in $npages pages;" \
     "$([ $bad = 0 ] && echo "all resolve" || echo "the ones above do not")"
exit $bad
