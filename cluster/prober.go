package cluster

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"sluice/controller"
)

// probeTimeout bounds one connection attempt of a probe; a timeout is inconclusive.
const probeTimeout = time.Second

// Prober is the controller.Prober of a node: it tries one TCP connection to each endpoint
// and closes it at once. Only ECONNREFUSED counts as refused (nothing listens there); an
// accepted connection is accepted; anything else (timeout, unreachable host or network, a
// name that does not resolve) is inconclusive. Each probe runs on its own goroutines; the
// controller keeps at most one probe per broker in flight.
type Prober struct{}

// Probe implements controller.Prober.
func (Prober) Probe(endpoints []controller.Endpoint, done func([]controller.ProbeOutcome)) {
	go func() {
		out := make([]controller.ProbeOutcome, len(endpoints))
		var wg sync.WaitGroup
		for i, e := range endpoints {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i] = probe(net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
			}()
		}
		wg.Wait()
		done(out)
	}()
}

func probe(addr string) controller.ProbeOutcome {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	switch {
	case err == nil:
		conn.Close()
		return controller.ProbeAccepted
	case errors.Is(err, syscall.ECONNREFUSED):
		return controller.ProbeRefused
	}
	return controller.ProbeInconclusive
}
