// Package nodeclient is plinthd's client of the Kubernetes API: typed requests for the
// few resources a node agent reads and writes — its Node (get, create, update, status
// update and patch), its Lease (get, create, update), the pods bound to it (get, list
// and watch by the field selector spec.nodeName; create and delete for mirror pods),
// pod eviction (the pods/eviction subresource), Events (create), Services and
// EndpointSlices (list and watch), and the Secrets and ConfigMaps its pods use (get;
// PullSecrets reads a pod's imagePullSecrets) —
// and the cache.ListerWatchers the pod runtime and the Service proxy build informers on.
//
// It exists to keep plinthd small: client-go's clientset (k8s.io/client-go/kubernetes)
// and its scheme register every API group the Kubernetes project serves at program
// start, and their code and type data stay mapped and resident for the daemon's
// lifetime. A Client knows only the groups plinthd uses (core/v1, coordination/v1,
// policy/v1 for Eviction bodies, discovery/v1), in a runtime.Scheme of its own, and
// reaches them through client-go's rest package, so rest.Config, TLS, client
// certificates reloaded from disk after renewal (controlclient.CertRenewer), rate
// limits and watch decoding behave exactly as with the clientset. client-go's gentype
// generic clients are not used: they link client-go/testing and with it the
// managed-fields, OpenAPI and structured-merge-diff packages. Requests and responses
// are in Kubernetes' protobuf encoding, as kubelet's (patches are JSON by nature, and a
// server answering in JSON is understood too).
//
// Interface and its per-resource interfaces have the method signatures of client-go's
// typed clients, so nodeclienttest can hand a fake clientset (with its reactors and
// recorded actions) to code that takes an Interface. Nothing in plinthd's import graph
// may import the clientset; cmd/plinthd's tests check it.
//
// It owns no goroutines and no state beyond the HTTP client it builds from the
// rest.Config; it touches nothing but the API server named there.
package nodeclient
