// Package authapi holds the wire formats of the control service's Plinth-specific
// endpoints (bootstrap tokens and node certificate requests under /apis/plinth.dev/v1)
// and the textual formats users type: bootstrap tokens (ID.SECRET), the Authorization
// header that carries them, and CA certificate hashes (sha256:<hex of the CA's
// SubjectPublicKeyInfo>, as kubeadm prints them).
//
// Both sides use it: control/auth serves these endpoints, controlclient (join and
// certificate renewal on the node) and plinth-control's token subcommands call them. It
// depends on the standard library only, so the node binaries stay small.
//
// It owns no state and touches nothing.
package authapi
