#!/usr/bin/env bash
# The real stack conveyor's tests and local runs use: RabbitMQ, Redis, MariaDB and
# PostgreSQL from Debian's packages, on loopback only, started without systemd.
#
#   scripts/services.sh up [--browser]   install what is missing, configure, start, wait
#   scripts/services.sh status           each service's state and port
#   scripts/services.sh down             stop the four daemons (data stays)
#
# Idempotent: on a machine where everything already runs, `up` checks and returns in a
# second or two. Needs root (apt-get, daemons running as their own users). `--browser` also
# installs Debian's chromium + chromium-driver for browser tests.
#
# Every wait is bounded. A RabbitMQ node that does not boot within 90 s is treated as
# stale state from a killed run: every RabbitMQ process on the machine is stopped, its
# node database moved aside (/var/lib/rabbitmq/mnesia.stale-<time>, safe to delete) and
# it is started once more. Nothing in it matters to the tests, which declare their own.
#
# What the tests expect (tests/api/helpers.rs):
#   RabbitMQ   127.0.0.1:5672  guest/guest (rabbitmqctl on PATH: some tests list queues)
#   Redis      127.0.0.1:6379  no persistence
#   MariaDB    127.0.0.1:3306  root without password, database `test`
#   PostgreSQL 127.0.0.1:5432  user postgres, trust auth on loopback, database `test`
set -euo pipefail

T0=$(date +%s)
say() { printf 'services: %s\n' "$*"; }
die() { printf 'services: error: %s\n' "$*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - T0 ))s"; }

port_open() { # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# Runs a probe for at most 10 s: a client that waits on a server that never answers
# (rabbitmqctl's await_startup waits 300 s by default) must not hold the loop.
probe() { timeout -k 2 10 "$@" >/dev/null 2>&1; }

try_for() { # seconds, command... : 0 as soon as the probe answers, 1 after the deadline
  local secs=$1; shift
  local deadline=$(($(date +%s) + secs))
  while (($(date +%s) < deadline)); do
    if probe "$@"; then return 0; fi
    sleep 0.5
  done
  return 1
}

wait_for() { # name, seconds, command...
  local name=$1 secs=$2; shift 2
  if try_for "$secs" "$@"; then say "$name is up ($(elapsed))"; return 0; fi
  die "$name did not answer within ${secs}s; see its log (${LOGS[$name]:-no log})"
}

declare -A LOGS=(
  [RabbitMQ]=/var/log/rabbitmq/
  [Redis]=/var/log/redis/conveyor.log
  [MariaDB]=/var/log/mysql/conveyor.err
  [PostgreSQL]=/var/log/postgresql/
)

# --- install ----------------------------------------------------------------------------

# curl: the payments CLI test runs the command `conveyor payments sign` prints; curl + jq:
# tools/opensearch-node/check-semantics.sh; ffmpeg: the video-analysis pipeline's
# extraction stage (and the tests that make their media with it).
PACKAGES=(rabbitmq-server redis-server mariadb-server mariadb-client postgresql postgresql-client curl jq ffmpeg)

missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
  done
}

install_missing() {
  local want=("${PACKAGES[@]}")
  [[ ${WITH_BROWSER:-0} == 1 ]] && want+=(chromium chromium-driver)
  local missing
  mapfile -t missing < <(missing_packages "${want[@]}")
  if ((${#missing[@]} == 0)); then
    say "packages already installed"
    return
  fi
  [[ $(id -u) == 0 ]] || die "installing ${missing[*]} needs root"
  say "installing ${missing[*]}"
  # Package scripts must not start daemons: there is no init system, and each service is
  # configured before it is started below. policy-rc.d exit 101 = "action forbidden".
  local policy=/usr/sbin/policy-rc.d restore=""
  if [[ -e $policy ]]; then restore=$(mktemp); cp -p "$policy" "$restore"; fi
  # Put back what was there even if the install is interrupted (CI's outer timeout).
  trap 'if [[ -n $restore ]]; then mv "$restore" "$policy"; else rm -f "$policy"; fi' EXIT
  trap 'exit 143' TERM INT
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  local rc=0
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
  } >/tmp/conveyor-services-apt.log 2>&1 || rc=$?
  if [[ -n $restore ]]; then mv "$restore" "$policy"; else rm -f "$policy"; fi
  trap - EXIT TERM INT
  ((rc == 0)) || { tail -20 /tmp/conveyor-services-apt.log >&2; die "apt-get failed (log: /tmp/conveyor-services-apt.log)"; }
  say "installed ($(elapsed))"
}

# --- configure + start, one function per service ----------------------------------------

rabbitmq_up() {
  if probe rabbitmqctl -q status; then say "RabbitMQ already running"; return; fi
  # Loopback only: AMQP listener, Erlang distribution and epmd.
  mkdir -p /etc/rabbitmq
  cat >/etc/rabbitmq/rabbitmq-env.conf <<'EOF'
# written by conveyor scripts/services.sh: loopback only
NODE_IP_ADDRESS=127.0.0.1
NODENAME=rabbit@localhost
export ERL_EPMD_ADDRESS=127.0.0.1
SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
EOF
  cat >/etc/rabbitmq/rabbitmq.conf <<'EOF'
# written by conveyor scripts/services.sh
listeners.tcp.default = 127.0.0.1:5672
loopback_users.guest = true
EOF
  say "starting RabbitMQ"
  rabbitmq_start
  if try_for 90 rabbitmqctl -q await_startup --timeout 8; then
    say "RabbitMQ is up ($(elapsed))"
    return
  fi
  # A node that does not boot is usually stale state from a killed run: a beam or epmd
  # left behind, or a node database (mnesia) that was being written when the machine
  # stopped. Nothing in it matters to the tests (every run declares its own queues):
  # stop everything of RabbitMQ's, move the node database aside, start once more.
  say "RabbitMQ did not start within 90s; its log says:"
  rabbitmq_log_tail
  say "stopping stale RabbitMQ processes and starting on a fresh node database"
  pkill -9 -f 'beam.*rabbit' 2>/dev/null || true
  pkill -9 -x epmd 2>/dev/null || true
  sleep 1
  local mnesia=/var/lib/rabbitmq/mnesia
  [[ -d $mnesia ]] && mv "$mnesia" "$mnesia.stale-$(date +%s)"
  rabbitmq_start
  if try_for 120 rabbitmqctl -q await_startup --timeout 8; then
    say "RabbitMQ is up ($(elapsed))"
    return
  fi
  rabbitmq_log_tail
  die "RabbitMQ did not answer within 120s after a clean restart; see ${LOGS[RabbitMQ]}"
}

rabbitmq_start() {
  # epmd binds where it is first started and the server's wrapper drops the environment:
  # start it on loopback first, the node then registers with it.
  pgrep -x epmd >/dev/null || epmd -address 127.0.0.1 -daemon
  # The server script drops to the rabbitmq user itself when started as root; -detached
  # returns at once, bounded anyway.
  timeout -k 2 30 rabbitmq-server -detached >/dev/null 2>&1 || true
}

rabbitmq_log_tail() {
  local f
  for f in /var/log/rabbitmq/*.log; do
    [[ -s $f ]] || continue
    printf -- '--- %s (last 30 lines)\n' "$f" >&2
    tail -30 "$f" >&2
  done
}

redis_up() {
  if probe redis-cli -h 127.0.0.1 -p 6379 ping; then say "Redis already running"; return; fi
  say "starting Redis"
  mkdir -p /var/log/redis /var/lib/redis
  chown redis:redis /var/log/redis /var/lib/redis 2>/dev/null || true
  # No persistence: tests namespace their keys and nothing here must survive a restart.
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/conveyor.log --protected-mode yes
  wait_for Redis 30 redis-cli -h 127.0.0.1 -p 6379 ping
}

mariadb_tcp_ok() {
  probe mariadb -h 127.0.0.1 -P 3306 -u root -e 'SELECT 1'
}

mariadb_up() {
  if mariadb_tcp_ok; then
    say "MariaDB already running"
  else
    mkdir -p /run/mysqld /var/log/mysql
    chown mysql:mysql /run/mysqld /var/log/mysql
    if [[ ! -d /var/lib/mysql/mysql ]]; then
      say "initialising MariaDB data directory"
      mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/tmp/conveyor-mariadb-init.log 2>&1 ||
        die "mariadb-install-db failed (log: /tmp/conveyor-mariadb-init.log)"
    fi
    if ! probe mariadb-admin --protocol=socket -u root ping; then
      say "starting MariaDB"
      start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- \
        --user=mysql --bind-address=127.0.0.1 --port=3306 --log-error=/var/log/mysql/conveyor.err
    fi
    wait_for MariaDB 60 mariadb-admin --protocol=socket -u root ping
    # Debian's root authenticates by unix socket only; the tests log in over TCP as root
    # without a password, and sqlx does not follow MariaDB's auth-plugin chains: one
    # plain mysql_native_password with the empty password (which the socket login also
    # passes).
    say "letting root in over TCP without a password"
    timeout -k 2 30 mariadb --protocol=socket -u root <<'SQL'
ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('');
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD('');
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
    wait_for "MariaDB over TCP" 10 mariadb -h 127.0.0.1 -P 3306 -u root -e 'SELECT 1'
  fi
  timeout -k 2 30 mariadb -h 127.0.0.1 -P 3306 -u root -e 'CREATE DATABASE IF NOT EXISTS test'
}

pg_version() { ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -1; }

postgres_up() {
  local v; v=$(pg_version)
  [[ -n $v ]] || die "PostgreSQL is not installed"
  if ! [[ -d /etc/postgresql/$v/main ]]; then
    say "creating PostgreSQL cluster $v/main"
    pg_createcluster "$v" main >/dev/null
  fi
  local conf=/etc/postgresql/$v/main
  # Trust on loopback, once (a marker line keeps the edit idempotent).
  if ! grep -q '^# conveyor: trust loopback' "$conf/pg_hba.conf"; then
    local tmp; tmp=$(mktemp)
    {
      echo '# conveyor: trust loopback (scripts/services.sh)'
      echo 'host    all             all             127.0.0.1/32            trust'
      echo 'host    all             all             ::1/128                 trust'
      cat "$conf/pg_hba.conf"
    } >"$tmp"
    cat "$tmp" >"$conf/pg_hba.conf"; rm -f "$tmp"
    timeout -k 2 30 pg_ctlcluster --skip-systemctl-redirect "$v" main reload >/dev/null 2>&1 || true
  fi
  if ! grep -q "^listen_addresses = 'localhost'" "$conf/postgresql.conf"; then
    echo "listen_addresses = 'localhost'   # conveyor: loopback only" >>"$conf/postgresql.conf"
  fi
  # Per-statement counts for the benches (`pg_stat_statements`: statements per task) and
  # checkpoints in the log (a checkpoint during a bench is one cause of a slow run). The
  # library loads at start only: a server already running without it is restarted once.
  local restart=
  if ! grep -q "^shared_preload_libraries = 'pg_stat_statements'" "$conf/postgresql.conf"; then
    {
      echo "shared_preload_libraries = 'pg_stat_statements'   # conveyor: bench statement counts"
      echo "log_checkpoints = on   # conveyor"
      echo "track_io_timing = on   # conveyor"
    } >>"$conf/postgresql.conf"
    restart=1
  fi
  if pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1 && [[ -n $restart ]]; then
    say "restarting PostgreSQL $v to load pg_stat_statements"
    timeout -k 2 60 pg_ctlcluster --skip-systemctl-redirect "$v" main restart >/dev/null 2>&1 || true
    wait_for PostgreSQL 60 pg_isready -h 127.0.0.1 -p 5432
  elif pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1; then
    say "PostgreSQL already running"
  else
    say "starting PostgreSQL $v"
    timeout -k 2 60 pg_ctlcluster --skip-systemctl-redirect "$v" main start >/dev/null 2>&1 || true
    wait_for PostgreSQL 60 pg_isready -h 127.0.0.1 -p 5432
  fi
  timeout -k 2 30 psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='test'" | grep -q 1 ||
    timeout -k 2 30 psql -h 127.0.0.1 -U postgres -qc 'CREATE DATABASE test'
}

# --- status / down ----------------------------------------------------------------------

status_line() { # name port probe...
  local name=$1 port=$2; shift 2
  if probe "$@"; then
    printf '%-11s up    127.0.0.1:%s\n' "$name" "$port"
  elif port_open 127.0.0.1 "$port"; then
    printf '%-11s port open, not answering  127.0.0.1:%s\n' "$name" "$port"; return 1
  else
    printf '%-11s down  127.0.0.1:%s\n' "$name" "$port"; return 1
  fi
}

status() {
  local rc=0
  status_line RabbitMQ 5672 rabbitmqctl -q status || rc=1
  status_line Redis 6379 redis-cli -h 127.0.0.1 -p 6379 ping || rc=1
  status_line MariaDB 3306 mariadb -h 127.0.0.1 -P 3306 -u root -e 'SELECT 1' || rc=1
  status_line PostgreSQL 5432 pg_isready -h 127.0.0.1 -p 5432 || rc=1
  return $rc
}

down() {
  timeout -k 2 60 rabbitmqctl -q stop >/dev/null 2>&1 && say "RabbitMQ stopped" || true
  probe redis-cli -h 127.0.0.1 -p 6379 shutdown nosave && say "Redis stopped" || true
  timeout -k 2 60 mariadb-admin --protocol=socket -u root shutdown >/dev/null 2>&1 && say "MariaDB stopped" || true
  local v; v=$(pg_version)
  if [[ -n $v ]]; then
    timeout -k 2 60 pg_ctlcluster --skip-systemctl-redirect "$v" main stop >/dev/null 2>&1 && say "PostgreSQL stopped" || true
  fi
}

cmd=${1:-status}
shift || true
WITH_BROWSER=0
for arg in "$@"; do
  case $arg in
    --browser) WITH_BROWSER=1 ;;
    *) die "unknown option $arg" ;;
  esac
done

case $cmd in
  up)
    install_missing
    # Start the slow one (RabbitMQ boots an Erlang VM) last so the others do not wait.
    redis_up
    postgres_up
    mariadb_up
    rabbitmq_up
    say "all four services up in $(elapsed)"
    ;;
  status) status ;;
  down) down ;;
  *) die "usage: $0 up [--browser] | status | down" ;;
esac
