#!/bin/sh
# plinth-node: after the files are gone. dpkg calls it with "remove", "purge",
# "upgrade", ...; rpm with 0 on erase and 1 or more on upgrade.
set -e

case "$1" in
purge)
	# The node's state: its identity (pki/), checkpoints, images, pods' files; the
	# machine-lifetime runtime state; pod logs; and what operators added to /etc/plinth
	# (the kubeconfig, drop-ins). dpkg removes the conffiles itself.
	rm -rf /var/lib/plinth /run/plinth /var/log/pods /etc/plinth
	;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
