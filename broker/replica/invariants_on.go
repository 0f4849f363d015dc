//go:build invariants

package replica

// invariants compiles the replica's self-checks in (go test -tags invariants): every published
// snapshot and role change is checked, and a violation panics.
const invariants = true
