// Package leasegc keeps the identity Leases of plinth-control replicas: every replica
// publishes one, and the leader deletes those of replicas that are gone, as
// kube-apiserver does for its own identity Leases.
//
// Publisher (runs in every replica, leader or not) keeps the Lease
// kube-system/plinth-control-<hash of the hostname> (IdentityLeaseName: the first 80
// bits of the SHA-256 of the hostname, lowercase unpadded base32, 16 characters) with
// the label k8s.io/component=plinth-control, kubernetes.io/hostname, holderIdentity the
// replica's identity and leaseDurationSeconds 3600, renewing it every 10 s; a replica
// that starts again on the same host takes its Lease over. It stops renewing when its
// context ends and never deletes its Lease: the collector does that an hour after it
// expires.
//
// Collector (runs in the leader) deletes identity Leases — label
// k8s.io/component=plinth-control in kube-system, nothing else — whose renewTime plus
// leaseDurationSeconds lies more than ExpiredFor (an hour) in the past, i.e. replicas
// that stopped renewing two hours ago with the default duration. A Lease without
// renewTime counts from its creation and one without a duration as expired at its last
// renewal. It keeps a deadline per Lease from the informer cache and wakes at the
// earliest, so a Lease goes when its time comes rather than at the next sweep; every
// delete carries the Lease's UID and resourceVersion as preconditions, so a Lease
// renewed since the cache saw it is kept.
//
// Node Leases (kube-node-lease) are not this package's: they carry an owner reference
// to their Node and go with it through the garbage collector (control/controllers/gc).
//
// Publisher writes only its own Lease; Collector reads identity Leases through the
// informer it is given and deletes them. Time comes from the injected clock.
package leasegc
