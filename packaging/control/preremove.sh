#!/bin/sh
# plinth-control: before the files go. dpkg: "remove" or "upgrade"; rpm: 0 on erase.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now plinth-control.service || true
	fi
	;;
esac
exit 0
