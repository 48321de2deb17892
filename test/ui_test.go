package test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/proctest"
	"github.com/sluice-io/sluice/internal/ui"
)

// browserPath finds a Chromium to drive. Without one the browser tests
// skip, unless SLUICE_REQUIRE_BROWSER is set (CI sets it: .ci/run
// installs Debian's chromium), where they fail instead.
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SLUICE_REQUIRE_BROWSER") != "" {
		t.Fatal("no Chromium found (chromium, chromium-browser, google-chrome, headless-shell) and SLUICE_REQUIRE_BROWSER is set: install it (apt-get install chromium)")
	}
	t.Skip("no Chromium found; install chromium to run the dashboard's browser tests (CI sets SLUICE_REQUIRE_BROWSER=1 and fails here)")
	return ""
}

// newBrowser starts a headless Chromium with a window of width x height and
// returns a context for chromedp, the browser stopped when the test ends.
func newBrowser(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browserPath(t)),
		chromedp.WindowSize(width, height),
		// Root in CI containers: Chromium's sandbox needs user namespaces
		// that containers often lack.
		chromedp.NoSandbox, chromedp.DisableGPU,
		// Containers give /dev/shm 64 MB, which Chromium outgrows.
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser; it lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// card is one task card as the page shows it.
type card struct {
	Task   string `json:"task"`
	Worker string `json:"worker"`
	State  string `json:"state"`
	Rate   string `json:"rate"`
	Lag    string `json:"lag"`
}

const cardsJS = `Array.from(document.querySelectorAll("button.task")).map(b => ({
  task: b.dataset.task, worker: b.dataset.worker, state: b.dataset.state,
  rate: b.querySelectorAll(".nums b")[0].textContent, lag: b.querySelectorAll(".nums b")[1].textContent}))`

// waitCards polls the page's task cards until cond holds.
func waitCards(t *testing.T, ctx context.Context, what string, cond func([]card) bool) []card {
	t.Helper()
	var cards []card
	waitFor(t, func() {}, stateDeadline, 200*time.Millisecond, what, func() (bool, string) {
		var err error
		cards, err = chromedp.Run(ctx, chromedp.Evaluate[[]card](cardsJS))
		if err != nil {
			return false, err.Error()
		}
		b, _ := json.Marshal(cards)
		return cond(cards), string(b)
	})
	return cards
}

// screenshot saves the full page as test/ui/<name>.png, CI's artifact.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll("ui", 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("ui", name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: test/%s", path)
}

// allOn tells whether the cards of the running connectors (all but
// "broken", which fails on purpose) are n, every one RUNNING on a worker of
// workers and measured (a records/s figure, not a dash), and the workers
// all used.
func allOn(n int, workers ...string) func([]card) bool {
	return func(cards []card) bool {
		used, count := map[string]bool{}, 0
		for _, c := range cards {
			if strings.HasPrefix(c.Task, "broken/") {
				continue
			}
			count++
			if c.State != "RUNNING" || !slices.Contains(workers, c.Worker) || c.Rate == "—" {
				return false
			}
			used[c.Worker] = true
		}
		return count == n && len(used) == len(workers)
	}
}

// TestUIShowsTheClusterAndFailover is issue 14's browser test: the
// dashboard of a 3-worker cluster of real processes shows every task on
// its worker, and, once a worker is killed with SIGKILL, its tasks under
// the survivors; the page passes basic accessibility checks, its buttons
// drive the REST API, and it is photographed at 1280 and 390 px wide.
func TestUIShowsTheClusterAndFailover(t *testing.T) {
	ctx := newBrowser(t, 1280, 900)
	c, ws := startWorkers(t, "ui", 3)
	createOn(t, ws[0].rest, "orders", map[string]string{
		"connector.class": "Datagen", "topic": c.topic("orders"), "tasks.max": "4", "records.per.second": "50",
	})
	createOn(t, ws[0].rest, "clicks", map[string]string{
		"connector.class": "Datagen", "topic": c.topic("clicks"), "tasks.max": "2", "records.per.second": "20",
	})
	// A sink of orders, with a consumer lag to show, and one that cannot
	// open its file: a FAILED task with a trace.
	sink := func(file string) map[string]string {
		return map[string]string{"connector.class": "FileStreamSink", "topics": c.topic("orders"), "file": file,
			"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
	}
	createOn(t, ws[0].rest, "archive", sink(filepath.Join(t.TempDir(), "orders.txt")))
	createOn(t, ws[0].rest, "broken", sink(filepath.Join(t.TempDir(), "missing", "out.txt")))
	c.placement("orders", 4, []string{"w1", "w2", "w3"}, nil)
	c.placement("clicks", 2, []string{"w1", "w2", "w3"}, nil)

	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+ws[0].rest+"/ui")); err != nil {
		t.Fatal(err)
	}
	// The sink's lag shows once it has fetched, which on Apache Kafka may
	// come a moment after every card runs with a rate.
	sinkLag := func(cards []card) bool {
		i := slices.IndexFunc(cards, func(cd card) bool { return cd.Task == "archive/0" })
		return i >= 0 && cards[i].Lag != "—"
	}
	before := waitCards(t, ctx, "7 RUNNING task cards with rates on w1, w2 and w3, the sink archive's with its lag", func(cards []card) bool {
		return allOn(7, "w1", "w2", "w3")(cards) && sinkLag(cards)
	})
	// A task created a moment ago may sit in the "unassigned" column until
	// the rebalance that places it is done: wait for the columns to be the
	// three workers alone, as they are once every task has its place.
	var (
		columns []string
		err     error
	)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		columns, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll("section.worker")).map(s => s.dataset.worker)`))
		if err == nil && strings.Join(columns, ",") == "w1,w2,w3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker columns %v (%v) for 30 s, want w1,w2,w3", columns, err)
		}
	}
	checkAccessibility(t, ctx)
	screenshot(t, ctx, "dashboard-1280")

	// The page redraws every second; a keyboard user keeps the focus.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('button.task[data-task="orders/0"]').focus()`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // two redraws at least
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.dataset.task || document.activeElement.tagName`))
	if err != nil || focused != "orders/0" {
		t.Fatalf("after redraws the focus is on %q (%v), want the card orders/0 it was on", focused, err)
	}

	// The last error trace opens on a click; a connector's Pause button
	// pauses it through the REST API, and the cards show it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.task[data-task="clicks/0"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#details[open]`))); err != nil {
		t.Fatalf("opening a task's details: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#details-title`)))
	if err != nil || title != "clicks task 0" {
		t.Fatalf("details title %q (%v)", title, err)
	}
	screenshot(t, ctx, "dashboard-details-1280")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#details-actions button[aria-label="Pause connector clicks"]`)),
		chromedp.Click(chromedp.CSS(`#details button.close`))); err != nil {
		t.Fatalf("pausing through the page: %v", err)
	}
	waitCards(t, ctx, "clicks' cards PAUSED after the page's Pause", func(cards []card) bool {
		paused := 0
		for _, c := range cards {
			if strings.HasPrefix(c.Task, "clicks/") && c.State == "PAUSED" {
				paused++
			}
		}
		return paused == 2
	})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`li[data-connector="clicks"] button[aria-label="Resume connector clicks"]`))); err != nil {
		t.Fatalf("resuming through the page: %v", err)
	}
	waitCards(t, ctx, "every card RUNNING again after the page's Resume", allOn(7, "w1", "w2", "w3"))

	// A FAILED task's card opens on its trace.
	waitCards(t, ctx, "broken's task FAILED", func(cards []card) bool {
		return slices.ContainsFunc(cards, func(cd card) bool { return cd.Task == "broken/0" && cd.State == "FAILED" })
	})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.task[data-task="broken/0"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#details[open]`))); err != nil {
		t.Fatalf("opening the failed task's details: %v", err)
	}
	trace, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#details-trace`)))
	if err != nil || !strings.Contains(trace, "missing") {
		t.Fatalf("the failed task's trace %q (%v), want the sink's error naming its file", trace, err)
	}
	screenshot(t, ctx, "dashboard-trace-1280")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#details button.close`))); err != nil {
		t.Fatal(err)
	}

	// Kill a worker the page is not served by: its tasks move to the
	// survivors, and the page shows them there.
	var onW2 []string
	for _, cd := range before {
		if cd.Worker == "w2" {
			onW2 = append(onW2, cd.Task)
		}
	}
	c.workers["w2"].Kill9()
	after := waitCards(t, ctx, "every task RUNNING on w1 and w3 after w2's SIGKILL", allOn(7, "w1", "w3"))
	for _, task := range onW2 {
		i := slices.IndexFunc(after, func(cd card) bool { return cd.Task == task })
		if i < 0 || after[i].Worker == "w2" {
			t.Fatalf("task %s of the killed worker is not shown under a survivor: %+v", task, after)
		}
	}
	screenshot(t, ctx, "dashboard-failover-1280")

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	waitCards(t, ctx, "the cards at 390 px", allOn(7, "w1", "w3"))
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`))
	if err != nil || overflow > 0 {
		t.Fatalf("at 390 px the page is %d px wider than the window (%v): it must not scroll sideways", overflow, err)
	}
	checkAccessibility(t, ctx)
	screenshot(t, ctx, "dashboard-390")
}

// accessibilityJS checks the basics: the document's language, a name for
// every control, and WCAG AA contrast (4.5:1) for every element's own text
// against the first opaque background behind it.
const accessibilityJS = `(() => {
  const problems = [];
  if (!document.documentElement.lang) problems.push("html has no lang");
  for (const b of document.querySelectorAll("button, a, input, select, textarea")) {
    if (b.closest("dialog:not([open])")) continue;
    const name = (b.getAttribute("aria-label") || b.textContent || "").trim();
    if (!name) problems.push("control without a name: " + b.outerHTML.slice(0, 80));
  }
  const rgb = s => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = el => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest("dialog:not([open])") || el.offsetParent === null && el.tagName !== "BODY") continue;
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const fg = rgb(getComputedStyle(el).color).slice(0, 3);
    const [l1, l2] = [lum(fg), lum(background(el))].sort((a, b) => b - a);
    const ratio = (l1 + 0.05) / (l2 + 0.05);
    if (ratio < 4.5) problems.push(ratio.toFixed(2) + ":1 contrast: " + el.tagName.toLowerCase() + "." + el.className + " " + JSON.stringify(el.textContent.trim().slice(0, 30)));
  }
  return problems;
})()`

func checkAccessibility(t *testing.T, ctx context.Context) {
	t.Helper()
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](accessibilityJS))
	if err != nil {
		t.Fatalf("accessibility check: %v", err)
	}
	if len(problems) > 0 {
		t.Fatalf("accessibility basics fail:\n%s", strings.Join(problems, "\n"))
	}
}

// TestUIWorksBehindBasicAuth: with the REST API behind basic
// authentication, the page asks once (the browser's prompt, answered here
// as a user would), and from then on its polls and its buttons go through
// with the credentials the browser holds: a second challenge is refused,
// and the test fails on it.
func TestUIWorksBehindBasicAuth(t *testing.T) {
	ctx := newBrowser(t, 1280, 900)
	c := startCluster(t, "ui-auth")
	dir := t.TempDir()
	users := writeTemp(t, dir, "users.properties", "alice: s3cret-pw\n")
	jaas := writeTemp(t, dir, "connect.jaas", "KafkaConnect {\n  "+basicauth.LoginModule+" required\n  file=\""+users+"\";\n};\n")
	rest, bind := proctest.FreeAddr(t), proctest.FreeAddr(t)
	w := startProc(t, "worker-a1", nil, "worker", "--cluster", c.name, "--bootstrap", c.bootstrap, "--rest-addr", rest,
		"--worker-id", "a1", "--bind", bind,
		"--prop", "rest.extension.classes="+basicauth.ExtensionClass, "--prop", "java.security.auth.login.config="+jaas)
	authed := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, "http://"+rest+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("alice", "s3cret-pw")
		req.Header.Set("Content-Type", "application/json")
		res, err := httpClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	waitFor(t, w.FailIfExited, startDeadline, 200*time.Millisecond, "a1 healthy with credentials", func() (bool, string) {
		code, body := authed("GET", "/health", "")
		return code == http.StatusOK, body
	})
	if code, body := authed("POST", "/connectors", connectorJSON(t, "gen", map[string]string{
		"connector.class": "Datagen", "topic": c.topic("gen"), "tasks.max": "1", "records.per.second": "10"})); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, _, _ := send("GET", "http://"+rest+"/ui/state", ""); code != http.StatusUnauthorized {
		t.Fatalf("GET /ui/state without credentials: %d, want 401 as the REST API", code)
	}

	var challenges atomic.Int32
	go func() {
		for ev, err := range chromedp.Events(ctx, fetch.RequestPaused) {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	go func() {
		for ev, err := range chromedp.Events(ctx, fetch.AuthRequired) {
			if err != nil {
				return
			}
			answer := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
				Username: "alice", Password: "s3cret-pw"}
			if challenges.Add(1) > 1 {
				answer = &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
			}
			_, _ = chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: answer})
		}
	}()
	handle := true
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &handle}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+rest+"/ui")); err != nil {
		t.Fatal(err)
	}
	waitCards(t, ctx, "gen's task RUNNING on a1", allOn(1, "a1"))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`li[data-connector="gen"] button[aria-label="Pause connector gen"]`))); err != nil {
		t.Fatal(err)
	}
	waitCards(t, ctx, "gen's task PAUSED after the page's Pause", func(cards []card) bool {
		return len(cards) == 1 && cards[0].State == "PAUSED"
	})
	if n := challenges.Load(); n != 1 {
		t.Fatalf("the browser was challenged %d times, want once: the page's requests must reuse its credentials", n)
	}
}

// TestUITopShowsTheCluster: `sluice top` reaches a 2-worker cluster
// through the actor system and prints each task with its worker and
// records/s; -n refreshes that many times (one after another, not on a
// terminal) and -o json prints the cluster view.
func TestUITopShowsTheCluster(t *testing.T) {
	c, ws := startWorkers(t, "top", 2)
	createOn(t, ws[0].rest, "gen", map[string]string{
		"connector.class": "Datagen", "topic": c.topic("gen"), "tasks.max": "2", "records.per.second": "40",
	})
	place, _ := c.placement("gen", 2, []string{"w1", "w2"}, nil)
	a := admin{t: t, join: ws[1].bind, cluster: c.name}
	var last string
	waitFor(t, func() {}, stateDeadline, 500*time.Millisecond, "top shows both tasks measured", func() (bool, string) {
		last = a.must("top", "--once")
		rows := 0
		for _, line := range strings.Split(last, "\n") {
			f := strings.Fields(line)
			// CONNECTOR TASK STATE WORKER REC/S LAG TOTAL
			if len(f) == 7 && f[0] == "gen" && f[2] == "RUNNING" && f[4] != "-" && f[5] == "-" && f[6] != "-" {
				task := map[string]int{"0": 0, "1": 1}[f[1]]
				if f[3] != place[task] {
					return false, last
				}
				rows++
			}
		}
		return rows == 2, last
	})
	if !strings.Contains(last, "w1*") && !strings.Contains(last, "w2*") {
		t.Fatalf("no leader starred:\n%s", last)
	}

	out := a.must("top", "-n", "2", "--interval", "200ms")
	if n := strings.Count("\n"+out, "\n--- "); n != 2 {
		t.Fatalf("-n 2 printed %d refreshes, want 2:\n%s", n, out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Fatalf("top cleared a screen that is not a terminal:\n%q", out)
	}

	var v ui.View
	if err := json.Unmarshal([]byte(a.must("top", "--once", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Workers) != 2 || !v.Workers[0].Alive || !v.Workers[1].Alive || len(v.Connectors) != 1 || len(v.Connectors[0].Tasks) != 2 {
		t.Fatalf("top -o json: %+v, want 2 workers alive and gen's 2 tasks", v)
	}
	if code, _, errOut := a.run("top", "-n", "-1"); code != 2 || !strings.Contains(errOut, "-n") {
		t.Fatalf("top -n -1: exit %d, %s; want the usage error (2) naming -n", code, errOut)
	}
}
