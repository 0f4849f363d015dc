package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// kafkaVersion is the Apache Kafka release whose protocol and behaviour sluice follows.
const kafkaVersion = "4.4"

// linkedCommit is the commit `make build` stamps in with -ldflags -X (used when Go's own VCS
// stamping is off).
var linkedCommit string

// buildVersion describes this binary from the build information Go stamps into it: the
// module version (a tagged release, or "(devel)"), the commit and its time, and "+dirty"
// when the work tree had uncommitted changes.
func buildVersion() string {
	v, commit, when, dirty := "(devel)", "unknown", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
				if len(commit) > 12 {
					commit = commit[:12]
				}
			case "vcs.time":
				when = " " + s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		commit += "+dirty"
	}
	if commit == "unknown" && linkedCommit != "" {
		commit = linkedCommit
	}
	return fmt.Sprintf("sluice %s (commit %s%s, %s, Kafka %s protocol)", v, commit, when, runtime.Version(), kafkaVersion)
}
