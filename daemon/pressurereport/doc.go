// Package pressurereport is the /pressure view of plinthd's pressure manager: the live
// eviction signals with their thresholds, the feeds that inform them and the pressure
// conditions, as a JSON document served on the healthz address, fetched and printed
// by plinthctl pressure.
//
// It owns the document's shape and nothing else: it reads the manager's Snapshot and,
// in Fetch, plinthd's local endpoint.
package pressurereport
