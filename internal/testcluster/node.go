package testcluster

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartDeadline bounds how long a node may take to answer ApiVersions after a start.
const StartDeadline = 30 * time.Second

// StopDeadline bounds how long a SIGTERMed node may take to exit before it is SIGKILLed.
const StopDeadline = 15 * time.Second

// NodeConfig describes one sluice process.
type NodeConfig struct {
	// Bin is the sluice binary; "" means Binary().
	Bin string
	// Wrapper runs sluice under another command, its argv before sluice's (prlimit ... --,
	// ip netns exec NAME). The wrapper must exec sluice so that signals reach it.
	Wrapper []string
	// Addr is the client listener's host:port, probed for readiness.
	Addr string
	// ControllerAddr is the controller listener's host:port ("" for none).
	ControllerAddr string
	// Dir is log.dirs.
	Dir string
	// Settings are "key=value" pairs passed as --set; log.dirs and listeners are set from Dir,
	// Addr and ControllerAddr unless Settings already name listeners.
	Settings []string
	// Flags are further command-line flags (e.g. --http-addr ADDR), after the settings.
	Flags []string
	// Output receives the process's stdout and stderr, every run separated by a marker line
	// (nil: discarded).
	Output io.Writer
	// Command, when set, is run verbatim instead of sluice (its binary first): Bin, Wrapper,
	// Settings and Flags are then ignored, and Dir only names the data directory. Another
	// broker (NewKafkaNode) gets the same lifecycle this way.
	Command []string
	// ID is the node.id when Command is set (sluice's is read from Settings).
	ID int32
	// Name is what the log markers and errors call the process ("sluice" when empty).
	Name string
}

// Node is one sluice process that can be started, signalled and restarted on the same data
// directory and ports.
type Node struct {
	ID             int32 // node.id (0 for a single node started without one)
	Addr           string
	ControllerAddr string
	Dir            string
	bin            string
	args           []string
	out            io.Writer
	name           string // "sluice" or another broker's name, for markers and errors

	mu struct {
		sync.Mutex
		cmd     *exec.Cmd
		exited  chan struct{} // closed once cmd has been waited for; nil before the first start
		exitErr error         // cmd.Wait's result for the last run; valid once exited is closed
		paused  bool
		runs    int
	}
}

// NewNode prepares a node without starting it.
func NewNode(cfg NodeConfig) (*Node, error) {
	if len(cfg.Command) > 0 {
		n := &Node{ID: cfg.ID, Addr: cfg.Addr, ControllerAddr: cfg.ControllerAddr, Dir: cfg.Dir,
			bin: cfg.Command[0], args: append([]string(nil), cfg.Command[1:]...), out: cfg.Output, name: cfg.Name}
		if n.out == nil {
			n.out = io.Discard
		}
		if n.name == "" {
			n.name = "sluice"
		}
		return n, nil
	}
	if cfg.Bin == "" {
		bin, err := Binary()
		if err != nil {
			return nil, err
		}
		cfg.Bin = bin
	}
	n := &Node{Addr: cfg.Addr, ControllerAddr: cfg.ControllerAddr, Dir: cfg.Dir, bin: cfg.Bin, out: cfg.Output, name: "sluice"}
	if n.out == nil {
		n.out = io.Discard
	}
	n.args = []string{"--set", "log.dirs=" + cfg.Dir}
	named := false
	for _, s := range cfg.Settings {
		if strings.HasPrefix(s, "listeners=") {
			named = true
		}
	}
	if !named {
		listeners := "PLAINTEXT://" + cfg.Addr
		if cfg.ControllerAddr != "" {
			listeners += ",CONTROLLER://" + cfg.ControllerAddr
		}
		n.args = append(n.args, "--set", "listeners="+listeners)
	}
	for _, s := range cfg.Settings {
		n.args = append(n.args, "--set", s)
		if v, ok := strings.CutPrefix(s, "node.id="); ok {
			fmt.Sscan(v, &n.ID)
		}
	}
	n.args = append(n.args, cfg.Flags...)
	if len(cfg.Wrapper) > 0 {
		n.args = append(append(append([]string(nil), cfg.Wrapper[1:]...), n.bin), n.args...)
		n.bin = cfg.Wrapper[0]
	}
	return n, nil
}

// Args is the command line the node runs (binary first).
func (n *Node) Args() []string { return append([]string{n.bin}, n.args...) }

// Launch starts the process without waiting for readiness.
func (n *Node) Launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.exited != nil {
		select {
		case <-n.mu.exited:
		default:
			return fmt.Errorf("%s is already running", n.name)
		}
	}
	n.mu.runs++
	fmt.Fprintf(n.out, "===== %s run %d: %s %s =====\n", n.name, n.mu.runs, n.bin, strings.Join(n.args, " "))
	cmd := exec.Command(n.bin, n.args...)
	cmd.Stdout, cmd.Stderr = n.out, n.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", n.name, err)
	}
	exited := make(chan struct{})
	n.mu.cmd, n.mu.exited, n.mu.paused = cmd, exited, false
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(n.out, "===== %s exited: %v =====\n", n.name, err)
		n.mu.Lock()
		n.mu.exitErr = err
		n.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Start launches the process and waits until it answers ApiVersions.
func (n *Node) Start() error {
	if err := n.Launch(); err != nil {
		return err
	}
	return n.WaitReady(StartDeadline)
}

// Restart starts a stopped node again on the same data directory and ports.
func (n *Node) Restart() error {
	if n.Alive() {
		return errors.New("restart of a running sluice; kill or stop it first")
	}
	return n.Start()
}

// WaitReady polls ApiVersions until it is answered, the process exits, or timeout passes.
func (n *Node) WaitReady(timeout time.Duration) error {
	n.mu.Lock()
	exited := n.mu.exited
	n.mu.Unlock()
	if exited == nil {
		return fmt.Errorf("%s was never started", n.name)
	}
	deadline := time.Now().Add(timeout)
	retry := time.NewTicker(20 * time.Millisecond)
	defer retry.Stop()
	var lastErr error
	for {
		if lastErr = ProbeApiVersions(n.Addr); lastErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer ApiVersions on %s within %v: %v", n.name, n.Addr, timeout, lastErr)
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before answering ApiVersions (last probe: %v)", n.name, lastErr)
		case <-retry.C:
		}
	}
}

// Alive reports whether the process is running (a paused process is alive).
func (n *Node) Alive() bool {
	n.mu.Lock()
	exited := n.mu.exited
	n.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Paused reports whether the process was sent SIGSTOP and not SIGCONT since.
func (n *Node) Paused() bool {
	n.mu.Lock()
	paused := n.mu.paused
	n.mu.Unlock()
	return paused && n.Alive()
}

// Pid is the running process's id (0 when not running).
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.cmd == nil || n.mu.cmd.Process == nil {
		return 0
	}
	return n.mu.cmd.Process.Pid
}

// signal sends sig to a running process; false when none runs.
func (n *Node) signal(sig syscall.Signal) (chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.exited == nil {
		return nil, false
	}
	select {
	case <-n.mu.exited:
		return n.mu.exited, false
	default:
	}
	_ = n.mu.cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		n.mu.paused = true
	case syscall.SIGCONT:
		n.mu.paused = false
	}
	return n.mu.exited, true
}

// wait waits up to d for exited; reports whether it closed.
func wait(exited chan struct{}, d time.Duration) bool {
	if exited == nil {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-exited:
		return true
	case <-timer.C:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (n *Node) Kill() error {
	exited, _ := n.signal(syscall.SIGKILL)
	if !wait(exited, StopDeadline) {
		return errors.New("sluice did not exit after SIGKILL")
	}
	return nil
}

// Term sends SIGTERM (after SIGCONT, should it be paused), waits up to timeout, then SIGKILLs.
// It reports whether the process exited on SIGTERM.
func (n *Node) Term(timeout time.Duration) bool {
	n.signal(syscall.SIGCONT)
	exited, _ := n.signal(syscall.SIGTERM)
	if wait(exited, timeout) {
		return true
	}
	fmt.Fprintf(n.out, "===== %s ignored SIGTERM for %v; sending SIGKILL =====\n", n.name, timeout)
	n.Kill()
	return false
}

// Stop is Term with StopDeadline.
func (n *Node) Stop() bool { return n.Term(StopDeadline) }

// Pause sends SIGSTOP.
func (n *Node) Pause() error {
	if _, ok := n.signal(syscall.SIGSTOP); !ok {
		return errors.New("pause: sluice is not running")
	}
	return nil
}

// Resume sends SIGCONT.
func (n *Node) Resume() error {
	if _, ok := n.signal(syscall.SIGCONT); !ok {
		return errors.New("resume: sluice is not running")
	}
	return nil
}

// ExitErr is the last run's exit result (nil for status 0); meaningful once it exited.
func (n *Node) ExitErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.exitErr
}

// Exited is closed when the current run's process has exited (nil before the first start).
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.exited
}

// SignalAndWait sends sig and waits up to d for the process to exit; it reports whether it
// exited (true when none was running).
func (n *Node) SignalAndWait(sig syscall.Signal, d time.Duration) bool {
	exited, _ := n.signal(sig)
	return wait(exited, d)
}
