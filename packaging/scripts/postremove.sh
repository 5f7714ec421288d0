#!/bin/sh
# After removal: forget the unit. /var/lib/promcp (the audit log, the
# idempotency store, the actuation history) and the promcp user are kept,
# even on purge: remove them by hand when the records are no longer needed.
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
exit 0
