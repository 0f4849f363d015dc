//go:build !invariants

package replica

// invariants is off in normal builds; build with -tags invariants to check every state change.
const invariants = false
