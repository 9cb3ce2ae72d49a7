// Package desired is the contract between the two halves of plinthd's Service proxy:
// the side that watches Services, EndpointSlices and the Node and decides which
// endpoints each service port uses (daemon/proxy), and the side that turns that
// decision into nftables rules (daemon/proxy/nftrules, applied through kernel/nft).
//
// It holds plain values only: no clients, no kernel access, no goroutines. Everything
// here is already decided (traffic policies applied, terminating fallback taken,
// topology hints honoured), so rule generation never looks at Kubernetes objects.
package desired
