package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestQuickMatrix is the fast subset of the matrix that `make test` runs: one scenario per
// client family (each Client's Quick scenario), against one real sluice process. It fails if
// any of those cells fails; n/a is not expected for a quick scenario. The full matrix is
// `make compat`.
func TestQuickMatrix(t *testing.T) {
	logs := t.TempDir()
	m, err := NewMatrix(os.Getenv("SLUICE_BIN"), logs, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	byID := map[string]Scenario{}
	for _, s := range Scenarios {
		byID[s.ID] = s
	}
	for _, c := range Clients() {
		if c.Quick == "" {
			continue
		}
		t.Run(c.ID+"/"+c.Quick, func(t *testing.T) {
			cell := m.RunCell(context.Background(), c, byID[c.Quick])
			if cell.Outcome != Pass {
				log, _ := os.ReadFile(filepath.Join(logs, cell.LogPath))
				t.Errorf("%s × %s: %s: %s\nlog:\n%s", c.Name, c.Quick, cell.Outcome, cell.Detail, log)
			}
		})
	}
}
