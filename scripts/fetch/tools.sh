#!/usr/bin/env bash
# scripts/fetch/tools.sh python|cargo-fuzz - makes sure the machine's CI cache
# (scripts/fetch/cache.sh) holds a tool the suite needs from a registry other than Debian's,
# and prints the folder to put first on PATH:
#   python      a venv with .ci/requirements.txt (PyPI), keyed by that file and python3's
#               version
#   cargo-fuzz  `cargo install --locked cargo-fuzz`, keyed by the toolchain's version
# Each is made in a folder of its own, tried 3 times (scripts/fetch/deb.sh's retry), and
# sealed when whole, so a run that died half-way, or a file changed since, makes it again.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/fetch/cache.sh
. scripts/fetch/deb.sh
what=${1:?usage: scripts/fetch/tools.sh python|cargo-fuzz}
root=$(cache_root)
case $what in
    python)
        key=$( (cat .ci/requirements.txt scripts/fetch/tools.sh; python3 --version) | cache_key)
        dir=$root/python-$key bin=$dir/bin
        make_it() {
            rm -rf "$dir" && python3 -m venv "$dir" &&
                "$dir/bin/pip" install -q --disable-pip-version-check -r .ci/requirements.txt
        }
        ;;
    cargo-fuzz)
        key=$( (cat scripts/fetch/tools.sh; rustc -vV) | cache_key)
        dir=$root/cargo-fuzz-$key bin=$dir/bin
        make_it() { rm -rf "$dir" && cargo install -q --locked --root "$dir" cargo-fuzz; }
        ;;
    *) echo "tools.sh: unknown tool '$what' (python or cargo-fuzz)" >&2; exit 2 ;;
esac
if ! cache_valid "$dir"; then
    exec 8>"$dir.lock"
    flock 8
    if ! cache_valid "$dir"; then
        log=$root/$what.log
        echo "tools.sh: making $what in $dir" >&2
        retry "making $what" "$log" make_it || {
            echo "tools.sh: $what could not be made: $(tail -n 1 "$log")" >&2
            exit 1
        }
        rm -f "$log"
        cache_seal "$dir"
        cache_prune "$root" "$what-" "$dir"
    fi
fi
echo "$bin"
