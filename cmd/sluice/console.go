package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"sluice/console"
	"sluice/internal/config"
	"sluice/wire"
)

// startConsole serves the web console (package console) on addr, as a client of this node's
// first PLAINTEXT client listener. It returns a function that stops it.
func startConsole(addr string, writes bool, cfg *config.Broker, servers []*wire.Server, security map[string]listenerSecurity, logger *slog.Logger) (func(), error) {
	var seed string
	for i, l := range brokerListeners(cfg) {
		if security[l.Name].protocol == "PLAINTEXT" && i < len(servers) {
			host, port, err := net.SplitHostPort(servers[i].Addr().String())
			if err != nil {
				return nil, err
			}
			if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
				host = "127.0.0.1"
			}
			seed = net.JoinHostPort(host, port)
			break
		}
	}
	if seed == "" {
		return nil, errors.New("the console connects through a PLAINTEXT client listener, and this node has none")
	}
	c, err := console.New(console.Config{Brokers: []string{seed}, AllowWrites: writes, Logger: logger})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		c.Close()
		return nil, err
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("console stopped", "err", err)
		}
	}()
	logger.Info("serving the web console", "addr", ln.Addr().String(), "writes", writes, "via", seed)
	return func() {
		_ = srv.Close()
		c.Close()
	}, nil
}

// consoleFlagProblem says what is wrong with --console-writes given without --console-addr.
func consoleFlagProblem(addr string, writes bool) error {
	if writes && addr == "" {
		return fmt.Errorf("--console-writes needs --console-addr")
	}
	return nil
}
