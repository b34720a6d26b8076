#!/bin/sh
# scripts/systemd-vm/checks.sh - runs as root inside the systemd guest of tests/vm/systemd.rs,
# from the test disk mounted on /test, which holds:
#   steerd, deploy/              the binary under test and the repository's unit files
#   install-service.sh           the commands of deploy/steerd.service's header comment
#   install-socket.sh            the commands of deploy/steerd.socket's header comment
# (tests/vm/systemd.rs extracts them, and checks docs/deploy.md shows the same commands)
#
# Output: /test/results, one line per check, `check NAME pass|fail DETAIL`, and
# `info NAME VALUE` lines; /test/journal.txt, the journal of the steerd units. Every
# wait is bounded. The guest powers off when this script ends (steerd-test.service).
set -u
cd /test || exit 1
R=/test/results
: >"$R"
t0=$(cut -d' ' -f1 /proc/uptime)

say() { echo "$*" >>"$R"; echo "steerd-check: $*"; }
pass() { n=$1; shift; say "check $n pass $*"; }
fail() { n=$1; shift; say "check $n fail $*"; }
ok_if() { n=$1; d=$2; shift 2; if "$@"; then pass "$n" "$d"; else fail "$n" "$d"; fi; }
prop() { systemctl show -p "$2" --value "$1"; }
status_of() { curl -s -o /dev/null -m 10 -w '%{http_code}' "$1"; }
# `wait_for SECONDS CMD...`: true once CMD succeeds, polled every 0.2 s.
wait_for() {
    n=$(( $1 * 5 )); shift
    while [ "$n" -gt 0 ]; do "$@" && return 0; sleep 0.2; n=$((n - 1)); done
    return 1
}
# `load_start NAME URL`: `steerd bench load` for 4 s, 20 keep-alive connections.
load_start() { steerd bench load "$2" -c 20 -d 4s >"/test/load-$1.txt" 2>&1 & LOAD=$!; }
# `load_errors NAME`: prints that finished load's "ERRORS REQUESTS" (or "? ?"); the
# caller waits for it first (a command substitution's subshell cannot).
load_errors() {
    e=$(sed -n 's/^errors: \([0-9]*\).*/\1/p' "/test/load-$1.txt")
    r=$(sed -n 's/^requests: \([0-9]*\) .*/\1/p' "/test/load-$1.txt")
    echo "${e:-?} ${r:-?}"
}
starts() { case "$1" in "$2"*) return 0 ;; esac; return 1; }
zero_errors() { [ "$1" = 0 ] && [ "$2" != "?" ] && [ "$2" -gt 0 ]; }
not_running() { [ "$(prop steerd ActiveState)" != active ] && [ "$(prop steerd ActiveState)" != deactivating ]; }

# The site a user puts in /srv/www, with a symlink inside the root and a large file.
mkdir -p /srv/www
echo 'hello from steerd' >/srv/www/index.html
echo 'the real file' >/srv/www/real.txt
ln -s real.txt /srv/www/link.txt
head -c 52428800 /dev/zero >/srv/www/big.bin

# -- the service, installed as deploy/steerd.service's comment says
sh -ex ./install-service.sh >/test/install-service.log 2>&1
say "info install-service-exit $?"

# 1. The unit file verifies clean.
v=$(systemd-analyze verify /etc/systemd/system/steerd.service 2>&1)
ok_if verify_clean "${v:-no output}" [ -z "$v" ]

# 2. Type=notify reached active, the status text, GET / and /health.
st=$(prop steerd StatusText)
ok_if notify_active "ActiveState=$(prop steerd ActiveState)" [ "$(prop steerd ActiveState)" = active ]
ok_if status_text "StatusText=$st" starts "$st" serving
c=$(status_of http://127.0.0.1/); ok_if get_root_200 "GET / $c" [ "$c" = 200 ]
c=$(status_of http://127.0.0.1:9090/health); ok_if health_200 "GET :9090/health $c" [ "$c" = 200 ]

# 6. A symlink inside the root is followed under the shipped hardening, and no worker
# fell back to the walk that refuses symlinks.
body=$(curl -s -m 10 -w ' %{http_code}' http://127.0.0.1/link.txt | tr -d '\n')
ok_if symlink_followed "GET /link.txt: $body" [ "$body" = "the real file 200" ]
w=$(journalctl -q -u steerd | grep -c openat2)
ok_if no_openat2_warning "$w journal lines name openat2" [ "$w" = 0 ]

# 8. The hardening's score (lower is better), for the unit as shipped.
score=$(systemd-analyze security --offline=true steerd.service 2>/dev/null |
    sed -n 's/.*Overall exposure level for steerd.service: \([0-9.]*\).*/\1/p')
say "info security-score ${score:-?}"
ok_if security_scored "exposure ${score:-?}" [ -n "$score" ]

# 3. `systemctl reload` during keep-alive load.
load_start reload http://127.0.0.1/
sleep 1.5
systemctl reload steerd
wait "$LOAD"
set -- $(load_errors reload)
ok_if reload_no_failed_requests "$1 failed of $2" zero_errors "$1" "$2"
ok_if reload_still_active "ActiveState=$(prop steerd ActiveState)" [ "$(prop steerd ActiveState)" = active ]

# 4. A binary upgrade by USR2 under load, after replacing the binary by a copy of itself.
pid0=$(prop steerd MainPID)
cp /usr/local/bin/steerd /usr/local/bin/steerd.new && mv -f /usr/local/bin/steerd.new /usr/local/bin/steerd
load_start upgrade http://127.0.0.1/
sleep 1.5
systemctl kill -s USR2 --kill-whom=main steerd
wait "$LOAD"
set -- $(load_errors upgrade)
ok_if upgrade_no_failed_requests "$1 failed of $2" zero_errors "$1" "$2"
sleep 2
pid1=$(prop steerd MainPID)
ok_if upgrade_mainpid_kept "MainPID $pid0 -> $pid1" [ "$pid0" = "$pid1" ]
ok_if upgrade_still_active "ActiveState=$(prop steerd ActiveState)" [ "$(prop steerd ActiveState)" = active ]
c=$(status_of http://127.0.0.1/); ok_if upgrade_serves "GET / $c" [ "$c" = 200 ]

# 5. `systemctl stop` after that upgrade, with a 50 MB download in flight (about 3 s).
curl -s -m 60 --limit-rate 16M -o /tmp/big.out -w '%{http_code} %{size_download}' \
    http://127.0.0.1/big.bin >/tmp/big.status 2>&1 &
dl=$!
sleep 1
s0=$(cut -d' ' -f1 /proc/uptime)
timeout 60 systemctl stop steerd
s1=$(cut -d' ' -f1 /proc/uptime)
wait "$dl"
got=$(cat /tmp/big.status)
ok_if stop_download_whole "download: $got (of 52428800), stop took $(echo "$s0 $s1" | awk '{printf "%.2f s", $2 - $1}')" \
    [ "$got" = "200 52428800" ]
state="$(prop steerd ActiveState) $(prop steerd Result)"
ok_if stop_inactive "ActiveState Result: $state" [ "$state" = "inactive success" ]
journalctl -q -u steerd | grep -q 'which is not our child' && say "info not-our-child yes"

# -- 7. socket activation, installed as deploy/steerd.socket's comment says, on a machine
# where the service never ran (no /var/log/steerd yet)
rm -rf /var/log/steerd
sh -ex ./install-socket.sh >/test/install-socket.log 2>&1
say "info install-socket-exit $?"
wait_for 20 [ "$(prop steerd ActiveState)" = active ]
ok_if socket_service_active "steerd.socket $(prop steerd.socket ActiveState), steerd $(prop steerd ActiveState), restarts $(prop steerd NRestarts)" \
    [ "$(prop steerd ActiveState) $(prop steerd.socket ActiveState) $(prop steerd NRestarts)" = "active active 0" ]
c=$(status_of http://127.0.0.1/); ok_if socket_get_root_200 "GET / $c" [ "$c" = 200 ]
has_log_line() { [ -s /var/log/steerd/access.log ]; }
wait_for 5 has_log_line
ok_if socket_access_logged "$(wc -l </var/log/steerd/access.log 2>&1) lines; $(stat -c '%U:%G %a' /var/log/steerd 2>&1)" has_log_line
main=$(prop steerd MainPID)
users=$(ps -o user= --ppid "$main" | sort -u | tr '\n' ' ')
ok_if socket_workers_user_steerd "master $(ps -o user= -p "$main") pid $main, workers: $users" [ "$users" = "steerd " ]
score=$(systemd-analyze security --offline=true steerd.service 2>/dev/null |
    sed -n 's/.*Overall exposure level for steerd.service: \([0-9.]*\).*/\1/p')
say "info security-score-socket ${score:-?}"

journalctl -q -o short-monotonic -u steerd -u steerd.socket >/test/journal.txt 2>&1
say "info checks-seconds $(echo "$t0 $(cut -d' ' -f1 /proc/uptime)" | awk '{printf "%.1f", $2 - $1}')"
say "done"
