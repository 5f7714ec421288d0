#!/bin/sh
# Before removal (not before an upgrade): stop and disable the service.
set -e
if [ "$1" = "remove" ] && [ -d /run/systemd/system ]; then
  systemctl disable --now promcp-device.service || true
fi
exit 0
