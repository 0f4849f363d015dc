package chaos

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNetworkCutAndHeal: nodes reach each other and the root namespace reaches every node;
// a cut stops traffic between exactly the two nodes; heal restores it; Close leaves no
// namespace behind.
func TestNetworkCutAndHeal(t *testing.T) {
	nw, err := NewNetwork(3)
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	// ping connects from node from's namespace to a closed port on node to: "Connection
	// refused" means the packets got there and back.
	ping := func(from, to int) bool {
		args := append(nw.Wrapper(from), "timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/"+nw.Host(to)+"/1")
		out, _ := exec.Command(args[0], args[1:]...).CombinedOutput()
		return strings.Contains(string(out), "refused")
	}
	if !ping(0, 1) || !ping(1, 2) {
		t.Fatal("nodes do not reach each other")
	}
	// The root namespace reaches node 3 over TCP (nothing listens: a refusal, not a timeout).
	if _, err := net.DialTimeout("tcp", net.JoinHostPort(nw.Host(2), "1"), 2*time.Second); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("root to node 3: %v, want connection refused", err)
	}
	if err := nw.Cut(0, 1); err != nil {
		t.Fatal(err)
	}
	if ping(0, 1) || ping(1, 0) {
		t.Fatal("cut link still carries traffic")
	}
	if !ping(0, 2) || !ping(1, 2) {
		t.Fatal("a cut between 1 and 2 stopped other links")
	}
	if err := nw.Heal(); err != nil {
		t.Fatal(err)
	}
	if !ping(0, 1) {
		t.Fatal("healed link carries no traffic")
	}
	nw.Close()
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), nw.NodeNS(0)) || strings.Contains(string(out), nw.bridgeNS()) {
		t.Fatalf("namespaces left after Close: %s", out)
	}
}
