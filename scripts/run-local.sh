#!/usr/bin/env bash
# Runs a one-node Plinth cluster in the foreground: plinth-control with an embedded etcd,
# and plinthd registered against it. Ctrl-C stops both.
#
# plinthd runs the pods bound to the node (runc, a bridge plinth0 on the pod CIDR from
# --cluster-cidr 10.244.0.0/16). There may be no registry to pull from: import image
# archives (docker save, OCI layout) into the node's store first, with PLINTH_IMAGES or
# later with bin/plinthctl image import --root $PLINTH_RUN_DIR/node/state/images FILE,
# and use imagePullPolicy IfNotPresent or Never.
#
# Environment: PLINTH_RUN_DIR (default ./.run) holds the control data directory, the
# node's state and logs; PLINTH_PORT (default 6443) is the API port; PLINTH_IMAGES is a
# space-separated list of image archives imported before plinthd starts.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]]; then
	echo "run-local: plinthd is a privileged node daemon; run as root" >&2
	exit 1
fi
bin=$PWD/bin
run=${PLINTH_RUN_DIR:-$PWD/.run}
port=${PLINTH_PORT:-6443}
mkdir -p "$run"
node=$(hostname | tr '[:upper:]' '[:lower:]')
kubeconfig=$run/control/admin.kubeconfig

pids=()
cleanup() {
	trap - INT TERM EXIT
	echo
	echo "run-local: stopping plinthd and plinth-control"
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	echo "run-local: stopped; logs are in $run"
}
trap cleanup EXIT
trap 'cleanup; exit 0' INT TERM

"$bin/plinth-control" --data-dir "$run/control" --secure-port "$port" --cluster-cidr 10.244.0.0/16 >"$run/plinth-control.log" 2>&1 &
pids+=($!)
echo "run-local: plinth-control starting (log: $run/plinth-control.log)"
for _ in $(seq 1 300); do
	if [[ -s $kubeconfig ]] && kubectl --kubeconfig "$kubeconfig" get --raw /readyz >/dev/null 2>&1; then
		break
	fi
	if ! kill -0 "${pids[0]}" 2>/dev/null; then
		echo "run-local: plinth-control exited:" >&2
		tail -n 20 "$run/plinth-control.log" >&2
		exit 1
	fi
	sleep 0.2
done

"$bin/plinth-control" issue-node-credentials --data-dir "$run/control" \
	--server "https://127.0.0.1:$port" --out "$run/node/kubeconfig" "$node" >/dev/null
images=$run/node/state/images
for archive in ${PLINTH_IMAGES:-}; do
	"$bin/plinthctl" image import --root "$images" "$archive"
done
"$bin/plinthd" --config "" --config-dir "" --kubeconfig "$run/node/kubeconfig" \
	--hostname-override "$node" --state-dir "$run/node/state" >"$run/plinthd.log" 2>&1 &
pids+=($!)

cat <<MSG
run-local: one-node cluster running
  admin kubeconfig: $kubeconfig
  try:   kubectl --kubeconfig $kubeconfig get nodes
         kubectl --kubeconfig $kubeconfig get leases -n kube-node-lease
  pods:  $bin/plinthctl image import --root $images IMAGE.tar   (docker save or OCI archive)
         kubectl --kubeconfig $kubeconfig run t --image=IMAGE --image-pull-policy=IfNotPresent -- sleep 3600
  logs:  $run/plinth-control.log  $run/plinthd.log
  stop:  Ctrl-C
MSG

# Stay in the foreground until Ctrl-C or until either process dies.
wait -n "${pids[@]}" || true
echo "run-local: a process exited unexpectedly; see the logs in $run" >&2
exit 1
