package config

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var rangeRE = regexp.MustCompile(`^\[(-?\d+),\.\.\.(?:,(-?\d+))?\]$`)

// TestValidatorsMatchKafka probes each numeric range validator of the Kafka 4.4.0 dump at its
// edges: the bound itself passes, one past it fails.
func TestValidatorsMatchKafka(t *testing.T) {
	f, err := os.Open("testdata/kafka-4.4.0-configdefs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	probed := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		p := strings.Split(line, "\t")
		scope, name, typ, validator := p[0], p[1], p[2], p[4]
		if typ != "INT" && typ != "LONG" && typ != "SHORT" {
			continue
		}
		m := rangeRE.FindStringSubmatch(validator)
		if m == nil {
			continue
		}
		d, ok := dumpedDef(scope, name)
		if !ok {
			continue
		}
		probed++
		lo, _ := strconv.ParseInt(m[1], 10, 64)
		if d.Check(m[1]) != nil || d.Check(strconv.FormatInt(lo-1, 10)) == nil {
			t.Errorf("%s %s: lower bound is not %s", scope, name, m[1])
		}
		if m[2] != "" {
			hi, _ := strconv.ParseInt(m[2], 10, 64)
			if d.Check(m[2]) != nil || d.Check(strconv.FormatInt(hi+1, 10)) == nil {
				t.Errorf("%s %s: upper bound is not %s", scope, name, m[2])
			}
		}
	}
	if probed < 100 {
		t.Errorf("only %d range validators probed", probed)
	}
}
