package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// pprofResult is one Go CPU profile taken from a sluice node's --debug-addr.
type pprofResult struct {
	path string // the profile as fetched
	top  string // `go tool pprof -top` of it (flat and cumulative per function)
	err  error
}

// takeCPUProfile fetches /debug/pprof/profile?seconds=seconds from addr into path and
// summarises it with `go tool pprof -top`, by flat and by cumulative time.
func takeCPUProfile(ctx context.Context, addr string, seconds int, path string) pprofResult {
	res := pprofResult{path: path}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+30)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), nil)
	if err != nil {
		res.err = err
		return res
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		res.err = err
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		res.err = fmt.Errorf("pprof answered %s: %s", resp.Status, body)
		return res
	}
	f, err := os.Create(path)
	if err != nil {
		res.err = err
		return res
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		res.err = err
		return res
	}
	// Flat time is mostly syscalls; the cumulative view says which code path issued them.
	var parts []string
	for _, sortBy := range []string{"-flat", "-cum"} {
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", sortBy, "-nodecount=40", path).CombinedOutput()
		if err != nil {
			res.err = fmt.Errorf("go tool pprof: %v: %s", err, firstLine(string(out)))
			return res
		}
		parts = append(parts, "$ go tool pprof -top "+sortBy+" -nodecount=40 PROFILE\n"+strings.TrimSpace(string(out)))
	}
	res.top = strings.Join(parts, "\n\n")
	return res
}
