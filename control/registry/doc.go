// Package registry describes each kind the control service serves — its names, scope,
// defaults, validation, selectable fields, the Table columns kubectl prints, and its
// hooks (claims, graceful deletion, lifetimes, POST-only subresources) — as
// apiserver.Resource values. The generic REST layer in control/apiserver does the rest.
//
// Served: core/v1 namespaces, nodes, pods (+status, +eviction, +binding), services
// (+status), events, secrets, configmaps; coordination.k8s.io/v1 leases;
// discovery.k8s.io/v1 endpointslices. policy/v1 Eviction is only the body of
// pods/eviction. Secrets are stored as the API returns them: no encryption at rest.
//
// It owns the cluster IP and node port claims services make (through control/ipalloc,
// as etcd keys in the API's store) and touches nothing else; EnsureDefaultNamespaces
// writes through the API client it is given.
package registry
