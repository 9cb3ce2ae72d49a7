// Package auth decides who may use the control service and what they may do:
//
//   - authentication: client certificates re-checked for expiry on every request
//     (CertificateAuthenticator) and bootstrap tokens (TokenAuthenticator, backed by
//     TokenStore, which keeps tokens in etcd with only a hash of their secret);
//   - authorization (Authorizer): system:masters may do anything, nodes what kubelet's
//     node authorizer allows (Secrets and ConfigMaps only as far as pods bound to the
//     node use them: PodIndex, an informer cache of bound pods, then the live pods
//     when it finds none), bootstrappers only the join endpoint and discovery;
//   - admission (NodeRestriction): a node may write only its own Node and Lease, the
//     status of pods bound to it and events about itself, and may not set labels under
//     node-restriction.kubernetes.io/ nor change its taints;
//   - the Plinth endpoints under /apis/plinth.dev/v1 (Handler): bootstrap token
//     management for admins and node client certificate signing for bootstrappers and
//     for nodes renewing their own certificate.
//
// It touches etcd only through control/storage, under the /plinth/bootstraptokens/
// keys, and signs with the cluster CA of control/pki; it reads pods through the API
// (PodIndex's informer) and the API server's stored objects (ObjectsNodePods,
// ObjectsPodGetter). Its goroutines are the token garbage collector and the pod
// index's informer, each run and stopped by its caller (TokenStore.RunGarbageCollector,
// PodIndex.Run).
package auth
