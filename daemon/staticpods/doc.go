// Package staticpods owns static pods: pods declared in files in a directory of the
// node (staticPodPath, by default /etc/plinth/manifests) that plinthd runs without the
// control service, and their mirror pods, the API's read-only view of them.
//
// Source reads every regular file of the directory (one Pod each, YAML or JSON,
// decoded strictly; dotfiles and editor backups skipped), defaults each pod as kubelet
// does for file pods (name suffixed with the node name, UID and config hash derived
// from the pod and its file, bound to this node, tolerating every NoExecute taint,
// critical priority for the system classes) and hands the full desired set to its
// consumer whenever it changes. It watches the directory with inotify and also
// re-reads it every fileCheckFrequency, so a missed notification delays a change by
// at most one period. A bad manifest is logged, counted in a metric and reported in an
// Event on the Node; it never stops the source or the other manifests.
//
// MirrorPods keeps one mirror pod in the API per static pod: created when missing,
// deleted and recreated when its config hash differs from the static pod's (or it is
// being deleted), deleted when the static pod goes away. Mirror pods are never pods to
// run: IsMirrorPod tells the runtime which API pods to leave alone, since it runs the
// static pod from its file.
//
// Source touches the manifest directory (read only); MirrorPods touches mirror pods of
// this node in the API and nothing else. Each runs in the goroutine that calls its Run
// and stops when that context ends.
package staticpods
