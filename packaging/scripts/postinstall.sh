#!/bin/sh
# After the package is unpacked (install or upgrade): the promcp user, the
# device groups the unit names, the state directory; restart on upgrade.
set -e
getent group promcp >/dev/null || groupadd --system promcp
getent passwd promcp >/dev/null || useradd --system --gid promcp --home-dir /var/lib/promcp \
  --no-create-home --shell /usr/sbin/nologin --comment "promcp-device" promcp
# SupplementaryGroups= fails the unit when a group is missing: a machine
# without I2C, GPIO or SPI gets the (empty) groups.
for g in dialout i2c gpio spi; do
  getent group "$g" >/dev/null || groupadd --system "$g"
done
install -d -o promcp -g promcp -m 0700 /var/lib/promcp
# The gateway's secrets (tokens, console accounts, TLS key), readable by
# its user alone: docs/operations.md and promcp-device.env name this path.
install -d -o promcp -g promcp -m 0700 /etc/promcp/secrets
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
  # An upgrade restarts a running service on the new binary; a first
  # install starts nothing: edit /etc/promcp, then systemctl enable --now.
  systemctl try-restart promcp-device.service || true
fi
exit 0
