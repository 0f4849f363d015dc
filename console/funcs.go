package console

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"strings"
	"time"
)

var templateFuncs = template.FuncMap{
	"bytes":   humanBytes,
	"ids":     idList,
	"since":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") },
	"inISR":   func(isr []int32, id int32) bool { return containsID(isr, id) },
	"percent": func(a, b int64) int64 { return a * 100 / max(b, 1) },
}

func humanBytes(n int64) string {
	if n < 0 {
		return "?"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func idList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// topicID prints a topic ID as Kafka's tools do (URL-safe base64 without padding).
func topicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
