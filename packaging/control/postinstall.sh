#!/bin/sh
# plinth-control: after the files are in place. dpkg calls it with "configure
# OLD-VERSION" (OLD-VERSION empty on a first install), rpm with 1 on install and 2 or
# more on upgrade.
set -e

# The system user plinth-control.service runs as.
if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers /usr/lib/sysusers.d/plinth-control.conf
elif ! getent passwd plinth >/dev/null; then
	useradd --system --user-group --home-dir /var/lib/plinth-control --no-create-home \
		--shell /usr/sbin/nologin --comment "Plinth control service" plinth
fi

[ -d /run/systemd/system ] || exit 0

systemctl daemon-reload
case "$1" in
configure) if [ -z "$2" ]; then action=install; else action=upgrade; fi ;;
1) action=install ;;
*) action=upgrade ;;
esac
if [ "$action" = install ]; then
	systemctl enable plinth-control.service
	systemctl start --no-block plinth-control.service
else
	systemctl try-restart --no-block plinth-control.service
fi
