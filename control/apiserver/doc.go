// Package apiserver serves a strict subset of the Kubernetes API over storage: discovery,
// and for every registered Resource get, list, watch, create, update, patch (JSON merge,
// strategic merge, JSON patch) and delete, with the status subresource, label and field
// selectors, pagination, Table output, server-side dry run and field validation. It is
// generic: a resource plugs in by describing itself (see Resource); there is no code per
// resource here.
//
// Request bodies are JSON or Kubernetes' protobuf (application/vnd.kubernetes.protobuf).
// Responses are JSON unless the Accept header negotiates protobuf (q values, then the
// more specific media range, then the order listed, as client-go and kubectl expect) for
// a kind client-go's scheme knows: objects, typed lists (XxxList, written item by item)
// and watch streams (application/vnd.kubernetes.protobuf;stream=watch: length-prefixed
// metav1.WatchEvent frames whose object is in the protobuf envelope, bookmarks and error
// Statuses included). client-go's typed clients ask for protobuf by default. Objects,
// lists and watch events are also served as their metadata alone, in protobuf (for any
// kind) or JSON, when the Accept header asks for as=PartialObjectMetadata (gets, writes,
// each event of a watch) or as=PartialObjectMetadataList (lists) with
// g=meta.k8s.io;v=v1, as client-go's metadata client does; a header naming only
// conversions that are not served gets 406 NotAcceptable, never a full object. Tables,
// discovery, OpenAPI, /version and error Statuses are always JSON; client-go decodes a
// response by its Content-Type. JSON watch events and lists are written around each
// object's JSON as it is encoded, not marshalled a second time inside a
// metav1.WatchEvent or a list of json.RawMessage.
//
// Decoded objects are cached, each valid for exactly one etcd revision (objcache.go).
// While TrackLatest runs, the server also knows every key's latest revision from one
// etcd watch, so a single-object read at resourceVersion=0 ("any version", what kubelet
// and plinthd send for their Node every 10 s) is a copy from memory rather than a quorum
// read through etcd's raft loop (latest.go).
//
// It owns the HTTP handler and the TLS listener it is asked to run, and touches etcd only
// through control/storage.
package apiserver
