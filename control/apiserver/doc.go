// Package apiserver serves a strict subset of the Kubernetes API over storage: discovery,
// and for every registered Resource get, list, watch, create, update, patch (JSON merge,
// strategic merge, JSON patch) and delete, with the status subresource, label and field
// selectors, pagination, Table output, server-side dry run and field validation. It is
// generic: a resource plugs in by describing itself (see Resource); there is no code per
// resource here.
//
// It owns the HTTP handler and the TLS listener it is asked to run, and touches etcd only
// through control/storage.
package apiserver
