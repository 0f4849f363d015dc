package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// nsPrefix starts the name of every namespace this package creates; the rest is the creating
// process's pid, so a later run can tell a crashed run's leftovers (pid gone) from a live one.
const nsPrefix = "sluicechaos-"

// Network is a private network of one namespace per node plus a bridge namespace: node i's
// namespace has a veth to the bridge with address 198.18.<subnet>.<i+1>/24 and no other route,
// and the root namespace has a veth of its own into the bridge (198.18.<subnet>.254) so the
// workload clients in the test process reach every node. Links between nodes are cut with
// blackhole routes inside the nodes' namespaces, so a partition drops packets silently, as a
// real one does; clients keep reaching every node.
type Network struct {
	tag    string // pid, part of every name
	subnet int
	nodes  int
	mu     struct {
		sync.Mutex
		cut map[[2]int]bool // directed links i->j (node indexes) currently blackholed
	}
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// CleanStaleNamespaces deletes namespaces left by runs whose process is gone.
func CleanStaleNamespaces() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, nsPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == nil {
			continue // a live run's
		}
		_ = run("ip", "netns", "del", name)
	}
}

// NewNetwork builds the namespaces, the bridge and the veths for n nodes. On error whatever
// was made is removed.
func NewNetwork(n int) (_ *Network, err error) {
	CleanStaleNamespaces()
	pid := os.Getpid()
	nw := &Network{tag: strconv.Itoa(pid), subnet: 1 + pid%250, nodes: n}
	nw.mu.cut = map[[2]int]bool{}
	defer func() {
		if err != nil {
			nw.Close()
		}
	}()
	br := nw.bridgeNS()
	steps := [][]string{
		{"ip", "netns", "add", br},
		{"ip", "-n", br, "link", "set", "lo", "up"},
		{"ip", "-n", br, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", br, "link", "set", "br0", "up"},
	}
	for i := range n {
		ns, host, peer := nw.NodeNS(i), fmt.Sprintf("sc%sn%d", nw.tag, i), fmt.Sprintf("sc%sb%d", nw.tag, i)
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
			[]string{"ip", "link", "add", host, "netns", ns, "type", "veth", "peer", "name", peer, "netns", br},
			[]string{"ip", "-n", ns, "link", "set", host, "name", "eth0"},
			[]string{"ip", "-n", ns, "addr", "add", nw.Host(i) + "/24", "dev", "eth0"},
			[]string{"ip", "-n", ns, "link", "set", "eth0", "up"},
			[]string{"ip", "-n", br, "link", "set", peer, "master", "br0", "up"},
		)
	}
	rootIf, rootPeer := "sc"+nw.tag+"r", "sc"+nw.tag+"R"
	steps = append(steps,
		[]string{"ip", "link", "add", rootIf, "type", "veth", "peer", "name", rootPeer, "netns", br},
		[]string{"ip", "-n", br, "link", "set", rootPeer, "master", "br0", "up"},
		[]string{"ip", "addr", "add", fmt.Sprintf("198.18.%d.254/24", nw.subnet), "dev", rootIf},
		[]string{"ip", "link", "set", rootIf, "up"},
	)
	for _, s := range steps {
		if err := run(s...); err != nil {
			return nil, err
		}
	}
	return nw, nil
}

func (nw *Network) bridgeNS() string { return nsPrefix + nw.tag + "-br" }

// NodeNS is node i's namespace.
func (nw *Network) NodeNS(i int) string { return fmt.Sprintf("%s%s-n%d", nsPrefix, nw.tag, i+1) }

// Host is node i's address.
func (nw *Network) Host(i int) string { return fmt.Sprintf("198.18.%d.%d", nw.subnet, i+1) }

// Hosts are every node's address, by index.
func (nw *Network) Hosts() []string {
	var out []string
	for i := range nw.nodes {
		out = append(out, nw.Host(i))
	}
	return out
}

// Wrapper runs a command in node i's namespace.
func (nw *Network) Wrapper(i int) []string { return []string{"ip", "netns", "exec", nw.NodeNS(i)} }

// Cut blackholes traffic between nodes a and b, both directions.
func (nw *Network) Cut(a, b int) error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, l := range [][2]int{{a, b}, {b, a}} {
		if nw.mu.cut[l] {
			continue
		}
		if err := run("ip", "-n", nw.NodeNS(l[0]), "route", "add", "blackhole", nw.Host(l[1])+"/32"); err != nil {
			return err
		}
		nw.mu.cut[l] = true
	}
	return nil
}

// Partition cuts every link between a node in one group and a node in the other.
func (nw *Network) Partition(groupA, groupB []int) error {
	for _, a := range groupA {
		for _, b := range groupB {
			if err := nw.Cut(a, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cuts describes the links currently cut ("1-2 1-3", node ids).
func (nw *Network) Cuts() string {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	var out []string
	for l := range nw.mu.cut {
		if l[0] < l[1] {
			out = append(out, fmt.Sprintf("%d-%d", l[0]+1, l[1]+1))
		}
	}
	return strings.Join(out, " ")
}

// Heal removes every cut.
func (nw *Network) Heal() error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	var first error
	for l := range nw.mu.cut {
		if err := run("ip", "-n", nw.NodeNS(l[0]), "route", "del", "blackhole", nw.Host(l[1])+"/32"); err != nil && first == nil {
			first = err
		}
		delete(nw.mu.cut, l)
	}
	return first
}

// Close deletes the namespaces (which removes their veths, and so the root's too).
func (nw *Network) Close() {
	for i := range nw.nodes {
		_ = run("ip", "netns", "del", nw.NodeNS(i))
	}
	_ = run("ip", "netns", "del", nw.bridgeNS())
	_ = run("ip", "link", "del", "sc"+nw.tag+"r")
}
