# scripts/fetch/cache.sh - sourced: the machine-level cache of what CI fetches or builds from
# outside the clone (guest kernels, cross sysroots, the systemd guest, the bpf_asm oracle,
# cargo-fuzz, the Python tools), so a second run on the same machine fetches nothing.
#
#   . scripts/fetch/cache.sh
#   root=$(cache_root)                   # STEERD_CI_CACHE, else /var/cache/steerd-ci as
#                                        # root, else $XDG_CACHE_HOME/steerd-ci
#   key=$(cache_key FILE...)             # 16 hex digits of the files' contents: the
#                                        # scripts that make an entry decide its key
#   cache_valid DIR                      # DIR was sealed and no file of it has changed
#   cache_seal DIR                       # record every file's SHA-256 in DIR/MANIFEST
#   cache_prune PARENT PREFIX KEEP       # remove PARENT/PREFIX* entries but KEEP
#
# An entry is a directory made whole and then sealed: MANIFEST is written last, by rename,
# so an entry whose maker died half-way has none and is made again; a file that was
# truncated or changed since no longer matches its line and the entry is made again.

cache_root() {
    local root=${STEERD_CI_CACHE:-}
    if [ -z "$root" ]; then
        if [ "$(id -u)" = 0 ]; then
            root=/var/cache/steerd-ci
        else
            root=${XDG_CACHE_HOME:-$HOME/.cache}/steerd-ci
        fi
    fi
    mkdir -p "$root" && echo "$root"
}

cache_key() { cat "$@" | sha256sum | cut -c1-16; }  # no FILE: standard input

cache_valid() {
    local dir=$1
    [ -s "$dir/MANIFEST" ] || return 1
    (cd "$dir" && sha256sum --quiet --strict -c MANIFEST >/dev/null 2>&1)
}

cache_seal() {
    local dir=$1
    (
        cd "$dir" || exit 1
        rm -f MANIFEST MANIFEST.new
        find . -type f ! -name MANIFEST ! -name MANIFEST.new ! -name .lock -print0 |
            sort -z | xargs -0 -r sha256sum >MANIFEST.new && mv MANIFEST.new MANIFEST
    )
}

cache_prune() {
    local parent=$1 prefix=$2 keep=$3 old
    for old in "$parent/$prefix"*; do
        [ -e "$old" ] && [ "$old" != "$keep" ] && [ "$old" != "$keep.lock" ] && rm -rf "$old"
    done
    return 0
}

# cache_bound_target DIR: a cargo target directory kept in the cache (the other CPUs'
# builds: their standard library and dependencies are what is reused) gains the project's
# own artifacts for every clone it serves; past 8 GiB it is emptied, and the next build
# makes what it needs again. Other toolchains' directories are removed.
cache_bound_target() {
    local dir=$1 mb
    mkdir -p "$dir"
    cache_prune "$(dirname "$dir")" "" "$dir"
    mb=$(du -sm "$dir" 2>/dev/null | cut -f1)
    if [ "${mb:-0}" -gt 8192 ]; then
        echo "cache: $dir holds ${mb} MiB; emptied" >&2
        rm -rf "$dir" && mkdir -p "$dir"
    fi
}
