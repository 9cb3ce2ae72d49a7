#!/bin/sh
# plinth-node: after the files are in place. dpkg calls it with "configure OLD-VERSION"
# (OLD-VERSION empty on a first install), rpm with 1 on install and 2 or more on upgrade.
set -e

[ -d /run/systemd/system ] || exit 0 # no systemd running (a chroot, an image build)

systemctl daemon-reload
case "$1" in
configure) if [ -z "$2" ]; then action=install; else action=upgrade; fi ;;
1) action=install ;;
*) action=upgrade ;;
esac
if [ "$action" = install ]; then
	# Started without waiting for READY: that needs a reachable control service.
	systemctl enable plinthd.service
	systemctl start --no-block plinthd.service
else
	# Only when it was running. KillMode=process: the pods keep running and the new
	# plinthd adopts them.
	systemctl try-restart --no-block plinthd.service
fi
