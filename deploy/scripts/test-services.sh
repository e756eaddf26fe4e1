#!/bin/sh
# Installs the real servers the tests start on loopback (Redis, MariaDB,
# ClickHouse), Chromium (the console's browser tests), promtool (Debian's prometheus package) and docker-compose
# (for make deploy-check) when they are missing. Debian packages; run as root or with sudo. The
# tests start and stop their own server processes (core/internal/testsvc);
# the packages' system services are not used.
set -eu
need=""
command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
command -v redis-sentinel >/dev/null 2>&1 || need="$need redis-sentinel"
{ command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; } || need="$need mariadb-server"
{ command -v clickhouse-server >/dev/null 2>&1 || [ -x /usr/sbin/clickhouse-server ]; } || need="$need clickhouse-server"
# promtool (make deploy-check: the alert rules and their unit tests).
command -v promtool >/dev/null 2>&1 || need="$need prometheus"
# Chromium (core/console's browser tests, driven headless by chromedp).
{ command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; } || need="$need chromium"
# docker-compose (make deploy-check: `docker-compose config` on deploy/compose).
command -v docker-compose >/dev/null 2>&1 || need="$need docker-compose"
[ -z "$need" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
echo "test-services: installing$need" >&2
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d keeps the packages from starting their system services.
[ -e /usr/sbin/policy-rc.d ] || $SUDO sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d' || true
$SUDO apt-get install -y -q $need >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q $need >/dev/null; }
