#!/bin/sh
# plinth-control: after the files are gone. On purge (deb) the data directory goes too:
# the cluster's PKI and its embedded etcd. The plinth user stays, as Debian asks of
# system users (files it owned elsewhere would otherwise change hands).
set -e
case "$1" in
purge) rm -rf /var/lib/plinth-control /etc/plinth-control ;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
