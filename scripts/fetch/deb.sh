# scripts/fetch/deb.sh - sourced: fetch Debian packages for CI without touching the host's
# apt state and without depending on any suite but the one named.
#
#   . scripts/fetch/deb.sh
#   deb_init STATE_DIR ARCH SUITE [COMPONENT]   # a private apt: its own sources, lists,
#                                               # cache and empty dpkg status
#   deb_update || exit 1                        # apt-get update of that one suite, retried
#   apt-cache "${DEB_APT[@]}" depends PKG       # any apt command on the private state
#   deb_download DIR PKG... || exit 1           # apt-get download into DIR, retried
#
# Why private: a host's sources may list suites a fetch does not need (the security suite,
# a third-party repository, a suite the mirror is mid-sync on). An `apt-get update` over
# them fails as a whole when any one of them serves a bad index, so a kernel from `main`
# could not be had because the security suite's armhf index was inconsistent. Here the
# sources list holds exactly one line (Dir::Etc::SourceParts points at an empty folder,
# so the host's sources.list.d is not read), and the host's dpkg architecture list,
# package lists and status are never changed.
#
# The mirror is STEERD_DEB_MIRROR, else the address the host's own sources give for its
# release (so CI asks the mirror the machine is set up with); the archive key is
# STEERD_DEB_KEYRING, else Debian's (debian-archive-keyring). Each network step is tried
# 3 times, waiting STEERD_FETCH_BACKOFF seconds (default 5) and twice that between tries;
# (apt itself tries each file STEERD_APT_RETRIES more times, default 2, within a try);
# a fetch that still fails prints one line: what, for which architecture, from where, and
# the mirror's own words (apt's first error line).

# retry WHAT LOG CMD...: runs CMD with its output in LOG up to 3 times, with backoff.
retry() {
    local what=$1 log=$2 try delay=${STEERD_FETCH_BACKOFF:-5}
    shift 2
    for try in 1 2 3; do
        "$@" >"$log" 2>&1 && return 0
        [ "$try" = 3 ] && break
        echo "fetch: $what failed (try $try of 3: $(deb_words "$log")); again in ${delay} s" >&2
        sleep "$delay"
        delay=$((delay * 2))
    done
    return 1
}

# deb_words LOG: the mirror's words in an apt log: its first error line, else its last line.
deb_words() {
    local line
    line=$(grep -m 1 -E '^(E: |Err:)' "$1" 2>/dev/null | sed 's/^E: //')
    case $line in
        Err:*) line="$line: $(grep -A 1 -m 1 '^Err:' "$1" | tail -n 1 | sed 's/^ *//')" ;;
    esac
    [ -n "$line" ] || line=$(tail -n 1 "$1" 2>/dev/null)
    echo "${line:-no output}"
}

# deb_host_mirror: the first URI the host's apt sources give for its own release.
deb_host_mirror() {
    local codename
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 1
    {
        cat /etc/apt/sources.list 2>/dev/null
        cat /etc/apt/sources.list.d/*.list 2>/dev/null
    } | awk -v s="$codename" '$1 == "deb" {
            for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) break
            if ($(i + 1) == s) { print $i; exit }
        }' | grep . && return 0
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v s="$codename" '
        /^$/ { if (ok && uri) { print uri; exit } ok = 0; uri = "" }
        tolower($1) == "uris:" { uri = $2 }
        tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
        END { if (ok && uri) print uri }' | head -n 1 | grep .
}

# deb_init STATE ARCH SUITE [COMPONENT]: a private apt state in STATE for one suite.
deb_init() {
    DEB_STATE=$1 DEB_ARCH=$2 DEB_SUITE=$3 DEB_COMPONENT=${4:-main}
    DEB_MIRROR=${STEERD_DEB_MIRROR:-$(deb_host_mirror)} || DEB_MIRROR=""
    [ -n "$DEB_MIRROR" ] || {
        echo "fetch: no Debian mirror: the host's apt sources name none for its release; set STEERD_DEB_MIRROR" >&2
        return 1
    }
    local keyring=${STEERD_DEB_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
    rm -rf "$DEB_STATE"
    mkdir -p "$DEB_STATE/lists/partial" "$DEB_STATE/archives/partial" "$DEB_STATE/parts"
    : >"$DEB_STATE/status"
    printf 'deb [signed-by=%s] %s %s %s\n' "$keyring" "$DEB_MIRROR" "$DEB_SUITE" \
        "$DEB_COMPONENT" >"$DEB_STATE/sources.list"
    DEB_APT=(-q -o "Dir::State=$DEB_STATE" -o "Dir::State::Lists=$DEB_STATE/lists"
        -o "Dir::State::status=$DEB_STATE/status" -o "Dir::Cache=$DEB_STATE"
        -o "Dir::Cache::Archives=$DEB_STATE/archives"
        -o "Dir::Etc::SourceList=$DEB_STATE/sources.list"
        -o "Dir::Etc::SourceParts=$DEB_STATE/parts"
        -o "APT::Architecture=$DEB_ARCH" -o "APT::Architectures::=$DEB_ARCH"
        -o Acquire::Languages=none -o "Acquire::Retries=${STEERD_APT_RETRIES:-2}")
    [ "$(id -u)" != 0 ] || DEB_APT+=(-o APT::Sandbox::User=root)
}

# deb_where: the suite a deb_init named, as the failure lines print it.
deb_where() { echo "$DEB_MIRROR $DEB_SUITE/$DEB_COMPONENT ($DEB_ARCH)"; }

# deb_update: the private suite's index, or one line saying why not.
deb_update() {
    retry "apt-get update of $(deb_where)" "$DEB_STATE/update.log" \
        apt-get "${DEB_APT[@]}" update || {
        echo "fetch: the index of $(deb_where) could not be had: $(deb_words "$DEB_STATE/update.log")" >&2
        return 1
    }
    # apt-get update exits 0 even when the one source it had gave no index at all.
    grep -q . <(find "$DEB_STATE/lists" -maxdepth 1 -name '*_Packages*') || {
        echo "fetch: the index of $(deb_where) could not be had: $(deb_words "$DEB_STATE/update.log")" >&2
        return 1
    }
}

# deb_download DIR PKG...: the packages' .deb files into DIR, or one line saying why not.
deb_download() {
    local dir=$1
    shift
    mkdir -p "$dir"
    retry "apt-get download $* from $(deb_where)" "$DEB_STATE/download.log" \
        deb_download_once "$dir" "$@" || {
        echo "fetch: $* from $(deb_where) could not be had: $(deb_words "$DEB_STATE/download.log")" >&2
        return 1
    }
}

deb_download_once() {
    local dir=$1
    shift
    (cd "$dir" && rm -f ./*.deb && apt-get "${DEB_APT[@]}" download "$@")
}

# deb_host_update: the host's own package index, for installs on the host. A suite of the
# host's sources that still fails after 3 tries (a third-party repository, a mirror
# mid-sync) is said in one line and left as it was: the installs then take what the other
# suites gave, and fail themselves if that is not enough.
deb_host_update() {
    local log=${TMPDIR:-/tmp}/steerd-apt-update.$$.log
    retry "apt-get update of the host's sources" "$log" apt-get update -q ||
        echo "fetch: the host's package index is partly stale ($(deb_words "$log")); installing from what the other suites gave" >&2
    rm -f "$log"
}

# deb_host_install [APT-GET INSTALL OPTIONS] PKG...: installs on the host, retried; one line
# with apt's words if it cannot.
deb_host_install() {
    local log=${TMPDIR:-/tmp}/steerd-apt-install.$$.log
    retry "apt-get install $*" "$log" apt-get install -y -q "$@" || {
        echo "fetch: could not install $* from the host's sources: $(deb_words "$log")" >&2
        rm -f "$log"
        return 1
    }
    rm -f "$log"
}
