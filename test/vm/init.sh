#!/bin/sh
# The guest's /init (busybox sh). Stage 1 runs on the initramfs and moves everything onto
# a tmpfs, because runc's pivot_root cannot leave the initramfs root. Stage 2 mounts what
# a systemd host would (pure cgroup v2), loads the kernel modules a Debian host autoloads
# or loads at boot, mounts the 9p shares, runs each test binary in its package's source
# directory, writes the output and exit status to the results share, and powers off.
# /etc/plinth-vm.conf (written by the harness) sets REPO, TEST_TIMEOUT, MODULES and
# PACKAGES ("binary:dir:-test.run pattern" triples).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { echo "plinth-vm: $*" >/dev/console; }

if [ ! -e /.stage2 ]; then
	mount -t proc proc /proc
	mkdir -p /newroot
	mount -t tmpfs -o mode=0755 root /newroot
	for entry in /*; do
		case $entry in /newroot | /proc | /sys | /dev) continue ;; esac
		cp -a "$entry" /newroot/
	done
	mkdir -p /newroot/proc /newroot/sys /newroot/dev
	touch /newroot/.stage2
	umount /proc
	exec switch_root /newroot /init
fi

. /etc/plinth-vm.conf

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t mqueue mqueue /dev/mqueue
mount -t tmpfs -o mode=1777 tmp /tmp
mount -t tmpfs -o mode=0755 run /run
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
# Every controller the kernel offers, enabled for the root's children as systemd does,
# and systemd's top-level cgroups with init in init.scope: probes look at the root's
# children (memory.swap.max exists only there), and on a real host processes never run
# in the root cgroup.
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
	echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control || say "cannot enable cgroup controller $c"
done
mkdir -p /sys/fs/cgroup/init.scope /sys/fs/cgroup/system.slice
echo $$ >/sys/fs/cgroup/init.scope/cgroup.procs

# The 9p transport, from the initramfs, in dependency order.
for m in /vm/initrd-modules/*.ko; do
	[ -e "$m" ] || continue
	insmod "$m" || say "insmod $m failed"
done
mount9p() { # tag dir options
	mkdir -p "$2"
	mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000,$3" "$1" "$2" || say "mount 9p $1 on $2 failed"
}
mount9p modules "/lib/modules/$(uname -r)" ro,cache=loose
mount9p bins /vm/bins ro,cache=loose
mount9p repo "$REPO" ro,cache=loose
mount9p results /vm/results rw

# What a Debian host loads at boot or autoloads before Plinth's probes look (the probes
# read /proc and netlink; they do not trigger autoloading themselves).
for m in $MODULES; do
	modprobe "$m" 2>/dev/null || say "module $m: not loadable on this kernel"
done
ip link set lo up
hostname plinth-vm

say "kernel $(uname -r), $(nproc) cpus, cgroup controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
uname -r >/vm/results/KERNEL
# After a kernel crash the harness boots again with plinth.from=N: skip the N packages
# that already ran.
from=0
for arg in $(cat /proc/cmdline); do
	case $arg in plinth.from=*) from=${arg#plinth.from=} ;; esac
done
index=0
for entry in $PACKAGES; do
	index=$((index + 1))
	[ "$index" -gt "$from" ] || continue
	bin=${entry%%:*}
	rest=${entry#*:}
	dir=${rest%%:*}
	tests=${rest#*:}
	say "running $bin"
	start=$(date +%s)
	(cd "$REPO/$dir" && HOME=/root TMPDIR=/tmp /vm/bins/"$bin" -test.v=test2json -test.timeout="$TEST_TIMEOUT" -test.run="$tests") \
		>/vm/results/"$bin".out 2>&1 </dev/null
	rc=$?
	echo "$rc $(($(date +%s) - start))" >/vm/results/"$bin".rc
	say "$bin exit $rc after $(($(date +%s) - start)) s"
done
dmesg >/vm/results/dmesg.txt
echo done >/vm/results/DONE
sync
umount /vm/results
poweroff -f
