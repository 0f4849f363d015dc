package controller

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

const helperDirEnv = "SLUICE_CONTROLLER_HELPER_DIR"

// TestControllerHelperProcess is not a test: run by TestKill9KeepsAcknowledgedTopics as a
// child process, it creates topics from several goroutines forever and prints "ok <name>"
// after each acknowledgement, until it is killed.
func TestControllerHelperProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		return
	}
	c, err := Start(Config{NodeID: 1, Dir: dir, Logger: testLogger(), SnapshotEvery: 16})
	if err != nil {
		fmt.Println("start failed:", err)
		os.Exit(1)
	}
	round := os.Getenv("SLUICE_CONTROLLER_HELPER_ROUND")
	var out sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				name := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				res, err := c.CreateTopics(context.Background(), []CreateTopic{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false)
				if err != nil || res[0].Err != nil {
					fmt.Println("create failed:", err, res)
					os.Exit(1)
				}
				out.Lock()
				fmt.Println("ok", name)
				out.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestKill9KeepsAcknowledgedTopics kills a controller process with SIGKILL while it creates
// topics, several times over the same directory, and checks that every acknowledged topic
// survives each restart.
func TestKill9KeepsAcknowledgedTopics(t *testing.T) {
	if os.Getenv(helperDirEnv) != "" {
		return
	}
	dir := t.TempDir()
	var acked []string
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestControllerHelperProcess$")
		cmd.Env = append(os.Environ(), helperDirEnv+"="+dir, fmt.Sprintf("SLUICE_CONTROLLER_HELPER_ROUND=%d", round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		scanner := bufio.NewScanner(stdout)
		for n := 0; n < 60 && scanner.Scan(); {
			line := scanner.Text()
			if name, ok := strings.CutPrefix(line, "ok "); ok {
				acked = append(acked, name)
				n++
			} else if strings.Contains(line, "failed") {
				t.Fatalf("helper: %s", line)
			}
		}
		cmd.Process.Kill() // SIGKILL mid-stream
		// Acknowledgements already written to the pipe count too.
		for scanner.Scan() {
			if name, ok := strings.CutPrefix(scanner.Text(), "ok "); ok {
				acked = append(acked, name)
			}
		}
		cmd.Wait()

		c, err := Start(testConfig(dir))
		if err != nil {
			t.Fatalf("round %d: restart: %v", round, err)
		}
		im := c.Image()
		for _, name := range acked {
			if im.Topics[name] == nil {
				t.Errorf("round %d: acknowledged topic %s lost", round, name)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(acked) < 180 {
		t.Fatalf("only %d acknowledgements", len(acked))
	}
}
