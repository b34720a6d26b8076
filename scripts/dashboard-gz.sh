#!/usr/bin/env bash
# Rebuilds src/dashboard/page.html.gz, the copy of the dashboard page the binary sends to
# clients that accept gzip (others get page.html as written, also built in), from
# src/dashboard/page.html. `-n` leaves out the name and time, so the same page
# always gives the same bytes; tests/operations/dashboard.rs fails when the two disagree.
set -euo pipefail
cd "$(dirname "$0")/.."
gzip -9 -n -c src/dashboard/page.html > src/dashboard/page.html.gz
echo "dashboard: page.html $(wc -c < src/dashboard/page.html) bytes, page.html.gz $(wc -c < src/dashboard/page.html.gz) bytes"
