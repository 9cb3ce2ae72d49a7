// Package nodesim runs many simulated nodes in one process, for scale benchmarks and
// tests of the control service. Each simulated node is a real daemon/node Agent — the
// code plinthd registers, heartbeats and reports status with — over plinthd's own API
// client (controlclient/nodeclient) with its own credentials and connection, configured
// by node.ConfigureClient as plinthd's is; only the host facts are made up. So the control service sees what a
// fleet of plinthd instances would send: a Node create, a Lease renewed every quarter
// of the lease duration, a Node read every status period and a status update when
// something changed or the report period passed.
//
// Nodes start at random offsets within a spread, so heartbeats arrive evenly as a
// fleet's do, and can be stopped one by one (at once, or right after a heartbeat, so
// that the stop time is the last heartbeat's), to measure how fast the control service
// notices a dead node. Every request's latency is recorded by kind (Lease update, Node
// read, status update, ...) through a wrapping transport.
//
// It owns the goroutines of the nodes it starts, which Stop and Node.Stop end, and
// touches nothing but the API it is pointed at.
package nodesim
