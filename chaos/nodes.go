package chaos

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"sluice/internal/testcluster"
)

// runNodes is a run's cluster: nodes in network namespaces of their own (nw), each logging to
// its own file under the run's work directory.
type runNodes struct {
	nw    *Network
	c     *testcluster.Cluster // nil if the cluster did not start
	files []*os.File
	logs  []string // the node log paths, node 1 first
}

// startNodes starts n nodes of bin with settings, in a fresh network of namespaces, their data
// and logs under workDir. On an error after the log files exist it returns them too (so a
// result can name them); Close releases whatever was started.
func startNodes(workDir string, n int, bin string, settings []string, logf func(string, ...any)) (*runNodes, error) {
	nw, err := NewNetwork(n)
	if err != nil {
		return nil, fmt.Errorf("network namespaces (needs root and ip netns): %w", err)
	}
	rn := &runNodes{nw: nw}
	for i := range n {
		path := filepath.Join(workDir, fmt.Sprintf("node-%d.log", i+1))
		f, err := os.Create(path)
		if err != nil {
			rn.Close()
			return nil, err
		}
		rn.files = append(rn.files, f)
		rn.logs = append(rn.logs, path)
	}
	logf("starting %d nodes on %v (netns %s...), settings %v", n, nw.Hosts(), nw.NodeNS(0), settings)
	rn.c, err = testcluster.Start(testcluster.Options{
		Nodes: n, Bin: bin, Settings: settings,
		Hosts: nw.Hosts(), Wrapper: nw.Wrapper,
		BaseDir: filepath.Join(workDir, "data"),
		Output:  func(i int) io.Writer { return rn.files[i] },
	})
	if err != nil {
		return rn, fmt.Errorf("cluster start: %w", err)
	}
	return rn, nil
}

// Close stops the cluster, closes the logs and removes the network, in that order.
func (rn *runNodes) Close() {
	if rn.c != nil {
		rn.c.Close()
	}
	for _, f := range rn.files {
		f.Close()
	}
	rn.nw.Close()
}
