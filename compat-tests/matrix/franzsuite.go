package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// franzSuiteTimeout bounds franz-go's live-broker suite.
const franzSuiteTimeout = 10 * time.Minute

// maxSuiteLog bounds the committed franz-go suite log (tail kept).
const maxSuiteLog = 192 << 10

// franzSkip is what scripts/franz-suite.sh skips: share groups, which sluice does not serve yet,
// and SCRAM, whose credentials the run does not create (TestOAuthAuth skips itself without an
// OAUTHBEARER listener, which this run does not start).
const franzSkip = "Share|TestSCRAM"

// SuiteTest is one test of franz-go's suite.
type SuiteTest struct {
	Name    string
	Result  string // pass, FAIL, skip
	Seconds float64
}

// SuiteResult is franz-go's live-broker suite run against a fresh sluice.
type SuiteResult struct {
	Tests   []SuiteTest
	LogPath string
	Skip    string
	Err     string
}

// RunFranzSuite runs `go test github.com/twmb/franz-go/pkg/kgo` against a fresh sluice and
// collects per-test results from go test's JSON output.
func RunFranzSuite(ctx context.Context, bin, logsDir string) *SuiteResult {
	res := &SuiteResult{LogPath: "franz-suite.log", Skip: franzSkip}
	b, err := StartBroker(bin, filepath.Join(logsDir, "sluice-franz-suite.log"), 1)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer func() {
		b.Stop()
		trimFile(filepath.Join(logsDir, "sluice-franz-suite.log"), maxBrokerLog)
	}()
	ctx, cancel := context.WithTimeout(ctx, franzSuiteTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-json", "-timeout", franzSuiteTimeout.String(), "-skip", franzSkip, "github.com/twmb/franz-go/pkg/kgo")
	cmd.Dir = moduleRoot()
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+b.Addr, "KGO_TEST_RF=1")
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		res.Err = err.Error()
		return res
	}
	logFile, _ := os.Create(filepath.Join(logsDir, res.LogPath))
	defer logFile.Close()
	results := map[string]*SuiteTest{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Action  string
			Test    string
			Output  string
			Elapsed float64
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Output != "" {
			logFile.WriteString(ev.Output)
		}
		if ev.Test == "" || strings.Contains(ev.Test, "/") {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			r := map[string]string{"pass": "pass", "fail": "FAIL", "skip": "skip"}[ev.Action]
			results[ev.Test] = &SuiteTest{Name: ev.Test, Result: r, Seconds: ev.Elapsed}
		}
	}
	if err := cmd.Wait(); err != nil {
		res.Err = fmt.Sprintf("go test: %v %s", err, lastLine(stderr.String()))
	}
	for _, t := range results {
		res.Tests = append(res.Tests, *t)
	}
	sort.Slice(res.Tests, func(i, j int) bool { return res.Tests[i].Name < res.Tests[j].Name })
	trimFile(filepath.Join(logsDir, res.LogPath), maxSuiteLog)
	return res
}
