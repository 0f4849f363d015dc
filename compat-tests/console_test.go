package compattests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// chromium loads url in headless Chromium (Debian's package) and returns the DOM it
// rendered; with screenshot set and SLUICE_UPDATE_SCREENSHOTS in the environment it also
// writes a PNG of the page there (docs/console holds the committed ones).
func chromium(t *testing.T, url, screenshot string) string {
	t.Helper()
	bin := lookPath(t, "chromium")
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,900"}
	if screenshot != "" && os.Getenv("SLUICE_UPDATE_SCREENSHOTS") != "" {
		runCmd(t, 2*time.Minute, "", bin, append(args, "--screenshot="+screenshot, url)...)
		if st, err := os.Stat(screenshot); err != nil || st.Size() < 1000 {
			t.Fatalf("no screenshot of %s: %v", url, err)
		}
	}
	return runCmd(t, 2*time.Minute, "", bin, append(args, "--dump-dom", url)...)
}

// TestWebConsoleInChromium starts sluice with --console-addr and --console-writes, gives it a
// topic with JSON records and a group that has consumed part of them, and loads every page in
// headless Chromium, checking what a person would see: the broker and the controller, the
// topic with its message count, the messages (JSON pretty-printed, a key search), and the
// group's lag per partition; then it creates a topic and moves the group's offsets through
// the forms. SLUICE_UPDATE_SCREENSHOTS=1 writes the screenshots to docs/console/.
func TestWebConsoleInChromium(t *testing.T) {
	consolePort := freePort(t)
	base := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(consolePort))
	b := StartBrokerWith(t, BrokerOptions{Flags: []string{"--console-addr", strings.TrimPrefix(base, "http://"), "--console-writes"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 30 {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("order-%02d", i)), Value: []byte(fmt.Sprintf(`{"id":%d,"item":"book-%d"}`, i, i)),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("console-test")}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Group g1 consumes and commits 10 of the 30: its lag is 20.
	g, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("g1"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	var got []*kgo.Record
	for len(got) < 10 && ctx.Err() == nil {
		got = append(got, g.PollRecords(ctx, 10-len(got)).Records()...)
	}
	if err := g.CommitRecords(ctx, got...); err != nil {
		t.Fatal(err)
	}
	g.Close()
	waitFor(t, time.Minute, "the console to answer", func() error {
		resp, err := http.Get(base + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})

	shots := t.TempDir()
	if os.Getenv("SLUICE_UPDATE_SCREENSHOTS") != "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		shots = filepath.Join(root, "docs", "console")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	check := func(page, dom string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(dom, w) {
				t.Fatalf("%s lacks %q:\n%s", page, w, clip(dom))
			}
		}
	}
	// expect loads page in the browser; get fetches it over plain HTTP (the form results).
	expect := func(page, screenshot string, wants ...string) {
		t.Helper()
		check(page, chromium(t, base+page, filepath.Join(shots, screenshot)), wants...)
	}
	get := func(page string, wants ...string) string {
		t.Helper()
		resp, err := http.Get(base + page)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		check(page, string(body), wants...)
		return string(body)
	}
	expect("/", "overview.png", `id="health"`, "Healthy", `id="controller">1<`, `id="broker-count">1<`, b.Addr)
	expect("/topics", "topics.png", `href="/topics/orders"`, "<td>30</td>")
	expect("/topics/orders", "topic.png", "Browse messages", "<th>ISR</th>")
	expect("/topics/orders/messages?from=start&limit=50", "messages.png",
		`30 messages shown`, "order-07", `"item": "book-7"`, "<b>source</b>: console-test")
	dom := get("/topics/orders/messages?from=start&key=order-1",
		"order-10", "order-19", "10 messages shown")
	if strings.Contains(dom, "order-20") {
		t.Fatalf("the key search for order-1 shows order-20:\n%s", clip(dom))
	}
	expect("/groups", "groups.png", `href="/groups/g1"`, "<td>20</td>")
	expect("/groups/g1", "group.png", `id="total-lag">20<`, `id="state">Empty<`)
	get("/topics/none-such", "topic none-such does not exist")

	// The forms: a new topic, and g1 moved to the end (lag 0).
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(base+"/topics", url.Values{"name": {"made-in-console"}, "partitions": {"2"}, "configs": {"retention.ms=3600000"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create topic form: %s", resp.Status)
	}
	get("/topics/made-in-console", "retention.ms", "3600000")
	resp, err = noRedirect.PostForm(base+"/groups/g1/seek", url.Values{"to": {"end"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("seek form: %s", resp.Status)
	}
	get("/groups/g1", `id="total-lag">0<`)
}
