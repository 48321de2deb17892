package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestReadmeTableListsEveryMetric keeps the README's metrics table and the
// collector in step: every family the collector describes is in the table,
// and the table names nothing it does not serve.
func TestReadmeTableListsEveryMetric(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "### Metrics")
	if start < 0 {
		t.Fatal("README has no ### Metrics section")
	}
	section := readme[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	row := regexp.MustCompile("(?m)^\\| `((?:kafka_connect|sluice)_[a-z_]+)` \\| (gauge|counter) \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = m[2]
	}

	ch := make(chan *prometheus.Desc, 256)
	collector{NewRegistry()}.Describe(ch)
	close(ch)
	nameOf := regexp.MustCompile(`fqName: "([^"]+)"`)
	var served []string
	for d := range ch {
		served = append(served, nameOf.FindStringSubmatch(d.String())[1])
	}
	for _, name := range served {
		if _, ok := documented[name]; !ok {
			t.Errorf("%s is served but not in the README's metrics table", name)
		}
	}
	for name := range documented {
		if !slices.Contains(served, name) {
			t.Errorf("the README's metrics table lists %s, which is not served", name)
		}
	}
	// The table's types match what is served.
	for _, m := range taskMetrics {
		name := nameOf.FindStringSubmatch(m.desc.String())[1]
		want := "gauge"
		if m.typ == prometheus.CounterValue {
			want = "counter"
		}
		if documented[name] != want {
			t.Errorf("README says %s is a %s, it is served as a %s", name, documented[name], want)
		}
	}
}
