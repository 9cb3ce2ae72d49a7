#!/bin/sh
# plinth-node: before the files go. dpkg calls it with "remove" (on remove and on purge)
# or "upgrade", rpm with 0 on erase and 1 or more on upgrade.
#
# Removing the node agent removes what it ran: its pods and the kernel state it owns.
# Nothing would keep the pods' network or the Service rules right without it, and this
# is the last moment plinthd (which knows its tables) is still installed: dpkg deletes
# the binary before postrm purge runs. Configuration and /var/lib/plinth stay until
# purge (deb); rpm erase keeps /var/lib/plinth.
set -e

case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac

if [ -d /run/systemd/system ]; then
	systemctl disable --now plinthd.service || true
fi

# The pods' containers (runc's state is under pods.runtimeDir, /run/plinth): with
# plinthd stopped, delete --force kills and removes each one; its shim then exits.
runc_root=/run/plinth/runc
if [ -d "$runc_root" ] && command -v runc >/dev/null 2>&1; then
	for id in $(runc --root "$runc_root" list -q 2>/dev/null); do
		runc --root "$runc_root" delete --force "$id" || echo "plinth-node: could not delete container $id" >&2
	done
fi
# What is still mounted under plinthd's directories: the pods' network namespaces
# (/run/plinth/netns), their IPC and UTS namespaces and /dev/shm (/run/plinth/pods),
# deepest first.
awk '{print $5}' /proc/self/mountinfo | grep -E '^/(run|var/lib)/plinth(/|$)' | sort -r |
	while read -r mnt; do
		umount "$mnt" 2>/dev/null || umount -l "$mnt" || true
	done
# The pod bridge and its masquerade table, the empty pod cgroups under
# pods.cgroupParent, the Service proxy's nftables tables. With the node's configuration,
# and with the defaults when that configuration does not load.
if ! /usr/bin/plinthd --cleanup; then
	echo "plinth-node: plinthd --cleanup failed; trying again with the default configuration" >&2
	/usr/bin/plinthd --cleanup --config "" --config-dir "" ||
		echo "plinth-node: plinthd --cleanup failed; remove the plinth nftables tables, the plinth0 bridge and the /plinth cgroups by hand" >&2
fi
exit 0
