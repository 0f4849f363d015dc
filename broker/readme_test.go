package broker

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReadmeListsAdvertisedVersions keeps README.md's API table equal to what ApiVersions
// advertises, so users read the versions sluice really serves.
func TestReadmeListsAdvertisedVersions(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \| (\w+) \| (\d+)–(\d+) \|`)
	documented := map[int16][2]int16{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		key, _ := strconv.Atoi(m[1])
		lo, _ := strconv.Atoi(m[3])
		hi, _ := strconv.Atoi(m[4])
		if name := kmsg.NameForKey(int16(key)); name != m[2] {
			t.Errorf("README names key %d %q, kmsg calls it %q", key, m[2], name)
		}
		documented[int16(key)] = [2]int16{int16(lo), int16(hi)}
	}
	var table string
	for _, v := range Versions() {
		table += fmt.Sprintf("| %d | %s | %d–%d |\n", v.Key, kmsg.NameForKey(v.Key), v.Min, v.Max)
		got, ok := documented[v.Key]
		if !ok || got != [2]int16{v.Min, v.Max} {
			t.Errorf("README: %s (key %d) documented %v, advertised %d–%d", kmsg.NameForKey(v.Key), v.Key, got, v.Min, v.Max)
		}
		delete(documented, v.Key)
	}
	for key := range documented {
		t.Errorf("README documents key %d, which is not advertised", key)
	}
	if t.Failed() {
		t.Logf("the advertised table:\n| key | API | versions |\n|---|---|---|\n%s", table)
	}
}
