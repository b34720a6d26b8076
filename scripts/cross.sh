# scripts/cross.sh - sourced by scripts/static.sh and scripts/test-qemu.sh: what building
# and running steerd for a CPU other than this x86-64 host takes.
#
#   . scripts/cross.sh
#   cross_setup TARGET || { echo "$CROSS_WHY"; ...; }
#
# cross_setup exports, for TARGET, cargo's linker and runner variables
# (CARGO_TARGET_<T>_LINKER, CARGO_TARGET_<T>_RUNNER) and sets
#   CROSS_FLAGS      rustc flags the link needs (static libc; for musl where it lives)
#   CROSS_BUILD_STD  "yes" when no prebuilt standard library exists for TARGET (rustup
#                    here has only x86-64 and aarch64): cargo must get -Z build-std
#   CROSS_QEMU       the user-mode QEMU that runs its binaries (empty on the host)
#   CROSS_LIBC       musl or glibc, for the reports
# or returns 1 with CROSS_WHY saying what is missing.
#
# The targets and their libc (docs/appliance.md says why):
#   x86_64-unknown-linux-gnu        glibc, prebuilt std
#   x86_64-unknown-linux-musl       musl, prebuilt std (rustup's self-contained musl) where
#                                   rustup has it, else as the two below (Debian's musl-dev)
#   aarch64-unknown-linux-musl      musl, prebuilt std, linked by rust-lld
#   armv7-unknown-linux-musleabihf  musl from Debian's armhf musl-dev, arm-linux-gnueabihf-gcc
#   riscv64gc-unknown-linux-gnu     static glibc (libc6-dev-riscv64-cross): Debian 12 has
#                                   no riscv64 musl (riscv64 is not a bookworm architecture)
#   s390x-unknown-linux-musl        musl from Debian's s390x musl-dev, s390x-linux-gnu-gcc
#
# For the musl targets rustup has no std, so none of its self-contained musl (libc.a,
# crt objects, libunwind.a) either. cross_musl_dir puts Debian's musl-dev for that
# architecture in the machine's CI cache (fetched once with `apt-get download` into a
# private apt state, as scripts/vm/fetch.sh fetches guest kernels: the host's dpkg is not
# touched) and the cross gcc links against it instead of glibc: -B makes gcc take musl's
# crt1.o/crti.o/crtn.o, -L puts musl's libc.a before the cross glibc. std's `unwind`
# crate asks for libunwind.a; gcc's libgcc_eh.a is that unwinder (the _Unwind_* ABI),
# copied under that name, with scripts/cross/musl-unwind.c: the two functions that
# unwinder asks glibc for and musl does not have (__gnu_Unwind_Find_exidx on 32-bit ARM,
# _dl_find_object elsewhere). Only the tests unwind; the release binaries abort.

# cross_var TARGET: the target as cargo spells it in variable names.
cross_var() { echo "$1" | tr 'a-z-' 'A-Z_'; }

cross_setup() {
    local t=$1 var gcc="" deb_arch="" musl_triple=""
    var=$(cross_var "$t")
    CROSS_FLAGS="" CROSS_BUILD_STD=no CROSS_QEMU="" CROSS_LIBC=glibc CROSS_WHY=""
    case $t in
        x86_64-unknown-linux-gnu) CROSS_FLAGS="-C target-feature=+crt-static"; return 0 ;;
        x86_64-unknown-linux-musl)
            CROSS_LIBC=musl
            rustc --print target-libdir --target "$t" 2>/dev/null | xargs -I{} test -d {} &&
                return 0
            command -v rustup >/dev/null && rustup target add "$t" >/dev/null 2>&1 && return 0
            gcc=x86_64-linux-gnu-gcc deb_arch=amd64 musl_triple=x86_64-linux-musl
            ;;
        aarch64-unknown-linux-musl)
            CROSS_LIBC=musl CROSS_QEMU=qemu-aarch64-static
            export "CARGO_TARGET_${var}_LINKER=rust-lld"
            ;;
        armv7-unknown-linux-musleabihf)
            gcc=arm-linux-gnueabihf-gcc deb_arch=armhf musl_triple=arm-linux-musleabihf
            CROSS_QEMU=qemu-arm-static
            ;;
        riscv64gc-unknown-linux-gnu) gcc=riscv64-linux-gnu-gcc CROSS_QEMU=qemu-riscv64-static ;;
        s390x-unknown-linux-musl)
            gcc=s390x-linux-gnu-gcc deb_arch=s390x musl_triple=s390x-linux-musl
            CROSS_QEMU=qemu-s390x-static
            ;;
        *) CROSS_WHY="$t: not a target steerd is built for here"; return 1 ;;
    esac
    [ -z "$CROSS_QEMU" ] || export "CARGO_TARGET_${var}_RUNNER=$CROSS_QEMU"
    [ -n "$gcc" ] || return 0

    CROSS_BUILD_STD=yes
    [ -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library/std" ] ||
        { CROSS_WHY="$t: no rust-src (rustup component add rust-src) to build its std"; return 1; }
    command -v "$gcc" >/dev/null ||
        { CROSS_WHY="$t: no $gcc (Debian gcc-${gcc%-gcc} with its libc6-dev cross package)"; return 1; }
    export "CARGO_TARGET_${var}_LINKER=$gcc"
    # Both libcs default to a dynamic link for some of these targets in rustc 1.95.
    CROSS_FLAGS="-C target-feature=+crt-static"
    [ -n "$deb_arch" ] || return 0
    CROSS_LIBC=musl
    local dir
    dir=$(cross_musl_dir "$t" "$deb_arch" "$musl_triple" "$gcc") || return 1
    CROSS_FLAGS+=" -C link-self-contained=no -C link-arg=-B$dir -L native=$dir"
    # musl's static-pie start-up applies only relative relocations. GNU ld for s390x
    # (binutils 2.40) leaves symbolic ones (R_390_64) against the Rust symbols a non-LTO
    # build gives default visibility (the test binaries: their Debug vtables then held
    # null pointers and the first {:?} of a String crashed); -Bsymbolic does not change
    # that. Hidden symbols are bound in the executable, so every relocation is relative.
    # The same flags everywhere; scripts/static.sh checks each binary for what is left.
    CROSS_FLAGS+=" -Zdefault-visibility=hidden"
}

# cross_musl_dir TARGET DEB_ARCH MUSL_TRIPLE GCC: prints the machine cache's entry for
# TARGET's musl (scripts/fetch/cache.sh; keyed by this file, the shim, the fetch library
# and the cross gcc's version), filling it first if needed from Debian 12's main only
# (scripts/fetch/deb.sh).
cross_musl_dir() {
    local t=$1 deb_arch=$2 triple=$3 gcc=$4 here root dir key
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    . "$here/fetch/cache.sh"
    . "$here/fetch/deb.sh"
    root=$(cache_root)/cross || return 1
    key=$( (cat "$here/cross.sh" "$here/cross/musl-unwind.c" "$here/fetch/deb.sh" \
        "$here/fetch/cache.sh"; "$gcc" --version) | sha256sum | cut -c1-16)
    dir=$root/$t-$key
    cache_valid "$dir" && { echo "$dir"; return 0; }
    mkdir -p "$root"
    (
        flock 8
        cache_valid "$dir" && exit 0
        rm -rf "$dir"
        mkdir -p "$dir"
        echo "cross: fetching Debian's $deb_arch musl-dev for $t (kept in $dir)" >&2
        deb_init "$dir/apt" "$deb_arch" bookworm main || exit 1
        deb_update || exit 1
        deb_download "$DEB_STATE/dl" musl-dev || exit 1
        dpkg-deb -x "$DEB_STATE"/dl/musl-dev_*.deb "$DEB_STATE/root"
        cp "$DEB_STATE/root/usr/lib/$triple"/*.a "$DEB_STATE/root/usr/lib/$triple"/*.o "$dir/"
        cp "$("$gcc" -print-file-name=libgcc_eh.a)" "$dir/libunwind.a"
        "$gcc" -O2 -c -o "$DEB_STATE/musl-unwind.o" "$here/cross/musl-unwind.c"
        ar rcs "$dir/libunwind.a" "$DEB_STATE/musl-unwind.o"
        rm -rf "$DEB_STATE"
        cache_seal "$dir"
        cache_prune "$root" "$t-" "$dir"
    ) 8>"$root/$t.lock" || { CROSS_WHY="$t: could not fetch Debian's $deb_arch musl-dev (the line above says why)"; return 1; }
    echo "$dir"
}
